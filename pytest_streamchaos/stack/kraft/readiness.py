"""When a KRaft cluster serves: every node started and every broker registered, a round trip through a
replicated topic, every ISR full and every partition led by its preferred replica (after a heal)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.kraft.admin import KafkaAdmin, client_conf
from pytest_streamchaos.stack.kraft.plan import KafkaNode, KRaftPlan
from pytest_streamchaos.stack.process import check_alive

READY_LINE = "Kafka Server started"


class KafkaReadiness:
    """The waits of a :class:`KRaftPlan`'s cluster, through the harness's admin client."""

    def __init__(self, plan: KRaftPlan, admin: KafkaAdmin) -> None:
        self.plan, self.admin = plan, admin

    def wait_ready(self, nodes: Sequence[KafkaNode], timeout: float) -> None:
        """Every node of ``nodes`` logged its start and every broker of the cluster is registered; a
        node that exits fails the wait at once, with its log."""
        def ready() -> bool:
            check_alive(nodes, "Kafka", fix="\nfix: see the log's last error (a port taken, disk full, the wrong Java)")
            if not all(READY_LINE in n.process.log_since_start() for n in nodes if n.process is not None):
                return False
            try:
                return self.admin.brokers(timeout=2.0) == self.plan.broker_ids
            except Exception:  # the first metadata request may find no broker listening yet
                return False

        poll(ready, timeout, interval=0.1, on_timeout=lambda _: StackError(
            f"the Kafka cluster ({self.plan.brokers} brokers) did not come up within {timeout:g}s: "
            + "; ".join(f"{n.name}: {'started' if READY_LINE in n.process.log_since_start() else 'not started'} "
                        f"(log {n.process.log_path})" for n in nodes if n.process is not None)
            + f"\n{nodes[0].tail_log(15)}\nfix: raise --chaos-start-timeout on a busy machine"))

    def round_trip(self, timeout: float) -> None:
        """Produce to and consume from a replicated topic (brokers registered do not mean the
        cluster serves clients yet), then delete it."""
        from confluent_kafka import Consumer, Producer, TopicPartition

        topic = f"streamchaos-ready-{uuid.uuid4().hex[:8]}"
        self.admin.create_topic(topic, 1, self.plan.replication)
        bootstrap = self.plan.bootstrap_servers
        producer = Producer(client_conf(bootstrap, acks="all"))
        producer.produce(topic, b"ready")
        if producer.flush(timeout) != 0:
            raise StackError(f"the Kafka cluster did not acknowledge a record within {timeout:g}s")
        consumer = Consumer(client_conf(bootstrap, **{"group.id": topic, "enable.auto.commit": False}))
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            poll(lambda: (m := consumer.poll(0.2)) is not None and m.error() is None, timeout,
                 interval=0.0, on_timeout=lambda _: StackError("the Kafka cluster did not hand back a record it "
                                                               f"acknowledged within {timeout:g}s"))
        finally:
            consumer.close()
        self.admin.delete_topic(topic)

    def await_full_isr(self, timeout: float) -> None:
        def full() -> bool:
            md = self.admin.metadata()
            return all(len(pm.isrs) == len(pm.replicas) and pm.leader >= 0
                       for t in md.topics.values() for pm in t.partitions.values())

        poll(full, timeout, interval=0.2, on_timeout=lambda _: StackError(
            f"the Kafka cluster did not heal within {timeout:g}s: some partitions still miss an in-sync replica"))

    def await_preferred_leaders(self, timeout: float) -> None:
        # One election request is not enough: the controller refuses a preferred replica it does not
        # yet count in sync (seen: a partition still led by broker 3 after a heal), so ask again until
        # the metadata shows every partition led by its first replica.
        def preferred() -> bool:
            md = self.admin.metadata()
            off = any(pm.replicas and pm.leader != pm.replicas[0]
                      for t in md.topics.values() for pm in t.partitions.values())
            if off:
                self.admin.elect_preferred_leaders()
            return not off

        poll(preferred, timeout, interval=0.5, on_timeout=lambda _: StackError(
            f"the Kafka cluster did not heal within {timeout:g}s: some partitions are not led by their "
            "preferred replica"))
