"""A one-node Kubernetes for Spark on Kubernetes, built from the Go module proxy (issue 51).

Its binaries (:mod:`.build`) and the Spark image of the pods (:mod:`.spark_image`), both made by
``python -m pytest_streamchaos.prepare --k8s``; a cluster of them (:class:`.cluster.Cluster`: etcd, the control
plane, containerd and the kubelet on this host, a pod network on a local bridge, and a teardown that leaves
nothing, :mod:`.cleanup`); and Spark on it, the ``k8s`` cluster manager (:mod:`.spark`: ``spark-submit --master
k8s://`` in client mode, the executors as pods reaching the driver over the bridge and Kafka through
:mod:`.relay`, their events on the timeline by :mod:`.watcher`). docs/kubernetes.md says what was measured.
"""

from __future__ import annotations

from pytest_streamchaos.events import StrEnum


class K8sKind(StrEnum):
    """The timeline kinds of the job's pods (:mod:`.watcher`, the ``k8s`` manager's ``events``): here, in the
    package's face, so a fault family may record them without reaching the cluster's machinery."""

    K8S_POD_CREATED = "k8s_pod_created"
    K8S_POD_RUNNING = "k8s_pod_running"
    K8S_POD_TERMINATING = "k8s_pod_terminating"
    K8S_POD_ENDED = "k8s_pod_ended"
    K8S_POD_GONE = "k8s_pod_gone"
    K8S_EVENT = "k8s_event"
    #: ``@delete_pod``: a deleted executor pod's replacement Running (faults/families/kubernetes.py)
    EXECUTOR_POD_REPLACED = "executor_pod_replaced"
    #: ``@drain_node``: an evicted executor's replacement waiting for a node while the node is cordoned
    EXECUTOR_POD_PENDING = "executor_pod_pending"
    #: cluster mode: a new driver pod made by the driver's Job after the last one ended (stack/k8s/driver_job.py)
    DRIVER_POD_REPLACED = "driver_pod_replaced"


#: the kinds, as the manager's entry names them
KINDS = tuple(K8sKind)
