"""YARN as the stack's Spark cluster (:class:`~..base.SparkCluster`): what the runner and the faults use,
on the mini cluster the plugin starts (:class:`~.cluster.LocalYarnCluster`) or on one it attached to by its
Hadoop conf dir (:class:`~.attach.AttachedYarn`).

What the interface's words mean here: a *worker* is a NodeManager, the *master* the ResourceManager, an
*executor* a container of a job's application other than its ApplicationMaster's (signalled through the
RM's REST API: the same on any YARN), the launcher ``spark-submit --master yarn`` (:mod:`.launcher`). The
operations on the daemons themselves -- the loss of a NodeManager with its containers, an RM restart --
need the processes, so only the mini cluster has them (:class:`MiniYarnSparkCluster`): an attached cluster
(:class:`YarnSparkCluster`) lacks those capabilities, and a fault that needs one is refused when the run is
planned (:mod:`..capabilities`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.errors import StackError
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, Executor, LaunchOptions, LinkScope, Node, SparkCluster
from pytest_streamchaos.stack.driver.launcher import DriverSite
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.host import current as current_host
from pytest_streamchaos.stack.local.placement import LocalPlacement
from pytest_streamchaos.stack.yarn.attach import AttachedYarn, read_conf_dir
from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster
from pytest_streamchaos.stack.yarn.launcher import YarnJob, YarnLaunches, YarnSubmitLauncher
from pytest_streamchaos.stack.yarn.rest import ResourceManagerApi, YarnApiError, YarnContainer, YarnNode

if TYPE_CHECKING:
    from pytest_streamchaos.stack.fixtures import Stacks

#: the signals an executor's container can be given through YARN's API, and the command for each
API_SIGNALS = {signal.SIGKILL: "FORCEFUL_SHUTDOWN", signal.SIGTERM: "GRACEFUL_SHUTDOWN"}
#: the YARN settings a run's JSON records (failure detection, attempts)
REPORTED_CONF = ("yarn.nm.liveness-monitor.expiry-interval-ms", "yarn.resourcemanager.am.max-attempts",
                 "yarn.resourcemanager.recovery.enabled", "yarn.nodemanager.resource.memory-mb")


@dataclass
class ContainerExecutor:
    """An executor as a YARN container (:class:`~..base.Executor`), signalled through the RM's API."""

    container: YarnContainer
    api: ResourceManagerApi

    def __str__(self) -> str:
        return f"executor container {self.container.id} on {self.container.node_id}"

    @property
    def id(self) -> str:
        return self.container.id

    @property
    def pid(self) -> int | None:
        return None  # it runs wherever its NodeManager does

    @property
    def state(self) -> str | None:
        """``running`` while the RM lists it among its attempt's containers, else None."""
        try:
            running = {c.id for c in self.api.containers(self.container.app_id, self.container.attempt_id)}
        except YarnApiError:
            return "running"  # the RM between lives does not say it is gone
        return "running" if self.container.id in running else None

    @property
    def alive(self) -> bool:
        return self.state is not None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        command = API_SIGNALS.get(signal.Signals(sig))
        if command is None:
            raise StackError(f"{signal.Signals(sig).name} to a YARN container: YARN's API can kill a container "
                             "(SIGKILL, SIGTERM) but not pause it; pause an executor on the standalone cluster")
        self.api.signal_container(self.container.id, command)


@dataclass(frozen=True)
class ApiNode:
    """A NodeManager of an attached cluster, as its RM reports it (:class:`~..base.Node`)."""

    node: YarnNode

    @property
    def name(self) -> str:
        return f"nodemanager {self.node.id}"

    @property
    def alive(self) -> bool:
        return self.node.state == "RUNNING"

    def endpoint(self) -> Endpoint:
        host, _, port = self.node.id.rpartition(":")
        return Endpoint(self.name, "worker", host, {"rpc": int(port)})


