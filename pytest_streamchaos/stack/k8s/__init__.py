"""A one-node Kubernetes for Spark on Kubernetes, built from the Go module proxy (issue 51).

Its binaries (:mod:`.build`: ``python -m pytest_streamchaos.prepare --for k8s``) and a cluster of them
(:class:`.cluster.Cluster`: etcd, the control plane, containerd and the kubelet on this host, a pod network on a
local bridge, and a teardown that leaves nothing, :mod:`.cleanup`). Spark does not run on it yet, so no cluster
manager names it. docs/kubernetes.md says what was measured.
"""
