"""The stack interface. Backends (``local`` processes, ``docker`` containers; a cluster manager such as
YARN) implement it, so tests, faults and the runner do not change when the backend does.

A *target* is anything a fault can hit: a Spark master or worker, an executor, the driver, a broker.
Local targets are process groups; container targets are containers. The faults and the runner use only
the methods here; a backend implements them (the ones it lacks fail the fault that needs them, naming
the method).

What the clusters hand out is typed by the protocols below, so the faults and the runner need nothing of
a backend's own classes: :class:`Node` (a master, worker or broker), :class:`Executor`, :class:`Launcher`
(what starts the user's job on a cluster, from a :class:`SparkApp`) and :class:`JobHandle` (the running
job, its driver; under Spark Connect a :class:`ConnectSession`, the client of a server),
:class:`CheckpointView` (the query's checkpoint as the aimed faults and the drain read it),
:class:`HdfsCluster`, and for network faults :class:`LinkScope` (whose connections a fault on this host acts
on, as Jepsen's ``Net``) and :class:`LinkProxy` (a proxy on one of the job's links).
"""

from __future__ import annotations

import abc
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, runtime_checkable

from pytest_streamchaos.stack.errors import NetFaultError, StackError  # noqa: F401  (the stack's errors, re-exported)

if TYPE_CHECKING:
    from pytest_streamchaos.observe.progress import SparkProgress
    from pytest_streamchaos.records import TimelineEvent


@dataclass
class Endpoint:
    """One running stack component as faults and network rules see it."""

    name: str  #: e.g. ``master-0``, ``worker-1``, ``broker-2``, ``driver``
    role: str  #: ``master`` | ``worker`` | ``broker`` | ``driver`` | ``zookeeper``
    host: str = "127.0.0.1"
    ports: dict[str, int] = field(default_factory=dict)  #: e.g. {"rpc": 7077, "webui": 8080}


# -- what the clusters hand out --------------------------------------------------------------------

@runtime_checkable
class Node(Protocol):
    """One node of a cluster as a fault target: a Spark master or worker, a Kafka or HDFS node."""

    @property
    def name(self) -> str:
        """``master-0``, ``worker-1``, ``broker-2`` ..."""
        ...

    @property
    def alive(self) -> bool:
        """Its process (container) is running; paused counts as alive."""
        ...

    def endpoint(self) -> Endpoint:
        """Where its peers reach it (the ports a network fault on it acts on)."""
        ...


@runtime_checkable
class Executor(Protocol):
    """One Spark executor as a fault target (its ``str()`` names it in messages)."""

    @property
    def id(self) -> str:
        """A name for messages and the timeline (the executor id, or its process id)."""
        ...

    @property
    def pid(self) -> int | None:
        """Its JVM's process id on this host (None where it has none here, e.g. a YARN container elsewhere)."""
        ...

    @property
    def alive(self) -> bool:
        ...

    @property
    def state(self) -> str | None:
        """``running``, ``stopped`` (paused) ..., or None once it is gone."""
        ...

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the executor (SIGKILL / SIGTERM to kill, SIGSTOP / SIGCONT to pause)."""
        ...


#: what :meth:`SparkCluster.executors` hands out and :meth:`~SparkCluster.signal_executor` /
#: :meth:`~SparkCluster.executor_state` take back (the name the faults know it by)
ExecutorRef: TypeAlias = Executor


@dataclass(frozen=True)
class SparkApp:
    """A PySpark application as the user gave it, checked and resolved (``spark.launcher`` builds it): what
    a :class:`Launcher` starts. Where it runs -- the master, the driver's address, its directories -- is the
    launcher's."""

    script: Path  #: the job's script (absolute, an existing ``.py``)
    name: str
    args: tuple[str, ...] = ()  #: its own command-line arguments
    conf: Mapping[str, str] = field(default_factory=dict)  #: Spark conf over the launcher's defaults
    env: Mapping[str, str] = field(default_factory=dict)  #: the driver's extra environment
    jars: tuple[Path, ...] = ()  #: first on every JVM's class path (Spark's Kafka connector)
    files: tuple[Path, ...] = ()  #: data files, as ``--files``, also copied into the driver's working directory
    py_files: tuple[Path, ...] = ()  #: Python files and package folders, as ``--py-files``
    deploy_mode: str = "client"
    notes: tuple[str, ...] = ()  #: what was changed about the job, one line each (a connector pin replaced)


