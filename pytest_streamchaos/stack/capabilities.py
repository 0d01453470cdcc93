"""What a cluster can do to itself, one small protocol per capability (as Jepsen's ``Kill``, ``Pause``,
``Primary``): a fault kind declares the ones it needs (``FaultKind.needs``), the run checks them when it is
planned -- before anything starts -- and a fault the session's cluster cannot serve is refused in one line
naming the fault, the cluster and the capability (:func:`missing`). A cluster class implements the ones it
can, and nothing else: no method raises "not supported here" at run time.

The Spark cluster's (:class:`~.base.SparkCluster`): :class:`WorkerKill`, :class:`WorkerPause`,
:class:`MasterKill`, :class:`MasterPause`, :class:`ActiveMaster`, :class:`ExecutorKill`,
:class:`ExecutorPause`, :class:`SubmittedDrivers`, :class:`ConnectServer`, :class:`ResourceManagerRestart`,
:class:`PodDelete`, :class:`PodEvict`, :class:`NodeDrain`, :class:`ExecutorOom`, :class:`HostLinks`.
The Kafka cluster's (:class:`~.base.KafkaCluster`): :class:`BrokerKill`, :class:`BrokerPause`,
:class:`PartitionLeaders`, :class:`BrokerIsolation`, :class:`KafkaLinks`, :class:`TopicAdmin`. The run's
HDFS's, what the HDFS faults act through: :class:`HdfsCluster`. ``docs/architecture.md`` lists who implements
which.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from pytest_streamchaos.stack.base import Endpoint, Executor, LinkProxy, Node, PartitionView
    from pytest_streamchaos.stack.driver.launcher import DriverSite


# -- the Spark cluster's --------------------------------------------------------------------------

@runtime_checkable
class WorkerKill(Protocol):
    """A worker's process (and everything it runs) killed, and started again."""

    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to worker ``i`` and everything it runs (its executors)."""
        ...

    def restart_worker(self, i: int) -> Node:
        """Start worker ``i`` again (after a kill); returns its handle."""
        ...

    def wait_gone(self, node: Node, timeout: float = 10.0) -> None:
        """Return once ``node`` (a master or worker handle) and all it ran are gone."""
        ...


@runtime_checkable
class WorkerPause(Protocol):
    """A worker and its executors frozen (SIGSTOP / ``docker pause``), and resumed."""

    def pause_worker(self, i: int, wait: bool = True) -> None:
        ...

    def resume_worker(self, i: int) -> None:
        ...

    def wait_paused(self, node: Node, timeout: float = 5.0) -> None:
        """Return once every process of ``node`` is frozen."""
        ...


@runtime_checkable
class MasterKill(Protocol):
    """A master's process killed (the active one by default), and started again."""

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> Node:
        """Send ``sig`` to master ``i`` (the active one when None)."""
        ...

    def restart_master(self, i: int) -> Node:
        ...

    def wait_gone(self, node: Node, timeout: float = 10.0) -> None:
        ...


@runtime_checkable
class MasterPause(Protocol):
    """A master frozen, and resumed."""

    def pause_master(self, i: int, wait: bool = True) -> None:
        ...

    def resume_master(self, i: int) -> None:
        ...

    def wait_paused(self, node: Node, timeout: float = 5.0) -> None:
        ...


@runtime_checkable
class ActiveMaster(Protocol):
    """Which master leads now (Jepsen's ``Primary``)."""

    def active_master(self) -> Node:
        """The master that leads now (the only one without HA)."""
        ...


