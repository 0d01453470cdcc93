"""What the HDFS nodes report, and the waits built on it (:class:`HdfsReadiness`): the NameNode's JMX
JSON (``/jmx``: safe mode, the DataNodes it counts live and dead), a DataNode's registration, readiness
after a start."""

from __future__ import annotations

import http.client
import json
import re
import urllib.request
from dataclasses import dataclass
from typing import Any

from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.hdfs.plan import HdfsNode, HdfsPlan
from pytest_streamchaos.stack.process import check_alive

#: how long one JMX request may take (a paused NameNode accepts the connection and never answers)
JMX_TIMEOUT_S = 1.0

# No proxy for the NameNode's own address, whatever the environment says.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def jmx_bean(port: int, query: str, host: str = HOST) -> dict[str, Any] | None:
    """The first bean of ``http://host:port/jmx?qry=<query>``, or None when it does not answer."""
    try:
        with _HTTP.open(f"http://{host}:{port}/jmx?qry={query}", timeout=JMX_TIMEOUT_S) as resp:
            beans = json.loads(resp.read().decode()).get("beans") or []
    except (OSError, ValueError, http.client.HTTPException):
        return None
    return beans[0] if beans else None


@dataclass(frozen=True)
class HdfsState:
    """What the NameNode reports (``answered`` False: it did not answer, nothing else is known)."""

    answered: bool
    safemode: bool | None = None  #: in safe mode (no writes); None when it did not answer
    live: tuple[str, ...] = ()  #: DataNodes it counts live (``datanode-<i>``)
    dead: tuple[str, ...] = ()  #: DataNodes it has declared dead
    safemode_reason: str = ""  #: the NameNode's own safe-mode message ("" when off)


class HdfsReadiness:
    """The cluster's state as its nodes report it (:class:`~.plan.HdfsPlan`'s nodes), and the waits.
    ``killed``: the nodes down by the harness's own signal (their exit is not a start-up failure)."""

    def __init__(self, plan: HdfsPlan, killed: set[str]) -> None:
        self.plan, self.killed = plan, killed

    @property
    def namenode(self) -> HdfsNode:
        if self.plan.namenode is None:
            raise StackError("the HDFS cluster is not started: call start() first")
        return self.plan.namenode

    def state(self) -> HdfsState:
        """Safe mode and the live / dead DataNodes, as the NameNode reports them now."""
        nn = self.plan.namenode
        if nn is None or not nn.alive or nn.paused:
            return HdfsState(answered=False)
        port = nn.ports["http"]
        fsstate = jmx_bean(port, "Hadoop:service=NameNode,name=FSNamesystemState")
        info = fsstate and jmx_bean(port, "Hadoop:service=NameNode,name=NameNodeInfo")
        if not fsstate or not info:
            return HdfsState(answered=False)
        reason = str(info.get("Safemode") or "")
        return HdfsState(True, fsstate.get("FSState") == "safeMode" or bool(reason),
                         self._node_names(info.get("LiveNodes")), self._node_names(info.get("DeadNodes")),
                         reason.strip())

    def _node_names(self, nodes_json: Any) -> tuple[str, ...]:
        """``datanode-<i>`` of each entry of NameNodeInfo's ``LiveNodes`` / ``DeadNodes`` (by data port)."""
        try:
            nodes = json.loads(nodes_json or "{}")
        except ValueError:
            return ()
        by_port = {dn.ports["data"]: dn.name for dn in self.plan.datanodes}
        names = []
        for key, row in nodes.items():
            port = str(row.get("xferaddr") or key).rpartition(":")[2]
            names.append(by_port.get(int(port), key) if port.isdigit() else key)
        return tuple(sorted(names))

    def out_of_safemode(self) -> bool:
        """Whether the NameNode answers and is out of safe mode."""
        st = self.state()
        return st.answered and st.safemode is False

    def datanode_registered(self, i: int) -> bool:
        """Whether DataNode ``i``'s current process has registered with the current NameNode: its own
        JMX says its block-pool service is RUNNING (registered) and the NameNode counts it live. (The
        NameNode alone would still count a just-restarted DataNode live from its previous life.)"""
        dn = self.plan.datanodes[i]
        if not dn.alive or dn.paused:
            return False
        info = jmx_bean(dn.ports["http"], "Hadoop:service=DataNode,name=DataNodeInfo") or {}
        try:
            actors = json.loads(info.get("BPServiceActorInfo") or "[]")
        except ValueError:
            return False
        running = any(a.get("ActorState") == "RUNNING" for a in actors)
        return running and dn.name in self.state().live

    def wait_ready(self, timeout: float) -> HdfsState:
        """Wait until the NameNode is out of safe mode and counts every DataNode live; a node that
        exits meanwhile fails at once (:class:`StackError` with its log), and so does the timeout
        (naming what was seen, and the fix)."""
        seen: list[HdfsState] = [HdfsState(answered=False)]

        def ready() -> HdfsState | None:
            self._check_running()
            seen[0] = st = self.state()
            return st if st.safemode is False and len(st.live) == self.plan.n_datanodes else None

        got = poll(ready, timeout, lambda _: StackError(self._not_ready(seen[0], timeout)), interval=0.2)
        assert got is not None  # poll returns only a truthy answer
        return got

    def _not_ready(self, st: HdfsState, timeout: float) -> str:
        logs = self.plan.workdir / "logs"
        if not st.answered:
            return (f"HDFS NameNode did not answer JMX on {HOST}:{self.namenode.ports['http']} within {timeout:.0f}s "
                    f"(log {logs / 'namenode.log'}):\n{self.namenode.tail_log(20)}")
        if st.safemode:
            fix = (f"free disk space where {self.plan.workdir} is (the NameNode wants 100 MB free)"
                   if "resources are low" in st.safemode_reason.lower() else
                   f"the DataNodes have not reported the blocks: see their logs in {logs}, heal() restarts dead "
                   "ones, a new workdir starts empty")
            return f"HDFS NameNode still in safe mode after {timeout:.0f}s: {st.safemode_reason}; fix: {fix}"
        missing = sorted({dn.name for dn in self.plan.datanodes} - set(st.live))
        return (f"HDFS NameNode counts {len(st.live)} of {self.plan.n_datanodes} DataNodes live after {timeout:.0f}s "
                f"(missing {missing}, dead {list(st.dead)}); see their logs in {logs}")

    def _check_running(self) -> None:
        check_alive(self.plan.nodes(), "HDFS", spared=self.killed, cause=_exit_cause)

    def wait_registered(self, node: HdfsNode, timeout: float) -> None:
        def registered() -> bool:
            self._check_running()
            return self.datanode_registered(node.index)

        poll(registered, timeout, interval=0.2, on_timeout=lambda _: StackError(
            f"HDFS {node.name} did not register with the NameNode within {timeout:.0f}s; NameNode reports "
            f"{self.state()} (log {self.plan.workdir / 'logs' / (node.name + '.log')}):\n{node.tail_log(15)}"))


def _exit_cause(log: str) -> str:
    """Why an HDFS node exited, from its log: a port it could not bind (and the fix), or its first exception."""
    bind = re.search(r"BindException: Problem binding to \[([^\]]+)\]", log)
    cause = re.search(r"^[\w.$]+(?:Exception|Error): .*$", log, re.M)  # the first exception's line
    if bind:
        return f": port {bind.group(1)} is taken; fix: free it or let the plugin pick ports"
    return f": {cause.group(0)}" if cause else ""