@dataclass(frozen=True)
class LaunchOptions:
    """How a launcher starts drivers: ``java_home`` (default: $JAVA_HOME, else java on PATH), ``jit``
    (``quick``: C1 only, or ``full``), ``python`` (default: this interpreter)."""

    java_home: str | None = None
    jit: str = "quick"
    python: str | None = None


@dataclass
class Launch:
    """One start of a job's driver."""

    number: int
    started_at: float
    pid: int | None
    ended_at: float | None = None
    returncode: int | None = None
    app_id: str | None = None


@runtime_checkable
class JobHandle(Protocol):
    """The user's running streaming job (on this host: ``stack.driver.job.SparkJob``), as the runner and the
    faults drive it: its driver, launched any number of times from one command, and what it leaves
    behind (its log, its event log's progress, its launches)."""

    @property
    def name(self) -> str:
        ...

    @property
    def script(self) -> Path:
        ...

    @property
    def args(self) -> Sequence[str]:
        """The job's own command-line arguments (after its script)."""
        ...

    @property
    def workdir(self) -> Path:
        """The driver's working directory (the job's relative paths land here)."""
        ...

    @property
    def log_path(self) -> Path:
        """The driver's log, every launch appended."""
        ...

    @property
    def event_log_dir(self) -> Path:
        """Where the driver writes Spark's event log (the run reads the query's progress there)."""
        ...

    @property
    def effective_conf(self) -> Mapping[str, str]:
        """Every ``--conf`` the driver was started with (``spark.driver.port`` ...)."""
        ...

    @property
    def notes(self) -> Sequence[str]:
        """What the launcher changed about the job, one line each."""
        ...

    @property
    def launches(self) -> Sequence[Launch]:
        ...

    @property
    def timeline(self) -> Sequence[TimelineEvent]:
        """``driver_launched`` / ``driver_killed`` / ``driver_stopped``, stamped when they happened."""
        ...

    @property
    def progress(self) -> SparkProgress:
        """Its Spark progress from the event log (every launch); ``poll()`` it."""
        ...

    @property
    def pid(self) -> int | None:
        """The driver's pid (None before the first launch, or where it runs elsewhere)."""
        ...

    @property
    def alive(self) -> bool:
        ...

    @property
    def returncode(self) -> int | None:
        """The driver's exit code once it exited, else None."""
        ...

    def start(self) -> JobHandle:
        """Launch the driver (a new launch)."""
        ...

    def kill(self, timeout: float = 15.0, wait: bool = True) -> None:
        """SIGKILL the driver's whole group (JVM and Python children); ``wait``: until reaped."""
        ...

    def wait_gone(self, timeout: float = 15.0) -> None:
        ...

    def restart(self, timeout: float = 30.0) -> JobHandle:
        """Launch the driver again (same script, conf and checkpoint)."""
        ...

    def pause(self, wait: bool = True) -> None:
        """SIGSTOP the driver's group."""
        ...

    def wait_paused(self, timeout: float = 5.0) -> None:
        ...

    def resume(self) -> None:
        ...

    def stop(self, timeout: float = 30.0) -> None:
        ...

    def tail_log(self, n: int = 40) -> str:
        ...

    def last_error(self) -> str | None:
        """The exception line the current launch's driver died of (its last Python traceback), or None."""
        ...


@runtime_checkable
class ConnectSession(JobHandle, Protocol):
    """A job under Spark Connect (``stack.connect.job.ConnectJob``): as a :class:`JobHandle` it is the client
    (the job's own Python process); the query's driver is the Connect server, which the Connect faults kill and
    restart, and whose ``foreachBatch`` workers they find."""

    @property
    def server_alive(self) -> bool:
        ...

    def kill_server(self, wait: bool = True) -> None:
        """SIGKILL the server's group (its JVM and Python workers): the query dies with it."""
        ...

    def server_wait_gone(self, timeout: float = 15.0) -> None:
        ...

    def restart_server(self, wait: bool = True) -> None:
        """Start the server again on the same address; ``wait``: until it listens."""
        ...

    def foreach_batch_workers(self) -> list[int]:
        """The pids of the server's Python workers running a ``foreachBatch`` function now."""
        ...

    def signal_foreach_batch_worker(self, pid: int, sig: int = signal.SIGKILL) -> None:
        ...