@runtime_checkable
class ExecutorKill(Protocol):
    """One executor killed (its worker stays)."""

    def kill_executor(self, executor: Executor, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (SIGKILL or SIGTERM) to one executor the cluster handed out."""
        ...


@runtime_checkable
class ExecutorPause(Protocol):
    """One executor frozen, and resumed."""

    def pause_executor(self, executor: Executor) -> None:
        ...

    def resume_executor(self, executor: Executor) -> None:
        """Resume it (nothing when it is gone meanwhile)."""
        ...


@runtime_checkable
class SubmittedDrivers(Protocol):
    """The job's script is the query's driver (``spark-submit``): the run's job handle is the driver."""

    def driver_site(self) -> DriverSite:
        """Where this cluster's drivers are submitted from and to (what its launchers start them with)."""
        ...


@runtime_checkable
class ConnectServer(Protocol):
    """The job's script is a Spark Connect client; the query's driver is a Connect server the run starts."""

    # isinstance() reads a property member (Python 3.11): one here must be cheap and never raise

    @property
    def connect_port(self) -> int:
        """Where the Connect server listens (``sc://127.0.0.1:<port>``)."""
        ...


@runtime_checkable
class ResourceManagerRestart(Protocol):
    """YARN's ResourceManager killed and started again on its state store."""

    def kill_resourcemanager(self, sig: int = signal.SIGKILL) -> Node:
        ...

    def wait_resourcemanager_gone(self, timeout: float = 10.0) -> None:
        ...

    def restart_resourcemanager(self) -> Node:
        """Started again (not waited for: the NodeManagers' resync shows it back)."""
        ...


@runtime_checkable
class PodDelete(Protocol):
    """A pod deleted through the Kubernetes API server, as ``kubectl delete pod`` does; its controller (Spark's
    executor allocator) replaces it."""

    def executor_pods(self) -> Sequence[str]:
        """The executor pods of the running jobs, oldest first."""
        ...

    def delete_pod(self, name: str, grace: float | None = None) -> float:
        """``DELETE`` the pod (``grace``: its ``gracePeriodSeconds``, None: the pod's own); when it was asked."""
        ...

    def pod_gone(self, name: str) -> bool:
        """The pod no longer exists in the API server."""
        ...

    def replacement_pod(self, than: Sequence[str]) -> str | None:
        """An executor pod Running now that is none of ``than``."""
        ...


@runtime_checkable
class PodEvict(PodDelete, Protocol):
    """A pod evicted through the Eviction API (``policy/v1``), as a node-pressure eviction or ``kubectl drain``
    asks for one: its disruption budgets checked, the pod marked ``DisruptionTarget`` and deleted."""

    def evict_pod(self, name: str, grace: float | None = None) -> float:
        """``POST`` an Eviction of the pod (``grace``: its deletion's ``gracePeriodSeconds``); when it was asked."""
        ...

    def pod_disruption(self, name: str) -> str | None:
        """Why the API server marked the pod for disruption (``EvictionByEvictionAPI``), None if not (or gone)."""
        ...


@runtime_checkable
class NodeDrain(PodEvict, Protocol):
    """The node cordoned (``spec.unschedulable``) and its pods evicted, as ``kubectl drain``; uncordoned again."""

    def cordon(self, on: bool = True) -> None:
        """Cordon the node (``on``) or uncordon it."""
        ...

    def cordoned(self) -> bool:
        ...

    def pending_executor_pods(self) -> list[str]:
        """The executor pods waiting for a node (Pending, unscheduled)."""
        ...


class SqueezedContainer(Protocol):
    """A container :class:`ExecutorOom` squeezed: its pod, the limit it now has, what it measured there."""

    @property
    def pod(self) -> str:
        ...

    @property
    def limit(self) -> int:
        """The memory limit it was squeezed to, in bytes."""
        ...

    def detail(self) -> dict[str, object]:
        ...


@runtime_checkable
class ExecutorOom(PodDelete, Protocol):
    """An executor's container pushed over its memory limit, so that the kernel OOM-kills the executor inside
    it and Kubernetes reports the container ``OOMKilled``."""

    def squeeze_executor(self, name: str) -> SqueezedContainer:
        """Squeeze the pod's container to just above its usage and start an allocation in it."""
        ...

    def oom_state(self, sq: SqueezedContainer) -> tuple[int | None, dict[str, Any] | None]:
        """(OOM kills in the container's cgroup since the squeeze, None once it is gone; the container's end as
        the API server has it: ``reason``, ``exit_code``, None while it runs or once the pod is gone)."""
        ...

    def release(self, sq: SqueezedContainer) -> None:
        """End the allocation; a container that survived gets its limit back."""
        ...


@runtime_checkable
class HostLinks(Protocol):
    """The job's links where this host's network rules see them: iptables jumped to from ``INPUT`` on ``lo`` and tc
    on ``lo`` (the job's processes on this host, their connections marked by the job's group), or the same rules in
    the job's containers' namespaces (the docker backend). What a network fault acts through wherever it is no
    Toxiproxy toxic on the job's Kafka links. Kubernetes' cluster lacks it: its pods reach the driver over the
    cluster's bridge (never ``lo``), and the job's Kafka through the host's relay, whose connections are the
    harness's, not the job group's (docs/kubernetes.md)."""

    def host_links(self) -> str:
        """Where those rules see the job's links: ``loopback`` (with the job group's mark) or ``namespaces``."""
        ...


# -- the Kafka cluster's --------------------------------------------------------------------------

@runtime_checkable
class BrokerKill(Protocol):
    """A broker's process killed, and started again."""

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to the broker's process (SIGKILL: a lost machine)."""
        ...

    def wait_gone(self, broker_id: int, timeout: float = 15.0) -> None:
        ...

    def restart_broker(self, broker_id: int, wait: bool = True) -> None:
        ...

    def alive_brokers(self) -> list[int]:
        """The brokers whose process runs."""
        ...


@runtime_checkable
class BrokerPause(Protocol):
    """A broker frozen: connections open, nothing answers; and resumed."""

    def pause_broker(self, broker_id: int, wait: bool = True) -> None:
        ...

    def wait_paused(self, broker_id: int, timeout: float = 5.0) -> None:
        ...

    def resume_broker(self, broker_id: int) -> None:
        ...


@runtime_checkable
class PartitionLeaders(Protocol):
    """Which broker leads a partition, and which follow it (the broker faults' roles)."""

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 10.0) -> int:
        """The broker id leading ``topic``/``partition`` now."""
        ...

    def followers_of(self, topic: str, partition: int = 0) -> list[int]:
        """The in-sync replicas of ``topic``/``partition`` other than its leader."""
        ...


