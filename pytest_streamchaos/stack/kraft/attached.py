"""An existing Kafka, by its bootstrap address (``--chaos-kafka-bootstrap=host:port``): the plugin starts no
broker and reaches the cluster only as a client does. The generator, the collector, the job and the
admin client (topics created and deleted exactly as on the stack's own Kafka) all use that bootstrap.

What needs the brokers' hosts -- a broker killed, paused or isolated, a fault on the job's Kafka links
(Toxiproxy sits between the job and brokers the plugin started) -- are capabilities this class lacks
(:mod:`..capabilities`): a fault that needs one is refused when the run is planned, in one line naming why.
A bootstrap that does not answer fails the session at its start, in one line naming the fix
(:func:`attach_kafka`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from pytest_streamchaos.machine.environment import find_java
from pytest_streamchaos.stack.base import KafkaCluster, StackError
from pytest_streamchaos.stack.kraft.admin import KafkaAdmin, PartitionState
from pytest_streamchaos.stack.kraft.operations import TopicAdministration, TopicOperations

#: how long the bootstrap may take to answer when attaching
CHECK_TIMEOUT_S = 5.0
#: the replication factor of the run's topics, at most (fewer brokers: one per broker)
MAX_REPLICATION = 3


def attach_kafka(bootstrap: str, timeout: float = CHECK_TIMEOUT_S) -> AttachedKafka:
    """The Kafka ``bootstrap`` names (``host:port[,host:port...]``), checked to answer with its metadata."""
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            raise StackError(f"kafka bootstrap {bootstrap!r}: {address.strip()!r} is not host:port; fix: "
                             "--chaos-kafka-bootstrap=HOST:PORT[,HOST:PORT...]")
    kafka = AttachedKafka(bootstrap)
    try:
        kafka.cluster_id(timeout)
    except Exception as exc:  # confluent-kafka's KafkaException: no broker answered within the timeout
        raise StackError(f"no Kafka answers at {bootstrap} within {timeout:g}s ({exc}); fix: start the cluster, or "
                         "pass the bootstrap address of a running one (one its listener advertises to this host)"
                         ) from None
    return kafka


class AttachedKafka(TopicAdministration, KafkaCluster):
    """A Kafka the plugin did not start (see the module docstring). Kafka's own operations on the run's topics
    (the topic faults) go through its admin API as on the stack's Kafka, where its ACLs allow them."""

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = bootstrap
        self.admin = KafkaAdmin(bootstrap)
        self.topic_ops = TopicOperations(self.admin, lambda: str(find_java()[0]))
        self.reassign_dir = Path(tempfile.gettempdir())  # a plan file lives there while the tool runs

    def __repr__(self) -> str:
        return f"AttachedKafka({self._bootstrap!r})"

    @property
    def manager(self) -> str:
        return "attached"

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def broker_ids(self) -> list[int]:
        return self.admin.brokers()

    @property
    def effective_conf(self) -> Mapping[str, str]:
        return {"attached.bootstrap.servers": self._bootstrap}

    @property
    def replication(self) -> int:
        """Up to 3 (fewer brokers: one replica per broker)."""
        return min(MAX_REPLICATION, len(self.admin.brokers()))

    def cluster_id(self, timeout: float = CHECK_TIMEOUT_S) -> str:
        """The cluster's id (its metadata answered within ``timeout``)."""
        return str(self.admin.metadata(timeout=timeout).cluster_id)

    def start(self) -> None:
        """Nothing to start: the cluster runs already (checked by :func:`attach_kafka`)."""

    def stop(self) -> None:
        self.admin.close()

    def heal(self, timeout: float | None = None) -> None:
        """Nothing the plugin broke (it may not break the brokers); the cluster still answers."""
        self.cluster_id(timeout or CHECK_TIMEOUT_S)

    def create_topic(self, name: str, partitions: int = 1, replication: int | None = None,
                     config: dict[str, str] | None = None) -> str:
        """As on the stack's Kafka: exactly ``name`` (an existing topic of that name deleted first), replicated
        on up to 3 brokers."""
        self.admin.create_topic(name, partitions, replication or self.replication, config)
        return name

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topic(name)

    def partition_states(self, topic: str) -> dict[int, PartitionState] | None:
        return self.admin.partitions(topic)

    def registered_brokers(self) -> list[int]:
        return self.admin.brokers(timeout=2.0)

    def controller_id(self) -> int | None:
        """Unknown: a client of a KRaft cluster cannot see the active controller (the metadata's
        ``controller_id`` is a broker picked at random per request, which would put a stream of false
        elections on the timeline)."""
        return None

    def listen(self, port: int) -> None:
        """A job that hard-codes ``localhost:port``: the plugin cannot add a listener to brokers it did not
        start, so the cluster must answer there already, as itself."""
        ours = self.cluster_id()
        try:
            there = AttachedKafka(f"127.0.0.1:{port}").cluster_id()
        except Exception as exc:  # nothing (or no Kafka) answers there
            there = f"nothing ({exc})"
        if there != ours:
            raise StackError(f"kafka port {port}: the job expects Kafka at localhost:{port}, and there is {there}, "
                             f"not the cluster of --chaos-kafka-bootstrap={self._bootstrap} (id {ours}); the plugin "
                             "adds no listener to a Kafka it did not start; fix: give that cluster a listener on "
                             f"localhost:{port}, or pass the bootstrap address to the job")

    def unlisten(self, port: int) -> None:
        """Nothing was added by :meth:`listen`."""