class YarnSparkCluster(SparkCluster):
    """YARN behind the stack's interface through its ResourceManager's API (see the module docstring): what
    any YARN gives, an attached one included. The daemons' own faults are :class:`MiniYarnSparkCluster`'s."""

    def __init__(self, yarn: LocalYarnCluster | AttachedYarn, *, host: Host | None = None) -> None:
        self.yarn = yarn
        self.host = host or current_host()
        #: every launcher of jobs on it: its own, and Connect's on YARN (stack/connect/yarn.py)
        self.launchers: list[YarnLaunches] = []

    @classmethod
    def mini(cls, workdir: str | os.PathLike, *, java_home: str = "", start_timeout: float = 90.0,
             host: Host | None = None) -> MiniYarnSparkCluster:
        """The mini cluster (an RM and two NodeManagers), not started."""
        return MiniYarnSparkCluster(LocalYarnCluster(workdir, 2, java_home=java_home, start_timeout=start_timeout),
                                    host=host)

    @property
    def api(self) -> ResourceManagerApi:
        return self.yarn.api

    def submit_settings(self, spark_home: Path) -> tuple[dict[str, str], dict[str, str]]:
        return self.yarn.submit_settings(spark_home)

    # -- shape ---------------------------------------------------------------------------------
    @property
    def manager(self) -> str:
        return "yarn"

    @property
    def master_url(self) -> str:
        return "yarn"

    @property
    def effective_conf(self) -> Mapping[str, str]:
        conf = self.yarn.conf if isinstance(self.yarn, AttachedYarn) else read_conf_dir(self.yarn.conf_dir)
        return {k: conf[k] for k in REPORTED_CONF if k in conf}

    @property
    def link_scope(self) -> LinkScope:
        return LocalPlacement(self.host).link_scope

    def link_sides(self) -> list[tuple[str, str]]:
        return []  # the containers share this host's namespace; the job group's mark scopes network faults

    def host_links(self) -> str:
        """The loopback (:class:`~..capabilities.HostLinks`): the NodeManagers' containers are this host's processes."""
        return "loopback"

    @property
    def workers(self) -> Sequence[Node]:
        return [ApiNode(n) for n in sorted(self.api.nodes(), key=lambda n: n.id)]

    @property
    def masters(self) -> Sequence[Node]:
        return []

    def endpoints(self) -> list[Endpoint]:
        return [w.endpoint() for w in self.workers]

    def alive_workers(self) -> list[dict[str, Any]]:
        """The NodeManagers the RM counts RUNNING (``port``: their container-manager RPC port)."""
        try:
            nodes = self.api.nodes()
        except YarnApiError:
            return []
        return [{"id": n.id, "host": n.id.rpartition(":")[0], "port": int(n.id.rpartition(":")[2])}
                for n in nodes if n.state == "RUNNING"]

    # -- start / stop --------------------------------------------------------------------------
    def start(self) -> None:
        """Nothing: an attached YARN runs already."""

    def stop(self) -> None:
        for launcher in self.launchers:
            try:
                launcher.stop_all(timeout=15)
            except Exception:  # the cluster goes regardless
                pass

    def heal(self, timeout: float = 60.0) -> None:
        self.wait_for_workers(1, timeout)

    def wait_for_workers(self, k: int, timeout: float = 60.0) -> None:
        poll(lambda: len(self.alive_workers()) >= k, timeout, lambda _: TimeoutError(
            f"YARN: {len(self.alive_workers())} NodeManagers RUNNING after {timeout:.0f}s, waited for {k}"),
            interval=0.2)

    # -- executors: containers, through the API ------------------------------------------------
    def _node_id(self, i: int) -> str | None:
        workers = self.workers
        if not 0 <= i < len(workers):
            raise IndexError(f"index={i}: YARN has {len(workers)} NodeManagers")
        w = workers[i]
        if isinstance(w, ApiNode):
            return w.node.id
        rpc = str(w.endpoint().ports["rpc"])
        return next((n["id"] for n in self.alive_workers() if str(n["port"]) == rpc), None)

    def executors(self, i: int) -> Sequence[Executor]:
        """The executor containers NodeManager ``i`` runs now, of every job launched here."""
        node = self._node_id(i)
        return [e for job in self._jobs() if job.app_id for e in self.app_executors(job.app_id)
                if isinstance(e, ContainerExecutor) and e.container.node_id == node]

    def _jobs(self) -> list[YarnJob]:
        return [j for launcher in self.launchers for j in launcher.yarn_jobs if j.alive]

    def app_executors(self, app_id: str) -> Sequence[Executor]:
        from pytest_streamchaos.stack.yarn.faults import YarnAppFaults

        try:
            return [ContainerExecutor(c, self.api) for c in YarnAppFaults(self.api, app_id).executor_containers()]
        except (YarnApiError, StackError):
            return []

    def kill_executor(self, executor: Executor, sig: int = signal.SIGKILL) -> None:
        """Through the RM's API (a container's kill: SIGKILL or SIGTERM; it cannot freeze one)."""
        executor.kill(sig)

    def executor_state(self, executor: Executor) -> str | None:
        return executor.state

    # -- the job -------------------------------------------------------------------------------
    def driver_site(self) -> DriverSite:
        """``spark-submit --master yarn`` from this host, client or cluster mode."""
        return DriverSite(master_url="yarn", driver_host=self.driver_host, host=self.host,
                          executors=self.app_executors, deploy_modes=("client", "cluster"))

    def launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> YarnSubmitLauncher:
        """``spark-submit --master yarn`` of the user's jobs (:mod:`.launcher`), client or cluster mode."""
        launcher = YarnSubmitLauncher(self, self.driver_site(), workdir, options)
        self.launchers.append(launcher)
        return launcher


