"""Topics and partition state of a Kafka cluster, through the harness's own admin client (confluent-kafka).

Everything here talks to the brokers' harness listener (never the job's), so it keeps working while a
fault cuts or delays the job's links. Topic creation is exact: a topic gets precisely the name and the
partition count asked for, and one that exists already is deleted and created again (an earlier test's
records never leak into the next). Creation returns only once every broker's own metadata shows every
partition with a leader and its full in-sync replica set, and deletion once no broker lists the topic:
KRaft brokers apply the metadata log each at its own pace, so one broker's answer says nothing of the
next one's (a client asking another broker a moment later would still see the old topic).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import StackError

if TYPE_CHECKING:  # the harness's clients import confluent-kafka when they first talk to the cluster
    from confluent_kafka.admin import AdminClient, ClusterMetadata

#: how long a metadata or admin request may take before it counts as failed
REQUEST_TIMEOUT_S = 10.0
#: how long one broker may take to answer for itself (one that cannot, dead or paused, serves no stale view)
BROKER_VIEW_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class PartitionState:
    """One partition as the cluster's metadata reports it."""

    leader: int  #: broker id, -1 while it has none
    replicas: tuple[int, ...]
    isr: tuple[int, ...]  #: the in-sync replicas


def client_conf(bootstrap_servers: str, **extra: object) -> dict[str, Any]:
    """librdkafka settings of a harness client: its log lines go to Python's logging (a broker a fault
    killed makes every client log its failed connects, which would otherwise flood stderr)."""
    return {"bootstrap.servers": bootstrap_servers, "logger": logging.getLogger("pytest_streamchaos.kafka"),
            "socket.timeout.ms": 5000, "reconnect.backoff.max.ms": 500, **extra}