@runtime_checkable
class Launcher(Protocol):
    """Starts the user's jobs on one cluster (``SparkCluster.launcher``): builds a :class:`JobHandle` from
    a :class:`SparkApp` without starting it."""

    @property
    def defaults(self) -> Mapping[str, str]:
        """The Spark conf every job gets under its own."""
        ...

    def prepare(self, app: SparkApp) -> JobHandle:
        ...

    def stop_all(self, timeout: float = 30.0) -> None:
        """Stop every job it started."""
        ...


@runtime_checkable
class CheckpointView(Protocol):
    """A streaming query's checkpoint (``observe.checkpoints.CheckpointWatcher``): batch N is planned once
    ``offsets/N`` is written and done once ``commits/N`` is. The aimed faults read it; the checkpoint faults
    damage its files (``parts``: a path below the checkpoint, e.g. ``("commits", "12")``)."""

    @property
    def checkpoint_dir(self) -> str:
        """Where it is (a path or an ``hdfs://`` URL), for messages."""
        ...

    def latest_committed_batch(self) -> int | None:
        ...

    def uncommitted_batch(self) -> int | None:
        """The planned batch not committed yet, or None."""
        ...

    def planned_time(self, batch_id: int) -> float | None:
        """When ``offsets/<batch_id>`` was written (epoch seconds), or None."""
        ...

    def commit_time(self, batch_id: int) -> float | None:
        ...

    def offsets(self, batch_id: int) -> dict[str, Any] | None:
        """The source offsets batch ``batch_id`` was planned with (``{"metadata", "sources"}``), or None."""
        ...

    def starting_offsets_written(self) -> bool:
        """The query's sources fixed where they start (its initial offsets), or a batch was planned."""
        ...

    def names(self, *parts: str) -> list[str]:
        """The names in a directory of the checkpoint (hidden ``.tmp`` / ``.crc`` files too; [] when absent)."""
        ...

    def size(self, *parts: str) -> int | None:
        """The size in bytes of a file of the checkpoint, None when it is not there."""
        ...

    def remove(self, *parts: str) -> None:
        """Delete a file of the checkpoint (nothing when it is not there)."""
        ...

    def write(self, *parts: str, data: bytes) -> None:
        """Write a file of the checkpoint with ``data`` (replacing it: a truncation keeps its first bytes)."""
        ...

    def read(self, *parts: str) -> bytes | None:
        """A file of the checkpoint's bytes, None when it is not there."""
        ...


@runtime_checkable
class LinkScope(Protocol):
    """Whose connections a network fault on this host acts on (Jepsen's ``Net`` of a backend): the
    job's, told apart by a connection mark, or all on the link's ports when the host cannot tell."""

    def job_mark(self) -> tuple[int, int] | None:
        """(mark, mask) of the connections the job's processes open; None when they are not marked."""
        ...

    def unscoped_reason(self) -> str:
        """Why :meth:`job_mark` is None (for the run's report and fault errors)."""
        ...


class _Exited(Protocol):
    @property
    def returncode(self) -> int | None:
        ...


class _Serving(Protocol):
    """The server behind a :class:`LinkProxy` (its toxics die with it)."""

    @property
    def alive(self) -> bool:
        ...

    @property
    def pid(self) -> int:
        ...

    @property
    def proc(self) -> _Exited:
        ...


@runtime_checkable
class LinkProxy(Protocol):
    """A proxy on one of the job's links (``stack.toxiproxy.ToxiProxy``): faults add toxics to it or
    disable it; only connections through it are touched."""

    @property
    def name(self) -> str:
        ...

    @property
    def listen_port(self) -> int:
        """Where the job's clients connect (the link's port)."""
        ...

    @property
    def upstream(self) -> str:
        """Where the proxy forwards to (``host:port``)."""
        ...

    @property
    def server(self) -> _Serving:
        """The proxy server (a dead one takes the toxics with it)."""
        ...

    def info(self) -> dict[str, Any]:
        """The proxy as the server has it (``enabled``, ``toxics`` ...)."""
        ...

    def add_toxic(self, kind: str, stream: str = "downstream", attributes: dict[str, Any] | None = None,
                  toxicity: float = 1.0, name: str | None = None) -> Any:
        ...

    def remove_toxic(self, name: str) -> None:
        ...

    def disable(self) -> None:
        ...

    def enable(self) -> None:
        ...


