"""The stack interface. Backends (``local`` processes, later ``docker`` containers) implement it, so
tests and faults do not change when the backend does.

A *target* is anything a fault can hit: a Spark master or worker, the driver, a broker. Local targets
are process groups; container targets are containers. The faults and the runner use only the methods
here; a backend implements them (the ones it lacks fail the fault that needs them, naming the method).
"""

from __future__ import annotations

import abc
import signal
from dataclasses import dataclass, field
from typing import Any


class StackError(RuntimeError):
    """The stack cannot be brought up or healed. The message names the problem and the fix."""


class NetFaultError(RuntimeError):
    """A network fault could not be injected or healed. The message names the command and the fix.
    (Defined with the stack because the stack's links raise it too; ``faults.iptables`` re-exports it.)"""


@dataclass
class Endpoint:
    """One running stack component as faults and network rules see it."""

    name: str  #: e.g. ``master-0``, ``worker-1``, ``broker-2``, ``driver``
    role: str  #: ``master`` | ``worker`` | ``broker`` | ``driver`` | ``zookeeper``
    host: str = "127.0.0.1"
    ports: dict[str, int] = field(default_factory=dict)  #: e.g. {"rpc": 7077, "webui": 8080}


class SparkCluster(abc.ABC):
    """A Spark standalone cluster: one or two masters (HA with ZooKeeper), N workers."""

    master_url: str  #: ``spark://127.0.0.1:PORT`` (``spark://h:p1,h:p2`` in HA mode)
    #: the cluster's own settings (``spark.worker.timeout`` ...), as its daemons were started with them
    effective_conf: dict[str, str] = {}  # noqa: RUF012  (a backend sets its own per instance)
    #: the address a driver on this host binds so that the cluster's executors reach it
    driver_host: str = "127.0.0.1"

    @property
    @abc.abstractmethod
    def workers(self) -> list:  # list of worker handles (backend specific, see LocalWorker)
        """The workers, indexable by position."""

    @property
    @abc.abstractmethod
    def masters(self) -> list:
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

    def active_master(self) -> Any:
        """The master that leads now (the only one without HA)."""
        raise _missing(self, "active_master")

    def alive_workers(self) -> list[dict[str, Any]]:
        """The active master's ALIVE workers (its JSON rows: ``host``, ``port``, ...)."""
        raise _missing(self, "alive_workers")

    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to worker ``i`` and everything it runs (its executors)."""
        raise _missing(self, "kill_worker")

    def restart_worker(self, i: int) -> Any:
        """Start worker ``i`` again (after a kill); returns its handle."""
        raise _missing(self, "restart_worker")

    def pause_worker(self, i: int, wait: bool = True) -> None:
        """Freeze worker ``i`` and its executors (SIGSTOP / ``docker pause``)."""
        raise _missing(self, "pause_worker")

    def resume_worker(self, i: int) -> None:
        raise _missing(self, "resume_worker")

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> Any:
        """Send ``sig`` to master ``i`` (the active one when None)."""
        raise _missing(self, "kill_master")

    def restart_master(self, i: int) -> Any:
        raise _missing(self, "restart_master")

    def pause_master(self, i: int, wait: bool = True) -> None:
        raise _missing(self, "pause_master")

    def resume_master(self, i: int) -> None:
        raise _missing(self, "resume_master")

    def wait_gone(self, node: Any, timeout: float = 10.0) -> None:
        """Return once ``node`` (a master or worker handle) and all it ran are gone."""
        raise _missing(self, "wait_gone")

    def wait_paused(self, node: Any, timeout: float = 5.0) -> None:
        """Return once every process of ``node`` is frozen."""
        raise _missing(self, "wait_paused")

    def executors(self, i: int) -> list[Any]:
        """Handles of the executors worker ``i`` runs now (empty when none)."""
        raise _missing(self, "executors")

    def signal_executor(self, executor: Any, sig: int) -> None:
        """Send ``sig`` to one executor (SIGKILL/SIGTERM to kill, SIGSTOP/SIGCONT to pause)."""
        raise _missing(self, "signal_executor")

    def link_sides(self) -> list[tuple[str, str]]:
        """The network namespaces the job's side of a link lives in, as (node name, ``/proc/<pid>/ns/net``):
        a network fault acts there. [] when the job shares this host's namespace (the local backend,
        where the job group's mark tells its connections apart)."""
        raise _missing(self, "link_sides")

    def executor_state(self, executor: Any) -> str | None:
        """``running``, ``stopped`` (paused) ..., or None once the executor is gone."""
        raise _missing(self, "executor_state")


def _missing(backend: object, method: str) -> NotImplementedError:
    return NotImplementedError(f"the {type(backend).__name__} backend does not implement {method}() of the "
                               "stack interface (stack/base.py), so the fault that needs it cannot run")


class KafkaCluster(abc.ABC):
    """A Kafka-protocol cluster of N brokers with broker-level fault controls."""

    bootstrap_servers: str  #: ``host:port,host:port,...``
    #: whether read_committed consumers are kept from records of aborted transactions (real Kafka:
    #: yes); the run's exactly-once verdict for transactional output is unverified where not
    isolates_transactions: bool = True

    @abc.abstractmethod
    def create_topic(self, name: str, partitions: int = 1, replication: int = 1) -> str:
        """Create a topic and return its name."""

    @abc.abstractmethod
    def broker_down(self, broker_id: int) -> None:
        """Take a broker down (connections closed, new ones refused)."""

    @abc.abstractmethod
    def broker_up(self, broker_id: int) -> None:
        """Bring a broker back up."""

    @abc.abstractmethod
    def set_broker_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay every response of a broker by ``rtt_ms`` (0 removes the delay)."""

    #: the brokers' ids
    broker_ids: list[int]
    #: the fixed bootstrap port of the session (``--chaos-kafka-port``), None for ephemeral ports
    bootstrap_port: int | None = None

    # -- what the faults and the runner do to the brokers ----------------------------------------

    def endpoints(self) -> list[Endpoint]:
        """Every broker with the port clients connect to."""
        raise _missing(self, "endpoints")

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 10.0) -> int:
        """The broker id leading ``topic``/``partition`` now."""
        raise _missing(self, "leader_of")

    def pause_brokers(self) -> None:
        """Freeze the brokers (connections stay open, nothing answers)."""
        raise _missing(self, "pause_brokers")

    def resume_brokers(self) -> None:
        raise _missing(self, "resume_brokers")

    def brokers_state(self) -> str | None:
        """``running`` or ``stopped`` (paused); None when the brokers' process is gone."""
        raise _missing(self, "brokers_state")

    def reset(self) -> None:
        """Back to an empty cluster (no topics), for a run that names its topics."""
        raise _missing(self, "reset")

    def listen(self, port: int) -> None:
        """Also accept clients on ``port`` (a job that hard-codes its bootstrap address)."""
        raise _missing(self, "listen")

    def unlisten(self, port: int) -> None:
        raise _missing(self, "unlisten")

    @abc.abstractmethod
    def heal(self) -> None:
        """All brokers up, no delays."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the cluster. Idempotent."""