class MiniYarnSparkCluster(YarnSparkCluster):
    """The mini cluster the plugin starts (:class:`~.cluster.LocalYarnCluster`): YARN's API as on any YARN, and
    the daemons as processes -- a NodeManager's loss with its containers, the ResourceManager's kill and
    restart (the capabilities :class:`~..capabilities.WorkerKill`, :class:`~..capabilities.MasterKill`,
    :class:`~..capabilities.ActiveMaster`, :class:`~..capabilities.ResourceManagerRestart`)."""

    def __init__(self, yarn: LocalYarnCluster, *, host: Host | None = None) -> None:
        super().__init__(yarn, host=host)
        self.local = yarn

    @property
    def workers(self) -> Sequence[Node]:
        return self.local.nodemanagers

    @property
    def masters(self) -> Sequence[Node]:
        return [self.local.resourcemanager]

    def endpoints(self) -> list[Endpoint]:
        return self.local.endpoints()

    def start(self) -> None:
        self.local.start()

    def stop(self) -> None:
        super().stop()
        self.local.stop()

    def heal(self, timeout: float = 60.0) -> None:
        self.local.heal(timeout)

    def active_master(self) -> Node:
        return self.local.resourcemanager

    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """The loss of NodeManager ``i`` with its containers (SIGKILL whatever ``sig``: a lost node)."""
        self.local.kill_nodemanager(i)

    def restart_worker(self, i: int) -> Node:
        return self.local.restart_nodemanager(i, wait=False)

    def wait_gone(self, node: Node, timeout: float = 10.0) -> None:
        daemon = next(d for d in self.local.daemons() if d is node)
        procs = getattr(daemon, "processes", lambda: [] if not daemon.alive else [daemon.pid])
        poll(lambda: not procs(), timeout, lambda _: TimeoutError(f"YARN {daemon.name} still alive after {timeout}s"),
             interval=0.05)

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> Node:
        return self.kill_resourcemanager(sig)

    def restart_master(self, i: int) -> Node:
        return self.restart_resourcemanager()

    def kill_resourcemanager(self, sig: int = signal.SIGKILL) -> Node:
        return self.local.kill_resourcemanager(sig)

    def wait_resourcemanager_gone(self, timeout: float = 10.0) -> None:
        self.wait_gone(self.local.resourcemanager, timeout)

    def restart_resourcemanager(self) -> Node:
        return self.local.restart_resourcemanager(wait=False)


def session_cluster(stacks: Stacks, backend: str, ha: bool) -> SparkCluster:
    """YARN as the session's Spark cluster (the ``yarn`` manager's factory): the mini cluster, started on first
    use, or the existing one ``--chaos-yarn-conf`` names (attached: nothing started). Local backend only."""
    import pytest

    from pytest_streamchaos.stack.yarn.attach import attach

    if backend == "docker":
        pytest.skip("YARN runs on the local backend only (its NodeManagers are processes here); run this test "
                    "with --chaos-backend local")
    if ha:
        raise pytest.UsageError("@chaos(ha=True) is Spark standalone's two masters; on YARN the "
                                "ResourceManager's own HA is the cluster's: leave ha out with spark='yarn'")
    s = stacks.settings
    cluster: YarnSparkCluster = (YarnSparkCluster(attach(s.yarn_conf), host=stacks.host) if s.yarn_conf else
                                 YarnSparkCluster.mini(stacks.tmp.mktemp("yarn"), java_home=s.java_home,
                                                       start_timeout=s.start_timeout, host=stacks.host))
    return stacks.start(cluster)
