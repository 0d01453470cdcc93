"""How the ``local`` Spark cluster's daemons are configured and started: ports, directories, the
cluster's settings, each daemon's environment and command line, the HA mode's ZooKeeper config.

:class:`SparkLaunch` is a part of :class:`~.spark_local.LocalSparkCluster`. Its hooks :meth:`_address`
(where a daemon lives) and :meth:`_launch` (how it is started) are what the docker backend changes.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.stack import cds
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.environment import SparkEnvironment
from pytest_streamchaos.stack.host import current
from pytest_streamchaos.stack.ports import HOST
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.spark_daemons import (
    DAEMON_JAVA_OPTS,
    DAEMON_MEMORY,
    LocalMaster,
    LocalWorker,
    LocalZooKeeper,
    jvm_tmp_opts,
)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
ZOOKEEPER_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"

#: Seconds without a heartbeat before the master declares a worker dead (Spark default 60). Workers
#: heartbeat every timeout/4. A killed worker is noticed at once (its connection drops); a paused one
#: only after this timeout (up to twice it, the check runs every timeout).
WORKER_TIMEOUT_S = 10
#: ZooKeeper caps every session at maxSessionTimeout; Spark asks for 60 s (hard-coded), so this is
#: the time a killed active master keeps its leadership.
ZK_TICK_MS = 200
ZK_MAX_SESSION_MS = 4000


class SparkLaunch:
    """Plans the cluster (:meth:`_plan`: ports, directories, settings, the daemon handles) and builds
    what each daemon starts with. Part of :class:`~.spark_local.LocalSparkCluster`, which sets the
    attributes below."""

    workdir: Path
    env: SparkEnvironment | None
    fixed_ports: dict[str, int]
    ha: bool
    n_workers: int
    worker_cores: int
    worker_memory: str
    worker_timeout_s: int
    master_url: str
    effective_conf: dict[str, str]
    zookeeper: LocalZooKeeper | None
    _masters: list[LocalMaster]
    _workers: list[LocalWorker]
    _conf: dict[str, str]

    # -- what a backend changes: where a daemon lives and how it is started ----------------------
    def _address(self, name: str) -> str:
        """The address daemon ``name`` (``master-0``, ``worker-1``, ``zookeeper``) binds and is reached at."""
        return HOST

    def _launch(self, argv: list[str], env: dict[str, str], name: str, job: bool = True) -> ManagedProcess:
        """Start one daemon: a process (in the job's group, unless ``job=False``: ZooKeeper is the
        cluster's coordination service, not the job); a container in the docker backend."""
        return ManagedProcess(argv, env=env, log_path=self.workdir / "logs" / f"{name}.log", cwd=self.workdir,
                              name=name, job=job)

    # -- planning: ports, dirs, conf -----------------------------------------------------------
    def _port(self, key: str) -> int:
        return self.fixed_ports.get(key) or current().ports.free()

    def _plan(self) -> None:
        assert self.env is not None
        for sub in ("logs", "conf", "work", "local"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        n_masters = 2 if self.ha else 1
        masters = [(self._port(f"master-{i}.rpc"), self._port(f"master-{i}.webui"),
                    self._port(f"master-{i}.rest")) for i in range(n_masters)]
        self.master_url = "spark://" + ",".join(f"{self._address(f'master-{i}')}:{rpc}"
                                                for i, (rpc, _, _) in enumerate(masters))
        conf: dict[str, str] = {
            "spark.worker.timeout": str(self.worker_timeout_s),
            "spark.master.rest.enabled": "false",  # cluster-mode submit falls back to the RPC gateway
            "spark.deploy.spreadOut": "true",
            "spark.deploy.maxExecutorRetries": "-1",  # chaos kills executors: never give up the app
            "spark.shuffle.service.enabled": "false",
            "spark.ui.reverseProxy": "false",
            "spark.worker.cleanup.enabled": "false",
        }
        if self.ha:
            zk_port = self._port("zookeeper.client")
            conf.update({
                "spark.deploy.recoveryMode": "ZOOKEEPER",
                "spark.deploy.zookeeper.url": f"{self._address('zookeeper')}:{zk_port}",
                "spark.deploy.zookeeper.dir": f"/spark-{uuid.uuid4().hex[:8]}",
                "spark.deploy.recoveryTimeout": str(self.worker_timeout_s),
            })
            self.zookeeper = LocalZooKeeper(zk_port, lambda: self._start_zookeeper(zk_port))
            self.zookeeper.host = self._address("zookeeper")
        self.effective_conf = dict(conf)
        self.effective_conf.update({
            "spark.worker.heartbeatInterval.s": str(self.worker_timeout_s / 4),
            "daemon.memory": DAEMON_MEMORY,
            "daemon.javaOpts": DAEMON_JAVA_OPTS,
        })
        if self.ha:
            self.effective_conf["zookeeper.maxSessionTimeout.ms"] = str(ZK_MAX_SESSION_MS)
        self._conf = conf
        self._masters = []
        for i, (rpc, webui, rest) in enumerate(masters):
            self._masters.append(LocalMaster(i, rpc, webui, rest, self._master_starter(i, rpc, webui, rest)))
            self._masters[-1].host = self._address(f"master-{i}")
        self._workers = []
        for i in range(self.n_workers):
            port, webui = self._port(f"worker-{i}.rpc"), self._port(f"worker-{i}.webui")
            wdir = self.workdir / "work" / f"worker-{i}"
            self._workers.append(LocalWorker(i, port, webui, wdir, self._worker_starter(i, port, webui, wdir)))
            self._workers[-1].host = self._address(f"worker-{i}")

    def _base_env(self, host: str = HOST) -> dict[str, str]:
        """The environment of a daemon that binds ``host``."""
        assert self.env is not None
        env = {
            "PATH": f"{self.env.java_home}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": os.environ.get("HOME", str(self.workdir)),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "TMPDIR": str(self.workdir / "local"),
            "JAVA_HOME": str(self.env.java_home),
            "SPARK_HOME": str(self.env.spark_home),
            # an empty conf dir (no user spark-defaults), the same on every run: Spark puts it on the
            # class path of every JVM, and a class-data sharing archive needs that path fixed (cds.py)
            "SPARK_CONF_DIR": str(cds.conf_dir()),
            "SPARK_LOG_DIR": str(self.workdir / "logs"),
            "SPARK_LOCAL_IP": host,
            "SPARK_PUBLIC_DNS": host,
            "SPARK_LOCAL_DIRS": str(self.workdir / "local"),
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            # java ignores TMPDIR: native libraries it unpacks (lz4, snappy) and perf data would
            # otherwise stay in /tmp after a SIGKILL
            "SPARK_DAEMON_JAVA_OPTS": f"{DAEMON_JAVA_OPTS} {jvm_tmp_opts(self.workdir / 'local')}",
            "SPARK_LAUNCHER_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",  # the spark-class helper JVM
            # Executors spawn Python workers; they must use this interpreter (and its site-packages).
            "PYSPARK_PYTHON": sys.executable,
        }
        return env

    def driver_env(self) -> dict[str, str]:
        """A complete environment for a driver (``spark-submit``) talking to this cluster: same Java,
        SPARK_HOME and empty conf dir, 127.0.0.1 binding, this Python for the Python workers."""
        if self.env is None:
            raise StackError("driver_env() before start(): the cluster is not running")
        env = {k: v for k, v in self._base_env().items()
               if not k.startswith("SPARK_DAEMON") and k != "SPARK_LOG_DIR"}
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        return env

    def _opts(self) -> str:
        return " ".join(f"-D{k}={v}" for k, v in self._conf.items())

    def _spark_class(self, cls: str, args: list[str]) -> list[str]:
        assert self.env is not None
        return ["bash", str(self.env.spark_home / "bin" / "spark-class"), cls, *args]

    def _master_starter(self, i: int, rpc: int, webui: int, rest: int) -> Callable[[], ManagedProcess]:
        def start() -> ManagedProcess:
            host = self._address(f"master-{i}")
            env = self._base_env(host)
            env["SPARK_MASTER_OPTS"] = f"{self._opts()} -Dspark.master.rest.port={rest}"
            argv = self._spark_class(MASTER_CLASS, ["--host", host, "--port", str(rpc), "--webui-port", str(webui)])
            return self._launch(argv, env, f"master-{i}")

        return start

    def _worker_starter(self, i: int, port: int, webui: int, wdir: Path) -> Callable[[], ManagedProcess]:
        def start() -> ManagedProcess:
            wdir.mkdir(parents=True, exist_ok=True)
            host = self._address(f"worker-{i}")
            env = self._base_env(host)
            env["SPARK_WORKER_DIR"] = str(wdir)
            env["SPARK_WORKER_OPTS"] = f"{self._opts()} -Dspark.worker.ui.port={webui}"
            argv = self._spark_class(WORKER_CLASS, [
                "--host", host, "--port", str(port), "--webui-port", str(webui),
                "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                "--work-dir", str(wdir), self.master_url,
            ])
            return self._launch(argv, env, f"worker-{i}")

        return start

    def _start_zookeeper(self, port: int) -> ManagedProcess:
        assert self.env is not None
        data = self.workdir / "zookeeper"
        if data.exists():
            shutil.rmtree(data)  # a restarted ZooKeeper starts empty; masters recreate their nodes
        data.mkdir(parents=True)
        cfg = self.workdir / "conf" / "zoo.cfg"
        cfg.write_text(read_fixture("zookeeper", "zoo.cfg.template").format(
            tick_ms=ZK_TICK_MS, data_dir=data, port=port, host=self._address("zookeeper"),
            min_session_ms=2 * ZK_TICK_MS, max_session_ms=ZK_MAX_SESSION_MS))
        tmp_opts = jvm_tmp_opts(self.workdir / "local").split()
        argv = [str(self.env.java), "-Xmx128m", *DAEMON_JAVA_OPTS.split(), *tmp_opts,
                "-Dzookeeper.admin.enableServer=false", "-cp", f"{self.env.jars}/*", ZOOKEEPER_CLASS, str(cfg)]
        env = {k: v for k, v in self._base_env().items() if not k.startswith("SPARK_")}
        return self._launch(argv, env, "zookeeper", job=False)
