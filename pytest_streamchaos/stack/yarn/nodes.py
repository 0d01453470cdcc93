"""The mini YARN's daemons: a ResourceManager and NodeManagers as restartable JVMs, and a NodeManager's
containers.

Every daemon is a :class:`~pytest_streamchaos.stack.process.DaemonProcess` in the job's group
(``job=True``): YARN and everything it runs are the system under test. The DefaultContainerExecutor
starts each container in a session of its own (``setsid``), so a container is not in its
NodeManager's process group and outlives a signal to it, as on a real node whose NodeManager dies.
What ties a node's containers to it here is a cgroup: each NodeManager starts in a child group of the
job's (``yarn<k>-nodemanager-<i>``), which every process it forks stays in whatever its session. "The loss of a
node" kills that whole group (:meth:`NodeManager.kill_node`); the reaper is told to do the same if
pytest dies. Without a job group (no cgroup v2 or iptables) the containers are found as the
NodeManager's descendants instead, which only works while it runs.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

import psutil

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack import host as stack_host
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.process import Daemon, DaemonProcess

RESOURCEMANAGER_CLASS = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
NODEMANAGER_CLASS = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
#: heaps: an idle RM holds a few applications' state, an NM a few containers' (RSS: docs/measurements.md)
RESOURCEMANAGER_HEAP = "256m"
NODEMANAGER_HEAP = "192m"


class YarnDaemon(Daemon):
    """A ResourceManager or NodeManager JVM: its current process and what it takes to start it again."""

    def __init__(self, role: str, index: int, ports: Mapping[str, int], start: Callable[[], DaemonProcess]) -> None:
        super().__init__(index, start)
        self.role = role  #: ``resourcemanager`` | ``nodemanager``
        self.ports = dict(ports)

    @property
    def name(self) -> str:
        """``resourcemanager`` or ``nodemanager-<i>`` (endpoints, timeline targets, log files)."""
        return self.role if self.role == "resourcemanager" else f"{self.role}-{self.index}"

    def endpoint(self) -> Endpoint:
        """The daemon with its ports, for network faults."""
        return Endpoint(self.name, self.role, self.host, dict(self.ports))


class NodeManager(YarnDaemon):
    """A NodeManager and its containers (see the module docstring)."""

    def __init__(self, index: int, ports: Mapping[str, int], start: Callable[[], DaemonProcess],
                 group: str | None = None) -> None:
        super().__init__("nodemanager", index, ports, start)
        #: the name of its cgroup under the job's group (unique per cluster: two clusters never share one)
        self.group = group or self.name

    @property
    def port(self) -> int:
        """Its container-manager RPC port: the port of the node id YARN gives it."""
        return self.ports["rpc"]

    def is_node(self, node_id: str) -> bool:
        """Whether YARN's ``node_id`` (``host:port`` of the container-manager RPC) names this NodeManager.
        The port decides: YARN names the host by what its address resolves back to (``localhost``)."""
        return node_id.rpartition(":")[2] == str(self.ports["rpc"])

    @property
    def cgroup(self) -> Path | None:
        """The cgroup this NodeManager and its containers run in (None without a job group)."""
        group = stack_host.current().isolating_group()
        return None if group is None or group.path is None else group.path / self.group

    def start(self) -> DaemonProcess:
        """Start the JVM, and tell the reaper to kill the node's containers too if pytest dies."""
        proc = super().start()
        path = self.cgroup
        if path is not None:
            stack_host.current().reaper.register_command(f"yarn-{self.group}-{os.getpid()}",
                                                         ["sh", "-c", _reap_script(path)])
        return proc

    def processes(self) -> list[int]:
        """PIDs of the NodeManager and every process of its containers."""
        path = self.cgroup
        if path is not None:
            return _cgroup_members(path)
        if self.process is None or not self.process.alive:
            return []
        try:
            return [self.process.pid, *(c.pid for c in psutil.Process(self.process.pid).children(recursive=True))]
        except psutil.Error:
            return []

    def container_processes(self) -> list[int]:
        """PIDs of the processes of this node's containers (its JVM left out)."""
        own = set(self.process.members()) if self.process is not None else set()
        return [p for p in self.processes() if p not in own]

    def kill_node(self, timeout: float = 15.0) -> None:
        """The loss of the node: SIGKILL the NodeManager and every process of its containers, and wait
        until none is left."""
        if self.process is not None:
            self.process.kill(timeout, wait=False)
        path = self.cgroup
        if path is not None and (path / "cgroup.kill").exists():
            (path / "cgroup.kill").write_text("1")  # the whole group at once, forks included
        else:
            for pid in self.processes():
                _kill(pid)
        poll(lambda: not self.processes(), timeout, lambda _: StackError(
            f"YARN {self.name}: processes {self.processes()} still alive {timeout:.0f}s after SIGKILL"), interval=0.05)
        if self.process is not None:
            self.process.wait_gone(timeout)

    def forget(self) -> None:
        """Drop the reaper's entry (after a clean stop: nothing of the node is left)."""
        if self.cgroup is not None:
            stack_host.current().reaper.unregister_command(f"yarn-{self.group}-{os.getpid()}")


def _cgroup_members(path: Path) -> list[int]:
    try:
        return [int(x) for x in (path / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap_script(path: Path) -> str:
    """What the reaper runs for a node's cgroup if pytest dies: kill what is in it, wait until it is
    empty (bounded), remove it, and the job group's directory too once that is empty (the job group's
    own clean-up ran earlier, while these processes still lived)."""
    return (f"echo 1 > {path}/cgroup.kill 2>/dev/null || for p in $(cat {path}/cgroup.procs); do kill -9 $p; done; "
            f"i=0; while [ -s {path}/cgroup.procs ] && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.1; done; "
            f"rmdir {path} 2>/dev/null; rmdir {path.parent} 2>/dev/null; true")
