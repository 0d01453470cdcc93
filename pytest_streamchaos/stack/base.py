"""The stack interface. Backends (``local`` processes, later ``docker`` containers) implement it, so
tests and faults do not change when the backend does.

A *target* is anything a fault can hit: a Spark master or worker, the driver, a broker. Local targets
are process groups; container targets are containers. Faults only use the methods here.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field


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

    @abc.abstractmethod
    def heal(self) -> None:
        """All brokers up, no delays."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the cluster. Idempotent."""
