"""What faults do to a KRaft cluster's nodes: kill, pause, resume and restart a broker, its state, and
what a network fault needs to aim at one (its peer ports, the mark on its connections)."""

from __future__ import annotations

import signal

from pytest_streamchaos.stack.kraft.links import JobLinks
from pytest_streamchaos.stack.kraft.plan import KafkaNode, KRaftPlan
from pytest_streamchaos.stack.kraft.readiness import KafkaReadiness


class BrokerControl:
    """The broker operations on a :class:`KRaftPlan`'s nodes; a kill moves the bootstrap proxies that led
    to the broker (``links``) to a live one."""

    def __init__(self, plan: KRaftPlan, readiness: KafkaReadiness, links: JobLinks) -> None:
        self.plan, self.readiness, self.links = plan, readiness, links

    def kill(self, broker_id: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to the broker's JVM (SIGKILL: no controlled shutdown, as a lost machine)."""
        node = self.plan.node(broker_id)
        if node.process is not None:
            node.process.signal(sig)
            alive = [job_upstream(n) for n in self.plan.nodes if n.alive and n is not node]
            self.links.retarget(job_upstream(node), alive)
            if wait:
                node.process.wait_gone(15.0)

    def wait_gone(self, broker_id: int, timeout: float = 15.0) -> None:
        proc = self.plan.node(broker_id).process
        if proc is not None:
            proc.wait_gone(timeout)

    def restart(self, broker_id: int, wait: bool = True) -> None:
        """Start the broker again on its ports and log directory (it rejoins, catches up and returns to
        the ISRs); ``wait``: until it logged its start and registered."""
        node = self.plan.node(broker_id)
        if node.alive:
            return
        node.start()
        if wait:
            self.readiness.wait_ready([node], self.plan.start_timeout)

    def pause(self, broker_id: int, wait: bool = True) -> None:
        """SIGSTOP the broker (its connections stay open, nothing answers)."""
        proc = self.plan.node(broker_id).process
        if proc is not None:
            proc.pause(wait=wait)

    def wait_paused(self, broker_id: int, timeout: float = 5.0) -> None:
        proc = self.plan.node(broker_id).process
        if proc is not None:
            proc.wait_paused(timeout)

    def resume(self, broker_id: int) -> None:
        proc = self.plan.node(broker_id).process
        if proc is not None and proc.alive:
            proc.resume()

    def state(self, broker_id: int) -> str | None:
        """``running``, ``paused``, or None when its JVM is gone."""
        node = self.plan.node(broker_id)
        return None if not node.alive else ("paused" if node.paused else "running")

    def peer_ports(self, broker_id: int) -> list[int]:
        ports = self.plan.node(broker_id).ports
        return [ports["replication"], ports["controller"]]

    def revive(self, timeout: float) -> None:
        """Resume the paused brokers, start the dead ones and wait until they serve."""
        for n in self.plan.nodes:
            if n.paused:
                self.resume(n.node_id)
        dead = [n for n in self.plan.nodes if not n.alive]
        for n in dead:
            n.start()
        if dead:
            self.readiness.wait_ready(dead, timeout)


def job_upstream(node: KafkaNode) -> str:
    """Where the job's link to ``node`` leads: its JOB listener."""
    return f"{node.host}:{node.ports['job']}"
