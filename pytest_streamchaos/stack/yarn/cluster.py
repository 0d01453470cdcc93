"""A real YARN on 127.0.0.1: one ResourceManager and N NodeManagers of Hadoop 3.5.0, each its own JVM.

Start-up resolves the jars (once per machine), allocates every port, writes the conf dirs
(:mod:`.launch`), starts the RM and the NodeManagers at once (a NodeManager retries the RM every half
second until it listens) and waits -- by polling the RM's REST API, ``/ws/v1/cluster/info`` and
``/nodes`` -- until the RM serves and counts every NodeManager RUNNING.

The faults here act on the daemons as processes (host access): the loss of a NodeManager with its
containers, a NodeManager back, an RM restart (RM recovery is on, so applications survive it). What
YARN's own API can do to an application (signal a container, the AM's re-attempt) is
:mod:`.faults`', which needs no host access and works on an existing cluster too.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.environment import JAVA_FIX, find_java, java_version
from pytest_streamchaos.machine.steps import Step, jar_step
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.process import DaemonProcess, check_alive, terminate_all
from pytest_streamchaos.stack.service import Service
from pytest_streamchaos.stack.yarn import conf as yconf
from pytest_streamchaos.stack.yarn.launch import YarnLaunch, plan_ports
from pytest_streamchaos.stack.yarn.nodes import NodeManager, YarnDaemon
from pytest_streamchaos.stack.yarn.rest import ClusterInfo, ResourceManagerApi, YarnApiError, YarnNode

#: Hadoop 3.5.0's classes are Java 17 bytecode
MIN_JAVA = 17


class LocalYarnCluster(Service):
    """A ResourceManager and ``nodemanagers`` NodeManagers as local JVMs (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, nodemanagers: int = 2, *, java_home: str = "",
                 start_timeout: float = 60.0, default_fs: str = "file:///",
                 fixed_ports: Mapping[str, int] | None = None, conf: Mapping[str, str] | None = None) -> None:
        """``default_fs``: the filesystem submissions stage their files on (``hdfs://...`` with HDFS
        beside); ``fixed_ports`` pins ports (keys ``resourcemanager.<rpc|scheduler|tracker|admin|web>``,
        ``nodemanager-<i>.<rpc|localizer|web>``); ``conf`` adds or overrides ``yarn-site.xml`` entries."""
        if nodemanagers < 1:
            raise StackError(f"nodemanagers={nodemanagers}: YARN needs at least one NodeManager; fix: nodemanagers=2")
        self.workdir = Path(workdir).absolute()
        self.n_nodemanagers, self.java_home, self.start_timeout = nodemanagers, java_home, start_timeout
        self.default_fs, self.fixed_ports, self.extra_conf = default_fs, dict(fixed_ports or {}), dict(conf or {})
        self._rm: YarnDaemon | None = None
        self._nms: list[NodeManager] = []
        self._killed: set[str] = set()  # daemons down by our own hand (not a start-up failure)
        self._started = False

    # -- shape ---------------------------------------------------------------------------------
    @property
    def resourcemanager(self) -> YarnDaemon:
        """The ResourceManager's handle (``StackError`` before :meth:`start`)."""
        if self._rm is None:
            raise StackError("the YARN cluster is not started: call start() first")
        return self._rm

    @property
    def nodemanagers(self) -> list[NodeManager]:
        return list(self._nms)

    @property
    def conf_dir(self) -> Path:
        """The Hadoop conf dir of clients (``HADOOP_CONF_DIR`` / ``YARN_CONF_DIR`` of spark-submit), written
        by :meth:`start`."""
        return self.workdir / "conf"

    @property
    def api(self) -> ResourceManagerApi:
        """The ResourceManager's REST API."""
        return ResourceManagerApi(f"{yconf.HOST}:{self.resourcemanager.ports['web']}")

    def endpoints(self) -> list[Endpoint]:
        return [d.endpoint() for d in self.daemons()]

    def processes(self) -> list[DaemonProcess]:
        """The current process of every daemon that was started (not their containers)."""
        return [d.process for d in self.daemons() if d.process is not None]

    def daemons(self) -> list[YarnDaemon]:
        return [*([self._rm] if self._rm else []), *self._nms]

    def nodemanager(self, i: int) -> NodeManager:
        if not 0 <= i < len(self._nms):
            n = len(self._nms)
            raise StackError(f"no NodeManager {i}: the YARN cluster has {n} (indexes 0..{n - 1})")
        return self._nms[i]

    def nodemanager_of(self, node_id: str) -> NodeManager:
        """The NodeManager YARN calls ``node_id`` (``host:port``)."""
        for nm in self._nms:
            if nm.is_node(node_id):
                return nm
        raise StackError(f"no NodeManager of this cluster is YARN node {node_id} (their RPC ports: "
                         f"{[nm.ports['rpc'] for nm in self._nms]})")

    # -- for a submitter -----------------------------------------------------------------------
    def submit_settings(self, spark_home: Path) -> tuple[dict[str, str], dict[str, str]]:
        """(environment, Spark conf) of a submission to this cluster: its conf dir, and what only holds
        because every NodeManager runs on this machine -- Spark's jars and PySpark's archives of
        ``spark_home`` (the pyspark package) taken from where they are (``local:``, nothing uploaded),
        the staging dir in the cluster's workdir, and every Spark process on the loopback address."""
        archives = sorted((spark_home / "python" / "lib").glob("*.zip"))
        env = {"HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir), "SPARK_LOCAL_IP": yconf.HOST}
        if archives:
            env["PYSPARK_ARCHIVES_PATH"] = ",".join(f"local:{a}" for a in archives)
        conf = {"spark.yarn.jars": f"local:{spark_home / 'jars'}/*",
                "spark.yarn.stagingDir": (self.workdir / "staging").as_uri(),
                "spark.executorEnv.SPARK_LOCAL_IP": yconf.HOST, "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": yconf.HOST}
        return env, conf

    # -- start / stop --------------------------------------------------------------------------
    def start(self) -> ClusterInfo:
        """Check Java, resolve the jars, plan the ports, write the conf dirs, start every daemon and
        wait until the RM counts every NodeManager RUNNING. A failure raises :class:`StackError`
        naming the fix, with everything started stopped again."""
        if self._started:
            return self.wait_ready(self.start_timeout)
        java, java_home = self._check_java()
        jars = artifacts.resolve(artifacts.hadoop_yarn_jars(), java=str(java))
        rm_ports, nm_ports = plan_ports(self.n_nodemanagers, self.fixed_ports)
        plan = yconf.YarnPlan(self.workdir, rm_ports, nm_ports, self.default_fs, self.extra_conf)
        launch = YarnLaunch(plan, java, java_home, jars)
        launch.write_confs()
        self._rm = launch.resourcemanager()
        self._nms = [launch.nodemanager(i) for i in range(self.n_nodemanagers)]
        self._started = True
        try:
            for d in self.daemons():
                d.start()
            return self.wait_ready(self.start_timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM every daemon at once, SIGKILL what is left after ``timeout``, then kill whatever of
        the containers is still alive. Idempotent."""
        terminate_all(self.processes(), timeout=timeout)
        for nm in self._nms:
            if nm.processes():
                nm.kill_node()
            nm.forget()
        self._started = False

    def _check_java(self) -> tuple[Path, Path]:
        java, home = find_java(self.java_home)
        version = java_version(java)
        if version < MIN_JAVA:
            raise StackError(f"{java} is Java {version}; Hadoop 3.5's YARN needs Java {MIN_JAVA} or later; {JAVA_FIX}")
        return java, home

    # -- readiness -----------------------------------------------------------------------------
    def running_nodes(self) -> list[YarnNode]:
        """The NodeManagers the RM counts RUNNING, their memory announced, now ([] when it does not answer)."""
        try:
            return [n for n in self.api.nodes() if n.serving]
        except YarnApiError:
            return []

    def wait_ready(self, timeout: float | None = None) -> ClusterInfo:
        """Wait until the RM serves (``STARTED``, ``ACTIVE``) and counts every NodeManager of ours
        RUNNING with its memory announced (``YarnNode.serving``); a daemon that exits meanwhile fails at
        once, with its log."""
        timeout = self.start_timeout if timeout is None else timeout
        seen: list[object] = ["nothing: the RM did not answer"]

        def ready() -> ClusterInfo | None:
            self._check_running()
            try:
                info = self.api.info()
                running = [n.id for n in self.api.nodes() if n.serving]
            except YarnApiError as exc:
                seen[0] = str(exc)
                return None
            missing = [nm.name for nm in self._nms if not any(nm.is_node(n) for n in running)]
            seen[0] = f"RM {info.state}/{info.ha_state}, NodeManagers not RUNNING with memory announced: {missing}"
            return info if info.state == "STARTED" and info.ha_state == "ACTIVE" and not missing else None

        info = poll(ready, timeout, lambda _: StackError(
            f"YARN not ready after {timeout:.0f}s ({seen[0]}); see the logs in {self.workdir / 'logs'}"), interval=0.2)
        assert info is not None  # poll returns only a truthy value
        return info

    def _check_running(self) -> None:
        check_alive(self.daemons(), "YARN", spared=self._killed, during="")

    # -- faults on the daemons (host access) ------------------------------------------------------
    def kill_nodemanager(self, i: int) -> NodeManager:
        """The loss of NodeManager ``i`` with its containers (SIGKILL to all of them); returns once none
        is left. The RM declares the node LOST after :data:`~.conf.NM_EXPIRY_S` seconds without heartbeats,
        and its containers' applications hear of it then."""
        nm = self.nodemanager(i)
        self._killed.add(nm.name)
        nm.kill_node()
        return nm

    def restart_nodemanager(self, i: int, wait: bool = True, timeout: float | None = None) -> NodeManager:
        """NodeManager ``i`` back (its containers, if it still had any, killed first); with ``wait``,
        return once the RM counts it RUNNING again."""
        nm = self.nodemanager(i)
        if nm.processes():
            nm.kill_node()
        self._killed.discard(nm.name)
        nm.start()
        if wait:
            self._wait_node_running(nm, timeout or self.start_timeout)
        return nm

    def kill_resourcemanager(self, sig: int = signal.SIGKILL) -> YarnDaemon:
        """Send ``sig`` to the ResourceManager and return once it is gone (its state store stays)."""
        rm = self.resourcemanager
        self._killed.add(rm.name)
        if rm.process is not None:
            rm.process.signal(sig)
            rm.process.wait_gone(30)
        return rm

    def restart_resourcemanager(self, wait: bool = True, timeout: float | None = None) -> YarnDaemon:
        """Start the ResourceManager again (killed first if running) on the same ports and state store:
        it recovers the applications, and the NodeManagers and ApplicationMasters resync. With ``wait``,
        return once it serves with every NodeManager RUNNING."""
        rm = self.resourcemanager
        if rm.alive:
            self.kill_resourcemanager()
        self._killed.discard(rm.name)
        rm.start()
        if wait:
            self.wait_ready(timeout)
        return rm

    def heal(self, timeout: float | None = None) -> ClusterInfo:
        """Every daemon running again (resumed, or restarted) and the cluster ready."""
        if not self._started:
            raise StackError("heal() before start(): the YARN cluster is not running")
        deadline = time.monotonic() + (timeout or self.start_timeout)
        for d in self.daemons():
            if d.paused and d.process is not None:
                d.process.resume()
        if not self.resourcemanager.alive:
            self.restart_resourcemanager(wait=False)
        for nm in self._nms:
            if not nm.alive:
                self.restart_nodemanager(nm.index, wait=False)
        return self.wait_ready(max(0.1, deadline - time.monotonic()))

    def _wait_node_running(self, nm: NodeManager, timeout: float) -> None:
        def running() -> bool:
            self._check_running()
            return any(nm.is_node(n.id) for n in self.running_nodes())

        poll(running, timeout, lambda _: StackError(
            f"YARN {nm.name} (RPC port {nm.ports['rpc']}) not RUNNING at the RM after {timeout:.0f}s (log "
            f"{self.workdir / 'logs' / (nm.name + '.log')}):\n{nm.tail_log(15)}"), interval=0.2)


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The YARN managers' step of ``prepare``: YARN's jars (93 MB: only ``--for`` a manager on YARN asks for them)."""
    return {"yarn": jar_step(artifacts.hadoop_yarn_jars, line)}
