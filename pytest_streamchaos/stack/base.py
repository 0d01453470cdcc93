"""The stack interface. Backends (``local`` processes, ``docker`` containers; a cluster manager such as
YARN) implement it, so tests, faults and the runner do not change when the backend does.

A *target* is anything a fault can hit: a Spark master or worker, an executor, the driver, a broker.
Local targets are process groups; container targets are containers. The faults and the runner use only
the methods here and the capabilities of :mod:`.capabilities` (kill, pause, restart a role, leaders ...),
which a cluster class implements where it can: a fault needing one its cluster lacks is refused when the
run is planned, never half-way through it.

What the clusters hand out is typed by the protocols below, so the faults and the runner need nothing of
a backend's own classes: :class:`Node` (a master, worker or broker), :class:`Executor`, :class:`Launcher`
(what starts the user's job on a cluster, from a :class:`SparkApp`) and :class:`JobHandle` (the running
job, its driver; under Spark Connect a :class:`ConnectSession`, the client of a server),
:class:`CheckpointView` (the query's checkpoint as the aimed faults and the drain read it),
and for network faults :class:`LinkScope` (whose connections a fault on this host acts
on, as Jepsen's ``Net``) and :class:`LinkProxy` (a proxy on one of the job's links).
"""

from __future__ import annotations

import abc
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from pytest_streamchaos.errors import NetFaultError, StackError  # noqa: F401  (the stack's errors, re-exported)
from pytest_streamchaos.stack.service import Service

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


#: what :meth:`SparkCluster.executors` hands out and :meth:`~SparkCluster.executor_state` takes back
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

    def offsets(self, batch_id: int) -> dict[str, object] | None:
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


class _Serving(Protocol):
    """The server behind a :class:`LinkProxy` (its toxics die with it)."""

    @property
    def alive(self) -> bool:
        ...

    @property
    def pid(self) -> int:
        ...

    @property
    def returncode(self) -> int | None:
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

    def info(self) -> dict[str, object]:
        """The proxy as the server has it (``enabled``, ``toxics`` ...)."""
        ...

    def add_toxic(self, kind: str, stream: str = "downstream", attributes: dict[str, Any] | None = None,
                  toxicity: float = 1.0, name: str | None = None) -> object:
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


class SparkCluster(Service):
    """A Spark cluster as the runner and every fault see it: the standalone one (one or two masters, HA with
    ZooKeeper; N workers) on the ``local`` or ``docker`` placement, or another cluster manager. What a fault
    does to it beyond this is a capability (:mod:`.capabilities`) the cluster's class implements where it can."""

    @property
    @abc.abstractmethod
    def master_url(self) -> str:
        """Where drivers submit to: ``spark://127.0.0.1:PORT`` (``spark://h:p1,h:p2`` in HA mode), ``yarn``."""

    @property
    def manager(self) -> str:
        """The cluster manager the job runs on: a name of :data:`pytest_streamchaos.managers.MANAGERS`."""
        return "standalone"

    @property
    def effective_conf(self) -> Mapping[str, str]:
        """The cluster's own settings (``spark.worker.timeout`` ...), as its daemons were started with them."""
        return {}

    @property
    def driver_host(self) -> str:
        """The address a driver on this host binds so that the cluster's executors reach it."""
        return "127.0.0.1"

    @property
    @abc.abstractmethod
    def link_scope(self) -> LinkScope:
        """Whose connections a network fault on this host acts on (the job's, by the job group's mark,
        where the host has one)."""

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
    def endpoints(self) -> list[Endpoint]:
        """Every node with the ports its peers connect to (masters, workers, ZooKeeper)."""

    @abc.abstractmethod
    def alive_workers(self) -> list[dict[str, Any]]:
        """The active master's ALIVE workers (its JSON rows: ``host``, ``port``, ...)."""

    @abc.abstractmethod
    def executors(self, i: int) -> Sequence[ExecutorRef]:
        """Handles of the executors worker ``i`` runs now (empty when none)."""

    @abc.abstractmethod
    def executor_state(self, executor: ExecutorRef) -> str | None:
        """``running``, ``stopped`` (paused) ..., or None once the executor is gone."""

    @abc.abstractmethod
    def app_executors(self, app_id: str) -> Sequence[Executor]:
        """The executors application ``app_id`` runs now, wherever they are (the cluster's own knowledge)."""

    @abc.abstractmethod
    def link_sides(self) -> list[tuple[str, str]]:
        """The network namespaces the job's side of a link lives in, as (node name, the network-namespace
        file of a process in it, ``/proc/<pid>/ns/net``): a network fault acts there. [] when the job
        shares this host's namespace (the local backend, where :attr:`link_scope` tells its connections
        apart)."""

    @abc.abstractmethod
    def launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> Launcher:
        """What starts the user's jobs on this cluster (their drivers, directories under ``workdir``)."""


class KafkaCluster(Service):
    """A Kafka cluster of N brokers as the runner and every fault see it: the stack's own (KRaft) or one the
    plugin attached to. What a fault does to the brokers beyond this is a capability (:mod:`.capabilities`).

    Two ways in: :attr:`bootstrap_servers` for the harness (generator, collector, admin), which no
    fault on the job's links touches, and :attr:`job_bootstrap_servers` for the job, whose links
    network faults act on."""

    @property
    def manager(self) -> str:
        """Who runs the brokers: ``kraft`` (the plugin's own cluster) or ``attached`` (by its bootstrap)."""
        return "kraft"

    @property
    @abc.abstractmethod
    def bootstrap_servers(self) -> str:
        """The harness's listeners, ``host:port,host:port,...``."""

    @property
    @abc.abstractmethod
    def broker_ids(self) -> list[int]:
        ...

    @property
    @abc.abstractmethod
    def replication(self) -> int:
        """The replication factor of the topics it creates when none is asked for."""

    @property
    def effective_conf(self) -> Mapping[str, str]:
        """The settings the brokers run with (failure detection, replication), for the run's JSON."""
        return {}

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
    def delete_topic(self, name: str) -> None:
        ...

    @abc.abstractmethod
    def heal(self, timeout: float | None = None) -> None:
        """Every broker up and in sync, no fault left on the job's links."""

    @abc.abstractmethod
    def partition_states(self, topic: str) -> Mapping[int, PartitionView] | None:
        """Leader, replicas and ISR of each partition of ``topic``."""

    @abc.abstractmethod
    def registered_brokers(self) -> list[int]:
        """The brokers the cluster's metadata lists now (a fenced one is missing)."""

    @abc.abstractmethod
    def controller_id(self) -> int | None:
        """The active controller's node id (KRaft), None where it cannot be known."""

    @abc.abstractmethod
    def listen(self, port: int) -> None:
        """Also accept the job's clients on ``127.0.0.1:port`` (a job that hard-codes its bootstrap address)."""

    @abc.abstractmethod
    def unlisten(self, port: int) -> None:
        ...