@runtime_checkable
class BrokerIsolation(Protocol):
    """A broker cut from its peers, its clients kept: the ports only the brokers use, and the mark on the
    connections a broker opens."""

    def peer_ports(self, broker_id: int) -> list[int]:
        """The ports only the brokers use to reach this one (replication, the KRaft quorum)."""
        ...

    def node_mark(self, broker_id: int) -> tuple[int, int] | None:
        """(mark, mask) of the conntrack mark on every connection the broker opens; None where the host
        cannot mark them."""
        ...


@runtime_checkable
class KafkaLinks(Protocol):
    """The job's links to the brokers, where a network fault acts: their proxies, or the brokers' ports."""

    def job_links(self, broker_ids: list[int] | None = None) -> Sequence[LinkProxy]:
        """The proxies of the job's links to these brokers (all when None); [] when there are none (the
        faults act on the brokers' job ports then)."""
        ...

    def endpoints(self) -> list[Endpoint]:
        """Every broker with the ports the job and its peers connect to."""
        ...


@runtime_checkable
class TopicAdmin(Protocol):
    """Kafka's own operations on a topic (the topic faults), through its admin API."""

    def partition_views(self, topic: str) -> Sequence[Mapping[int, PartitionView] | None]:
        """``topic``'s partitions as each broker's own metadata shows them now."""
        ...

    def topic_offsets(self, topic: str) -> Mapping[int, tuple[int, int]] | None:
        """(log start offset, end offset) of each partition of ``topic`` (None: no such topic)."""
        ...

    def add_partitions(self, topic: str, total: int) -> None:
        ...

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        ...

    def reassign_partitions(self, topic: str, replicas: Mapping[int, Sequence[int]]) -> str:
        ...

    def elect_preferred_leaders(self, topic: str, partitions: Sequence[int]) -> None:
        ...

    def reassignment_refused(self) -> str | None:
        """Why partitions cannot be reassigned from here (Kafka's tool could not be fetched), or None."""
        ...

    def administration_refused(self, operations: Sequence[str]) -> str | None:
        """Why this client may not perform ``operations`` (ACL operation names), or None."""
        ...


# -- the run's HDFS's (a checkpoint on HDFS) -------------------------------------------------------

class _NodeStates(Protocol):
    @property
    def dead(self) -> Sequence[str]:
        """The DataNodes the NameNode has declared dead (``datanode-<i>``)."""
        ...


#: a backend's own node class (what its HDFS hands out and takes back)
# -- the job's (what a fault asks of ``ctx.job`` beyond stack/base.py's JobHandle) -----------------------------

