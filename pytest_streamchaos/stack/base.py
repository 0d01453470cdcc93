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
    """A Kafka cluster of N brokers (real Apache Kafka, KRaft) with broker-level fault controls.

    Two ways in: :attr:`bootstrap_servers` for the harness (generator, collector, admin), which no
    fault on the job's links touches, and :attr:`job_bootstrap_servers` for the job, whose links
    network faults act on."""

    bootstrap_servers: str  #: the harness's listeners, ``host:port,host:port,...``
    broker_ids: list[int]
    #: the settings the brokers run with (failure detection, replication), for the run's JSON
    effective_conf: dict[str, str] = {}  # noqa: RUF012  (a backend sets its own per instance)

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

    def partition_states(self, topic: str) -> dict[int, Any] | None:
        """Leader, replicas and ISR of each partition of ``topic`` (``kafka_admin.PartitionState``)."""
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

    def job_links(self, broker_ids: list[int] | None = None) -> list[Any]:
        """The proxies of the job's links to these brokers (all when None), for network faults on
        Kafka links; [] when the backend has none (the faults act on the brokers' job ports then)."""
        return []

    def listen(self, port: int) -> None:
        """Also accept the job's clients on ``127.0.0.1:port`` (a job that hard-codes its bootstrap address)."""
        raise _missing(self, "listen")

    def unlisten(self, port: int) -> None:
        raise _missing(self, "unlisten")
