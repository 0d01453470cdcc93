"""What faults and heals do to the HDFS nodes: signal, pause, resume and restart a NameNode or DataNode,
wait for the effect, and revive what is down."""

from __future__ import annotations

import time

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.hdfs.plan import HdfsNode, HdfsPlan
from pytest_streamchaos.stack.hdfs.state import HdfsReadiness
from pytest_streamchaos.stack.process import DaemonProcess, end_with


class HdfsControl:
    """The node operations on a :class:`~.plan.HdfsPlan`'s nodes; a node the harness signals is noted in
    ``killed`` (the readiness waits do not take its exit for a start-up failure)."""

    def __init__(self, plan: HdfsPlan, readiness: HdfsReadiness, killed: set[str]) -> None:
        self.plan, self.readiness, self.killed = plan, readiness, killed

    def datanode(self, i: int) -> HdfsNode:
        if not 0 <= i < len(self.plan.datanodes):
            n = len(self.plan.datanodes)
            raise StackError(f"no DataNode {i}: the HDFS cluster has {n} (indexes 0..{n - 1})")
        return self.plan.datanodes[i]

    @staticmethod
    def process(node: HdfsNode) -> DaemonProcess:
        if node.process is None:
            raise StackError(f"HDFS {node.name} was never started")
        return node.process

    def signal(self, node: HdfsNode, sig: int, wait: bool) -> HdfsNode:
        """``sig`` to ``node``; with ``wait``, return once it is gone."""
        proc = self.process(node)
        self.killed.add(node.name)
        end_with(proc, sig, wait)
        return node

    def fresh_start(self, node: HdfsNode) -> None:
        if node.process is not None:
            node.process.kill(timeout=10)  # reap what is left of the old group
        self.killed.discard(node.name)
        node.start()

    def restart(self, node: HdfsNode, wait: bool, timeout: float | None) -> HdfsNode:
        """Start ``node`` again (killed first if running) on its ports and directory; with ``wait``, return
        once a DataNode registered and the cluster is ready."""
        self.fresh_start(node)
        if wait:
            deadline = time.monotonic() + (timeout or self.plan.start_timeout)
            if node.role == "datanode":
                self.readiness.wait_registered(node, deadline - time.monotonic())
            self.readiness.wait_ready(max(0.1, deadline - time.monotonic()))
        return node

    def revive(self, deadline: float) -> None:
        """Resume the paused nodes, restart the dead ones (the NameNode first) and wait until each restarted
        DataNode registered (by ``deadline``, on ``time.monotonic``)."""
        for node in self.plan.nodes():
            if node.paused:
                self.process(node).resume()
        restarted = [n for n in self.plan.nodes() if not n.alive]
        for node in restarted:  # the NameNode first: the list starts with it
            self.fresh_start(node)
        for node in restarted:
            if node.role == "datanode":
                self.readiness.wait_registered(node, max(0.1, deadline - time.monotonic()))