@runtime_checkable
class DriverPods(Protocol):
    """A job whose driver is a pod a controller recreates (the ``k8s`` manager's cluster mode)."""

    @property
    def job_name(self) -> str:
        """The Kubernetes Job's name (its pods are the driver's launches)."""

    def driver_pods(self) -> list[str]: ...

    def delete_driver_pod(self, grace: float | None = None) -> tuple[str, float]: ...

    def running_driver(self, than: Sequence[str] = ()) -> str | None: ...


#: the job's capabilities: a job handle implements those its deployment has
JOB_CAPS: tuple[type, ...] = (DriverPods,)


N = TypeVar("N", bound="Node")


@runtime_checkable
class HdfsCluster(Protocol[N]):
    """The stack's HDFS (``stack.hdfs.cluster.LocalHdfsCluster``) as the HDFS faults use it: the nodes it hands
    out (``N``) are what its ``wait_gone`` / ``wait_paused`` take back."""

    @property
    def namenode(self) -> N:
        ...

    @property
    def datanodes(self) -> Sequence[N]:
        ...

    @property
    def dead_after_s(self) -> float:
        """Seconds without heartbeats until the NameNode declares a DataNode dead."""
        ...

    def state(self) -> _NodeStates:
        ...

    def out_of_safemode(self) -> bool:
        ...

    def datanode_registered(self, i: int) -> bool:
        ...

    def kill_namenode(self, sig: int = signal.SIGKILL, wait: bool = True) -> N:
        ...

    def restart_namenode(self, wait: bool = True, timeout: float | None = None) -> N:
        ...

    def pause_namenode(self, wait: bool = True) -> None:
        ...

    def resume_namenode(self) -> None:
        ...

    def kill_datanode(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> N:
        ...

    def restart_datanode(self, i: int, wait: bool = True, timeout: float | None = None) -> N:
        ...

    def wait_gone(self, node: N, timeout: float = 10.0) -> None:
        ...

    def wait_paused(self, node: N, timeout: float = 5.0) -> None:
        ...


@dataclass(frozen=True)
class Need:
    """What a capability is and how a test gets it, for the one-line refusal."""

    what: str
    fix: str
    kafka: bool = False  #: a capability of the Kafka cluster (else of the Spark cluster)


_PLUGIN_SPARK = ("run the test on a cluster the plugin starts (Spark standalone, or YARN's mini cluster: no "
                 "--chaos-yarn-conf)")
_PLUGIN_KAFKA = "run the test on the Kafka the plugin starts (without --chaos-kafka-bootstrap)"
_ON_K8S = "run the test on Kubernetes (@pytest.mark.chaos(spark='k8s') or --chaos-spark=k8s; docs/kubernetes.md)"

#: every capability, what it is and the fix when the cluster lacks it
NEEDS: dict[type, Need] = {
    WorkerKill: Need("kill and restart a worker's process", _PLUGIN_SPARK),
    WorkerPause: Need("freeze and resume a worker's processes", "run the test on Spark standalone"),
    MasterKill: Need("kill and restart a master's process", _PLUGIN_SPARK),
    MasterPause: Need("freeze and resume a master's process", "run the test on Spark standalone"),
    ActiveMaster: Need("name the master that leads now", _PLUGIN_SPARK),
    ExecutorKill: Need("kill one executor", "run the test on Spark standalone or YARN"),
    ExecutorPause: Need("freeze and resume one executor; YARN's API kills a container but cannot freeze one",
                        "pause the driver, or run the test on Spark standalone"),
    SubmittedDrivers: Need("the job's script as the query's driver, where Spark Connect makes it a server's client",
                           "use @kill_connect_server (the driver) or @kill_client (the script's process)"),
    ConnectServer: Need("a Spark Connect server the job's script is a client of",
                        "run the test with @pytest.mark.chaos(spark='connect') or --chaos-spark=connect "
                        "(spark='connect-yarn': on YARN)"),
    ResourceManagerRestart: Need("kill and restart YARN's ResourceManager process",
                                 "run the test on YARN's mini cluster (@pytest.mark.chaos(spark='yarn'), no "
                                 "--chaos-yarn-conf); on Spark standalone kill_master is the master's loss"),
    PodDelete: Need("delete a pod through the Kubernetes API server",
                    "run the test on Kubernetes (@pytest.mark.chaos(spark='k8s') or --chaos-spark=k8s; "
                    "docs/kubernetes.md); elsewhere kill_executor is an executor's loss"),
    PodEvict: Need("evict a pod through the Kubernetes Eviction API", _ON_K8S),
    NodeDrain: Need("cordon the Kubernetes node and evict its pods", _ON_K8S),
    ExecutorOom: Need("push an executor pod's container over its memory limit (cgroup v1 on the node's host)",
                      _ON_K8S),
    HostLinks: Need("this host's network rules on the job's links (iptables and tc on the loopback, or in the job's "
                    "containers' namespaces); Kubernetes' pods reach the driver over the cluster's bridge, which those "
                    "rules never see, and the job's Kafka through the host's relay, whose connections are not the "
                    "job's; its worker is the node's kubelet and it has no master",
                    "on Kubernetes fault the job's Kafka links through Toxiproxy: network_delay, network_partition or "
                    "bandwidth_limit with target='kafka' or 'broker-<i>' (packet_loss is iptables there too); or run "
                    "the test on Spark standalone (spark='standalone')"),
    BrokerKill: Need("kill and restart a broker's process", _PLUGIN_KAFKA, kafka=True),
    BrokerPause: Need("freeze and resume a broker's process", _PLUGIN_KAFKA, kafka=True),
    PartitionLeaders: Need("name a partition's leader and followers", _PLUGIN_KAFKA, kafka=True),
    BrokerIsolation: Need("cut a broker from its peers (their ports, its connections' mark)", _PLUGIN_KAFKA,
                          kafka=True),
    KafkaLinks: Need("the job's links to the brokers (a proxy between the job and brokers the plugin started)",
                     _PLUGIN_KAFKA, kafka=True),
    TopicAdmin: Need("Kafka's admin operations on a topic", _PLUGIN_KAFKA, kafka=True),
}


def refusal(fault: str, cluster: str, cap: type) -> str:
    """The one line a fault the cluster cannot serve is refused with (``cluster``: its manager, its class); a
    capability a cluster manager brings of its own (not in :data:`NEEDS`) says what it is by its docstring."""
    need = NEEDS.get(cap) or Need((cap.__doc__ or cap.__name__).strip().split("\n")[0].rstrip("."),
                                  "run the test on a cluster manager that has it")
    return f"{fault} cannot run on {cluster}: it needs {cap.__name__} ({need.what}), which that cluster lacks; " \
           f"fix: {need.fix}"


# -- the run's object store (a checkpoint or tables on S3) ----------------------------------------------------

@runtime_checkable
class RefusalRule(Protocol):
    """A share of the job's S3 requests refused by the store's proxy (``stack.s3.proxy.ErrorRule``)."""

    def summary(self) -> dict[str, Any]:
        """What it refused and what the client did next, by operation, as plain data."""
        ...


@runtime_checkable
class ObjectStoreService(Protocol):
    """The stack's object store (``stack.s3.store.ObjectStore``) as the S3 faults use it: the store's process,
    the job's way in (the proxy that refuses or holds requests, the Toxiproxy proxy of its link)."""

    @property
    def alive(self) -> bool:
        ...

    @property
    def link(self) -> LinkProxy | None:
        """The Toxiproxy proxy on the job's link to the store, None without Toxiproxy."""
        ...

    @property
    def link_reason(self) -> str | None:
        """Why there is no :attr:`link`."""
        ...

    @property
    def endpoint(self) -> str:
        """The store's own S3 endpoint (the harness's)."""
        ...

    @property
    def job_endpoint(self) -> str:
        """The endpoint the job is given (through the proxy and the link)."""
        ...

    def answers(self) -> bool:
        """Whether its S3 gateway answers now."""
        ...

    def kill(self, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        ...

    def wait_gone(self, timeout: float = 10.0) -> None:
        ...

    def restart(self, wait: bool = True, timeout: float | None = None) -> None:
        ...

    def refuse(self, status: int, ops: Sequence[str], rate: float, code: str = "", seed: int = 0) -> RefusalRule:
        """From now on, refuse ``rate`` of the job's requests of ``ops`` with ``status``."""
        ...

    def allow(self, rule: RefusalRule) -> None:
        """Stop refusing by ``rule``."""
        ...