class PartitionView(Protocol):
    """One partition as the cluster's metadata reports it (``stack.kraft.admin.PartitionState``)."""

    @property
    def leader(self) -> int:
        """The leading broker's id, -1 while it has none."""
        ...

    @property
    def replicas(self) -> tuple[int, ...]:
        ...

    @property
    def isr(self) -> tuple[int, ...]:
        """The in-sync replicas."""
        ...


class _NodeStates(Protocol):
    @property
    def dead(self) -> Sequence[str]:
        """The DataNodes the NameNode has declared dead (``datanode-<i>``)."""
        ...


#: a backend's own node class (what its HDFS hands out and takes back)
N = TypeVar("N", bound=Node)


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


class SparkCluster(abc.ABC):
    """A Spark cluster: the standalone one (one or two masters, HA with ZooKeeper; N workers) on the
    ``local`` or ``docker`` placement, or another cluster manager."""

    @property
    def master_url(self) -> str:
        """Where drivers submit to: ``spark://127.0.0.1:PORT`` (``spark://h:p1,h:p2`` in HA mode)."""
        raise _missing(self, "master_url")

    @property
    def manager(self) -> str:
        """The cluster manager the job runs on: a name of :data:`pytest_streamchaos.managers.MANAGERS`."""
        return "standalone"

    @property
    def effective_conf(self) -> Mapping[str, str]:
        """The cluster's own settings (``spark.worker.timeout`` ...), as its daemons were started with them."""
        return {}

    @property
    def host_access(self) -> bool:
        """Whether the plugin runs this cluster's daemons (and can kill or pause them); False for a cluster it
        attached to, whose API is all it may use."""
        return True

    @property
    def driver_host(self) -> str:
        """The address a driver on this host binds so that the cluster's executors reach it."""
        return "127.0.0.1"

    @property
    def link_scope(self) -> LinkScope:
        """Whose connections a network fault on this host acts on (the job's, by the job group's mark,
        where the host has one)."""
        raise _missing(self, "link_scope")

    @property
    @abc.abstractmethod
    def workers(self) -> Sequence[Node]:
        """The workers, indexable by position."""

    @property
    @abc.abstractmethod
    def masters(self) -> Sequence[Node]:
        """The masters (one, or two in HA mode)."""

    @abc.abstractmethod
    def wait_for_workers(self, k: int, timeout: float = 60.0) -> None:
        """Block until the (active) master reports at least ``k`` ALIVE workers; raise
        ``TimeoutError`` naming what was seen otherwise."""

    @abc.abstractmethod
    def heal(self, timeout: float = 60.0) -> None:
        """Bring the cluster back to its configured shape (restart dead, resume paused processes)."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop everything this cluster started. Idempotent."""

    # -- what the faults and the runner do to the cluster (one method per operation) --------------
    # Not abstract: a backend that lacks one fails the fault that needs it, naming the method.
    def endpoints(self) -> list[Endpoint]:
        """Every node with the ports its peers connect to (masters, workers, ZooKeeper)."""
        raise _missing(self, "endpoints")

    def active_master(self) -> Node:
        """The master that leads now (the only one without HA)."""
        raise _missing(self, "active_master")

    def alive_workers(self) -> list[dict[str, Any]]:
        """The active master's ALIVE workers (its JSON rows: ``host``, ``port``, ...)."""
        raise _missing(self, "alive_workers")

    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to worker ``i`` and everything it runs (its executors)."""
        raise _missing(self, "kill_worker")

    def restart_worker(self, i: int) -> Node:
        """Start worker ``i`` again (after a kill); returns its handle."""
        raise _missing(self, "restart_worker")

    def pause_worker(self, i: int, wait: bool = True) -> None:
        """Freeze worker ``i`` and its executors (SIGSTOP / ``docker pause``)."""
        raise _missing(self, "pause_worker")

    def resume_worker(self, i: int) -> None:
        raise _missing(self, "resume_worker")

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> Node:
        """Send ``sig`` to master ``i`` (the active one when None)."""
        raise _missing(self, "kill_master")

    def restart_master(self, i: int) -> Node:
        raise _missing(self, "restart_master")

    def pause_master(self, i: int, wait: bool = True) -> None:
        raise _missing(self, "pause_master")

    def resume_master(self, i: int) -> None:
        raise _missing(self, "resume_master")

    def wait_gone(self, node: Node, timeout: float = 10.0) -> None:
        """Return once ``node`` (a master or worker handle) and all it ran are gone."""
        raise _missing(self, "wait_gone")

    def wait_paused(self, node: Node, timeout: float = 5.0) -> None:
        """Return once every process of ``node`` is frozen."""
        raise _missing(self, "wait_paused")

    def executors(self, i: int) -> Sequence[ExecutorRef]:
        """Handles of the executors worker ``i`` runs now (empty when none)."""
        raise _missing(self, "executors")

    def signal_executor(self, executor: ExecutorRef, sig: int) -> None:
        """Send ``sig`` to one executor (SIGKILL/SIGTERM to kill, SIGSTOP/SIGCONT to pause)."""
        raise _missing(self, "signal_executor")

    def link_sides(self) -> list[tuple[str, str]]:
        """The network namespaces the job's side of a link lives in, as (node name, the network-namespace
        file of a process in it, ``/proc/<pid>/ns/net``): a network fault acts there. [] when the job
        shares this host's namespace (the local backend, where :attr:`link_scope` tells its connections
        apart)."""
        raise _missing(self, "link_sides")

    def executor_state(self, executor: ExecutorRef) -> str | None:
        """``running``, ``stopped`` (paused) ..., or None once the executor is gone."""
        raise _missing(self, "executor_state")

    def app_executors(self, app_id: str) -> Sequence[Executor]:
        """The executors application ``app_id`` runs now, wherever they are (the cluster's own knowledge)."""
        raise _missing(self, "app_executors")

    # -- what the runner starts on the cluster ----------------------------------------------------
    def launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> Launcher:
        """What starts the user's jobs on this cluster (their drivers, directories under ``workdir``)."""
        raise _missing(self, "launcher")


def _missing(backend: object, method: str) -> NotImplementedError:
    return NotImplementedError(f"the {type(backend).__name__} backend does not implement {method}() of the "
                               "stack interface (stack/base.py), so the fault that needs it cannot run")


class KafkaCluster(abc.ABC):
    """A Kafka cluster of N brokers (real Apache Kafka, KRaft) with broker-level fault controls.

    Two ways in: :attr:`bootstrap_servers` for the harness (generator, collector, admin), which no
    fault on the job's links touches, and :attr:`job_bootstrap_servers` for the job, whose links
    network faults act on."""

    @property
    def bootstrap_servers(self) -> str:
        """The harness's listeners, ``host:port,host:port,...``."""
        raise _missing(self, "bootstrap_servers")

    @property
    def broker_ids(self) -> list[int]:
        raise _missing(self, "broker_ids")

    @property
    def effective_conf(self) -> Mapping[str, str]:
        """The settings the brokers run with (failure detection, replication), for the run's JSON."""
        return {}

    @property
    def link_scope(self) -> LinkScope:
        """Whose connections a network fault on this host acts on (the job's, by the job group's mark,
        where the host has one)."""
        raise _missing(self, "link_scope")

    @property
    def host_access(self) -> bool:
        """Whether the plugin runs these brokers (and can kill, pause or isolate them, and proxy the job's
        links to them); False for a Kafka it attached to by its bootstrap address."""
        return True

    @property
    def job_bootstrap_servers(self) -> str:
        """Where the job's clients bootstrap (through the job's links); the harness listeners when
        the stack has no separate job links."""
        return self.bootstrap_servers

    @abc.abstractmethod
    def create_topic(self, name: str, partitions: int = 1, replication: int | None = None,
                     config: dict[str, str] | None = None) -> str:
        """Create exactly ``name`` with ``partitions`` partitions (an existing one is deleted first)."""

    @abc.abstractmethod
    def heal(self, timeout: float | None = None) -> None:
        """Every broker up and in sync, no fault left on the job's links."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the cluster. Idempotent."""

    # -- what the faults and the runner do to the brokers ----------------------------------------

    def delete_topic(self, name: str) -> None:
        raise _missing(self, "delete_topic")

    def reset(self) -> None:
        """Delete every topic (a fresh cluster for the next test)."""
        raise _missing(self, "reset")

    def endpoints(self) -> list[Endpoint]:
        """Every broker with the ports the job and its peers connect to."""
        raise _missing(self, "endpoints")

    def partition_states(self, topic: str) -> Mapping[int, PartitionView] | None:
        """Leader, replicas and ISR of each partition of ``topic``."""
        raise _missing(self, "partition_states")

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 10.0) -> int:
        """The broker id leading ``topic``/``partition`` now."""
        raise _missing(self, "leader_of")

    def followers_of(self, topic: str, partition: int = 0) -> list[int]:
        """The in-sync replicas of ``topic``/``partition`` other than its leader."""
        raise _missing(self, "followers_of")

    def controller_id(self) -> int | None:
        """The active controller's node id (KRaft)."""
        raise _missing(self, "controller_id")

    def alive_brokers(self) -> list[int]:
        raise _missing(self, "alive_brokers")

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to the broker's process (SIGKILL: a lost machine)."""
        raise _missing(self, "kill_broker")

    def wait_gone(self, broker_id: int, timeout: float = 15.0) -> None:
        raise _missing(self, "wait_gone")

    def restart_broker(self, broker_id: int, wait: bool = True) -> None:
        raise _missing(self, "restart_broker")

    def pause_broker(self, broker_id: int, wait: bool = True) -> None:
        """Freeze the broker (SIGSTOP / ``docker pause``): connections open, nothing answers."""
        raise _missing(self, "pause_broker")

    def wait_paused(self, broker_id: int, timeout: float = 5.0) -> None:
        raise _missing(self, "wait_paused")

    def resume_broker(self, broker_id: int) -> None:
        raise _missing(self, "resume_broker")

    def broker_state(self, broker_id: int) -> str | None:
        """``running``, ``paused``, or None when the broker's process is gone."""
        raise _missing(self, "broker_state")

    def registered_brokers(self) -> list[int]:
        """The brokers the cluster's metadata lists now (a fenced one is missing)."""
        raise _missing(self, "registered_brokers")

    def peer_ports(self, broker_id: int) -> list[int]:
        """The ports only the brokers use to reach this one (replication, the KRaft quorum)."""
        raise _missing(self, "peer_ports")

    def node_mark(self, broker_id: int) -> tuple[int, int] | None:
        """(mark, mask) of the conntrack mark on every connection the broker opens, so that a cut can
        tell its own connections from its peers'; None where the host cannot mark them."""
        raise _missing(self, "node_mark")

    # -- Kafka's own operations on a topic (the topic faults), through its admin API ------------------
    @property
    def replication(self) -> int:
        """The replication factor of the topics it creates when none is asked for."""
        raise _missing(self, "replication")

    def partition_views(self, topic: str) -> Sequence[Mapping[int, PartitionView] | None]:
        """``topic``'s partitions as each broker's own metadata shows them now (brokers apply the metadata log
        each at its own pace: an operation is complete for the job's clients once every view shows it)."""
        raise _missing(self, "partition_views")

    def topic_offsets(self, topic: str) -> Mapping[int, tuple[int, int]] | None:
        """(log start offset, end offset) of each partition of ``topic`` (None: no such topic)."""
        raise _missing(self, "topic_offsets")

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions; return once every broker lists them with a leader."""
        raise _missing(self, "add_partitions")

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """Delete each partition's records below its offset in ``before`` (what retention does); the
        partitions' new log start offsets."""
        raise _missing(self, "delete_records")

    def reassign_partitions(self, topic: str, replicas: Mapping[int, Sequence[int]]) -> str:
        """Submit a reassignment of ``topic``'s partitions to ``replicas`` (partition -> broker ids, the first
        the preferred leader); returns once the controller accepted it."""
        raise _missing(self, "reassign_partitions")

    def elect_preferred_leaders(self, topic: str, partitions: Sequence[int]) -> None:
        """Move each partition's leadership to its preferred replica now."""
        raise _missing(self, "elect_preferred_leaders")

    def reassignment_refused(self) -> str | None:
        """Why this cluster's partitions cannot be reassigned from here (Kafka's own tool could not be fetched),
        as one line, or None; fetches the tool once per machine, so that a run does not wait for it."""
        return None

    def administration_refused(self, operations: Sequence[str]) -> str | None:
        """Why this client may not perform ``operations`` (Kafka's ACL operation names) on the cluster, as one
        line, or None when it may."""
        return None

    def job_links(self, broker_ids: list[int] | None = None) -> Sequence[LinkProxy]:
        """The proxies of the job's links to these brokers (all when None), for network faults on
        Kafka links; [] when the backend has none (the faults act on the brokers' job ports then)."""
        return []

    def listen(self, port: int) -> None:
        """Also accept the job's clients on ``127.0.0.1:port`` (a job that hard-codes its bootstrap address)."""
        raise _missing(self, "listen")

    def unlisten(self, port: int) -> None:
        raise _missing(self, "unlisten")