class KafkaAdmin:
    """Admin operations on one cluster (``bootstrap_servers``: the harness listeners)."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._admin: AdminClient | None = None
        self._one_broker: dict[str, AdminClient] = {}  #: address -> a client that asks only that broker

    def client(self) -> AdminClient:
        """The admin client (confluent-kafka's ``AdminClient``) of the harness's listeners, made on first use."""
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            self._admin = AdminClient(client_conf(self.bootstrap_servers, **{"allow.auto.create.topics": "false"}))
        return self._admin

    def metadata(self, topic: str | None = None, timeout: float = REQUEST_TIMEOUT_S) -> ClusterMetadata:
        """The cluster's metadata now (all topics, or one)."""
        return self.client().list_topics(topic=topic, timeout=timeout)

    def broker_views(self, topic: str) -> list[ClusterMetadata]:
        """The cluster's metadata of ``topic``, then each registered broker's own. A client bootstrapped to
        one address keeps asking that broker (librdkafka connects to others only when it needs them); a
        broker that does not answer in time is left out."""
        from confluent_kafka.admin import AdminClient

        first = self.metadata(topic)
        views = [first]
        for b in first.brokers.values():
            addr = f"{b.host}:{b.port}"
            if addr not in self._one_broker:
                self._one_broker[addr] = AdminClient(client_conf(addr, **{"allow.auto.create.topics": "false"}))
            try:
                views.append(self._one_broker[addr].list_topics(topic=topic, timeout=BROKER_VIEW_TIMEOUT_S))
            except Exception:  # KafkaException: it did not answer
                continue
        return views

    def brokers(self, timeout: float = REQUEST_TIMEOUT_S) -> list[int]:
        """The ids of the brokers the cluster reports as registered (fenced ones are left out)."""
        return sorted(int(b) for b in self.metadata(timeout=timeout).brokers)

    def topics(self, timeout: float = REQUEST_TIMEOUT_S) -> list[str]:
        """The topics, internal ones (``__consumer_offsets``, ``__transaction_state``) left out."""
        return sorted(t for t in self.metadata(timeout=timeout).topics if not t.startswith("__"))

    def partitions(self, topic: str, timeout: float = REQUEST_TIMEOUT_S) -> dict[int, PartitionState] | None:
        """The state of every partition of ``topic``, None when the cluster does not know it."""
        return states_of(self.metadata(topic, timeout), topic)

    def create_topic(self, name: str, partitions: int, replication: int, config: dict[str, str] | None = None,
                     timeout: float = 30.0) -> None:
        """Create ``name`` with exactly ``partitions`` partitions of ``replication`` replicas (deleting
        it first if it exists), and return once every partition has a leader and a full ISR."""
        from confluent_kafka.admin import NewTopic

        if name in self.metadata(name, timeout).topics and self.partitions(name, timeout) is not None:
            self.delete_topic(name, timeout)
        deadline = time.monotonic() + timeout
        new = NewTopic(name, num_partitions=partitions, replication_factor=replication, config=dict(config or {}))

        def created() -> bool:
            err = future_error(self.client().create_topics([new], request_timeout=REQUEST_TIMEOUT_S)[name])
            if err is None or "already exists" in err.lower() and "deletion" not in err.lower():
                return True
            if "deletion" in err.lower() or "TOPIC_ALREADY_EXISTS" in err:  # the old one is still going
                return False
            raise StackError(f"cannot create topic {name!r} ({partitions} partitions, replication {replication}): "
                             f"{err}")

        poll(created, timeout, interval=0.1, on_timeout=lambda _: StackError(
            f"topic {name!r}: the earlier topic of that name was still being deleted after {timeout:g}s"))
        self.await_topic(name, partitions, replication, max(1.0, deadline - time.monotonic()))

    def await_topic(self, name: str, partitions: int, replication: int, timeout: float) -> None:
        """Poll until ``name`` has ``partitions`` partitions, each with a leader and ``replication``
        in-sync replicas; another partition count fails at once."""
        last = ["not listed yet"]

        def ready_on(view: ClusterMetadata) -> bool:
            state = states_of(view, name)
            if state is None:
                last[0] = "not listed by every broker yet"
                return False
            if len(state) != partitions:
                raise StackError(f"topic {name!r}: asked for {partitions} partitions, the cluster reports {len(state)}")
            waiting = {p: s for p, s in state.items() if s.leader < 0 or len(s.isr) < replication}
            last[0] = f"partitions without a leader or a full ISR: {waiting}"
            return not waiting

        def ready() -> bool:
            return all(ready_on(v) for v in self.broker_views(name))

        poll(ready, timeout, interval=0.05, on_timeout=lambda _: StackError(
            f"topic {name!r} ({partitions} partitions, replication {replication}) not ready within "
            f"{timeout:g}s: {last[0]}"))

    def delete_topic(self, name: str, timeout: float = 30.0) -> None:
        """Delete ``name`` and return once fresh metadata no longer lists it (no error if it is not there)."""
        err = future_error(self.client().delete_topics([name], request_timeout=REQUEST_TIMEOUT_S)[name])
        if err is not None and "UNKNOWN_TOPIC" not in err and "does not" not in err.lower():
            raise StackError(f"cannot delete topic {name!r}: {err}")

        def gone() -> bool:
            return all(states_of(v, name) is None for v in self.broker_views(name))

        poll(gone, timeout, interval=0.1,
             on_timeout=lambda _: StackError(f"topic {name!r} still listed {timeout:g}s after its deletion"))

    def elect_preferred_leaders(self, timeout: float = REQUEST_TIMEOUT_S) -> None:
        """Move every partition's leadership back to its preferred replica (after a broker restart the
        survivors lead everything until the next automatic rebalance, minutes later)."""
        from confluent_kafka import ElectionType, TopicPartition

        parts = [TopicPartition(name, p) for name, t in self.metadata(timeout=timeout).topics.items()
                 for p in t.partitions]
        if not parts:
            return
        # (confluent-kafka 2.16 fails with partitions=None, "all partitions": name them)
        fut = self.client().elect_leaders(ElectionType.PREFERRED, parts)
        try:
            fut.result(timeout)
        except Exception:  # partitions already led by their preferred replica report an error: nothing to do
            pass

    def close(self) -> None:
        self._admin = None
        self._one_broker.clear()


def states_of(metadata: ClusterMetadata, topic: str) -> dict[int, PartitionState] | None:
    """``topic``'s partitions in one metadata answer, None when that answer does not know it."""
    t = metadata.topics.get(topic)
    if t is None or t.error is not None or not t.partitions:
        return None
    return {p: PartitionState(int(pm.leader), tuple(pm.replicas), tuple(pm.isrs)) for p, pm in t.partitions.items()}


def future_error(fut: Future[object]) -> str | None:
    """The error of an admin future as text, None when it succeeded."""
    try:
        fut.result()
    except Exception as exc:  # KafkaException wraps a KafkaError
        err = exc.args[0] if exc.args else exc
        return f"{getattr(err, 'name', lambda: '')()} {getattr(err, 'str', lambda: str(err))()}".strip()
    return None
