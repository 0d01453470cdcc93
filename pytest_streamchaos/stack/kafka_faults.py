"""What faults do to the ``local`` Kafka cluster's nodes: kill, pause, resume and restart a broker,
its state, and what a network fault needs to aim at one (its peer ports, the mark on its connections).

:class:`KafkaNodeFaults` is a part of :class:`~.kafka_local.LocalKafkaCluster` (the broker operations of
the stack interface, :class:`~.base.KafkaCluster`).
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.kafka_admin import KafkaAdmin
from pytest_streamchaos.stack.kafka_kraft import KafkaNode
from pytest_streamchaos.stack.kafka_links import JobLinks


class KafkaNodeFaults:
    """The broker operations on the nodes. Part of :class:`~.kafka_local.LocalKafkaCluster`, which sets
    the attributes below."""

    nodes: list[KafkaNode]
    broker_ids: list[int]
    links: JobLinks
    admin: KafkaAdmin
    start_timeout: float

    if TYPE_CHECKING:  # the cluster's links and readiness (kafka_local.LocalKafkaCluster)
        def _job_upstream(self, node: KafkaNode) -> str: ...

        def _wait_ready(self, nodes: list[KafkaNode], timeout: float) -> None: ...

    def node(self, broker_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == broker_id:
                return n
        raise StackError(f"no broker {broker_id}: the brokers are {self.broker_ids}")

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to the broker's JVM (SIGKILL: no controlled shutdown, as a lost machine)."""
        node = self.node(broker_id)
        if node.process is not None:
            node.process.signal(sig)
            alive = [self._job_upstream(n) for n in self.nodes if n.alive and n is not node]
            self.links.retarget(self._job_upstream(node), alive)
            if wait:
                node.process.wait_gone(15.0)

    def wait_gone(self, broker_id: int, timeout: float = 15.0) -> None:
        proc = self.node(broker_id).process
        if proc is not None:
            proc.wait_gone(timeout)

    def restart_broker(self, broker_id: int, wait: bool = True) -> None:
        """Start the broker again on its ports and log directory (it rejoins, catches up and returns to
        the ISRs); ``wait``: until it logged its start and registered."""
        node = self.node(broker_id)
        if node.alive:
            return
        node.start()
        if wait:
            self._wait_ready([node], self.start_timeout)

    def pause_broker(self, broker_id: int, wait: bool = True) -> None:
        """SIGSTOP the broker (its connections stay open, nothing answers)."""
        proc = self.node(broker_id).process
        if proc is not None:
            proc.pause(wait=wait)

    def wait_paused(self, broker_id: int, timeout: float = 5.0) -> None:
        proc = self.node(broker_id).process
        if proc is not None:
            proc.wait_paused(timeout)

    def resume_broker(self, broker_id: int) -> None:
        proc = self.node(broker_id).process
        if proc is not None and proc.alive:
            proc.resume()

    def broker_state(self, broker_id: int) -> str | None:
        """``running``, ``paused``, or None when its JVM is gone."""
        node = self.node(broker_id)
        return None if not node.alive else ("paused" if node.paused else "running")

    def alive_brokers(self) -> list[int]:
        return [n.node_id for n in self.nodes if n.alive]

    def registered_brokers(self) -> list[int]:
        return self.admin.brokers(timeout=2.0)

    def peer_ports(self, broker_id: int) -> list[int]:
        ports = self.node(broker_id).ports
        return [ports["replication"], ports["controller"]]

    def node_mark(self, broker_id: int) -> tuple[int, int] | None:
        """The mark the job group puts on connections the node opens (its child group ``broker-<id>``)."""
        return self.host.job_group.mark_sub(self.node(broker_id).name, broker_id)

    def endpoints(self) -> list[Endpoint]:
        return [n.endpoint() for n in self.nodes]
