"""How a Spark standalone cluster is laid out and started: ports, directories, the cluster's settings,
each daemon's environment and command line, the HA mode's ZooKeeper config. Where each daemon runs is
the placement's (:mod:`..placement`)."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import TypeVar

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.machine import cds
from pytest_streamchaos.machine.environment import SparkEnvironment
from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.jvm import DAEMON_JAVA_OPTS, DAEMON_MEMORY, jvm_tmp_opts
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.process import Daemon, DaemonProcess
from pytest_streamchaos.stack.standalone.daemons import SparkMaster, SparkWorker, Starter, ZooKeeper

D = TypeVar("D", bound=Daemon)

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


class StandalonePlan:
    """The cluster's shape (``workers`` workers of ``worker_cores`` / ``worker_memory``, one master or two
    with ``ha``), settings and daemons; :meth:`lay_out` fixes the ports and makes the daemons' handles.
    ``fixed_ports`` pins chosen ports instead of allocated ones (keys ``master-<i>.rpc|webui|rest``,
    ``worker-<i>.rpc|webui``, ``zookeeper.client``)."""

    def __init__(self, workdir: Path, placement: Placement, *, workers: int, worker_cores: int, worker_memory: str,
                 ha: bool, worker_timeout_s: int, fixed_ports: dict[str, int]) -> None:
        self.workdir, self.placement = workdir, placement
        self.n_workers, self.worker_cores, self.worker_memory = workers, worker_cores, worker_memory
        self.ha, self.worker_timeout_s, self.fixed_ports = ha, worker_timeout_s, fixed_ports
        self.env: SparkEnvironment | None = None
        self.master_url = ""
        self.effective_conf: dict[str, str] = {}
        self.masters: list[SparkMaster] = []
        self.workers: list[SparkWorker] = []
        self.zookeeper: ZooKeeper | None = None
        self._conf: dict[str, str] = {}

    def daemons(self) -> list[Daemon]:
        """Every daemon: ZooKeeper (HA) first, then the masters, then the workers."""
        return [*([self.zookeeper] if self.zookeeper else []), *self.masters, *self.workers]

    def _port(self, key: str) -> int:
        return self.fixed_ports.get(key) or self.placement.host.ports.free()

    def lay_out(self, env: SparkEnvironment) -> None:
        """Directories, ports, the cluster's settings and every daemon's handle (nothing started)."""
        self.env = env
        for sub in ("logs", "conf", "work", "local"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        masters = [(self._port(f"master-{i}.rpc"), self._port(f"master-{i}.webui"), self._port(f"master-{i}.rest"))
                   for i in range(2 if self.ha else 1)]
        self.master_url = "spark://" + ",".join(f"{self.placement.address(f'master-{i}')}:{rpc}"
                                                for i, (rpc, _, _) in enumerate(masters))
        self._conf = self._settings()
        self.effective_conf = {**self._conf, "spark.worker.heartbeatInterval.s": str(self.worker_timeout_s / 4),
                               "daemon.memory": DAEMON_MEMORY, "daemon.javaOpts": DAEMON_JAVA_OPTS}
        if self.ha:
            self.effective_conf["zookeeper.maxSessionTimeout.ms"] = str(ZK_MAX_SESSION_MS)
        self.masters = [self._placed(SparkMaster(i, rpc, webui, rest, self._master_starter(i, rpc, webui, rest)))
                        for i, (rpc, webui, rest) in enumerate(masters)]
        self.workers = []
        for i in range(self.n_workers):
            port, webui = self._port(f"worker-{i}.rpc"), self._port(f"worker-{i}.webui")
            wdir = self.workdir / "work" / f"worker-{i}"
            start = self._worker_starter(i, port, webui, wdir)
            self.workers.append(self._placed(SparkWorker(i, port, webui, wdir, start)))

    def _placed(self, daemon: D) -> D:
        daemon.host = self.placement.address(daemon.name)
        return daemon

    def _settings(self) -> dict[str, str]:
        """The cluster's own settings (passed to every daemon as -D options)."""
        conf = {
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
                "spark.deploy.zookeeper.url": f"{self.placement.address('zookeeper')}:{zk_port}",
                "spark.deploy.zookeeper.dir": f"/spark-{uuid.uuid4().hex[:8]}",
                "spark.deploy.recoveryTimeout": str(self.worker_timeout_s),
            })
            self.zookeeper = self._placed(ZooKeeper(zk_port, lambda: self._start_zookeeper(zk_port)))
        return conf

    def base_env(self, host: str = HOST) -> dict[str, str]:
        """The environment of a daemon that binds ``host``."""
        assert self.env is not None
        return {
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

    def driver_env(self) -> dict[str, str]:
        """A complete environment for a driver (``spark-submit``) talking to this cluster: same Java,
        SPARK_HOME and empty conf dir, 127.0.0.1 binding, this Python for the Python workers."""
        if self.env is None:
            raise StackError("driver_env() before start(): the cluster is not running")
        env = {k: v for k, v in self.base_env().items() if not k.startswith("SPARK_DAEMON") and k != "SPARK_LOG_DIR"}
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        return env

    def _launch(self, argv: list[str], env: dict[str, str], name: str, job: bool = True) -> DaemonProcess:
        return self.placement.launch(argv, env=env, name=name, log_path=self.workdir / "logs" / f"{name}.log",
                                     cwd=self.workdir, job=job)

    def _opts(self) -> str:
        return " ".join(f"-D{k}={v}" for k, v in self._conf.items())

    def _spark_class(self, cls: str, args: list[str]) -> list[str]:
        assert self.env is not None
        return ["bash", str(self.env.spark_home / "bin" / "spark-class"), cls, *args]

    def _master_starter(self, i: int, rpc: int, webui: int, rest: int) -> Starter:
        def start() -> DaemonProcess:
            host = self.placement.address(f"master-{i}")
            env = self.base_env(host)
            env["SPARK_MASTER_OPTS"] = f"{self._opts()} -Dspark.master.rest.port={rest}"
            argv = self._spark_class(MASTER_CLASS, ["--host", host, "--port", str(rpc), "--webui-port", str(webui)])
            return self._launch(argv, env, f"master-{i}")

        return start

    def _worker_starter(self, i: int, port: int, webui: int, wdir: Path) -> Starter:
        def start() -> DaemonProcess:
            wdir.mkdir(parents=True, exist_ok=True)
            host = self.placement.address(f"worker-{i}")
            env = self.base_env(host)
            env["SPARK_WORKER_DIR"] = str(wdir)
            env["SPARK_WORKER_OPTS"] = f"{self._opts()} -Dspark.worker.ui.port={webui}"
            argv = self._spark_class(WORKER_CLASS, [
                "--host", host, "--port", str(port), "--webui-port", str(webui),
                "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                "--work-dir", str(wdir), self.master_url,
            ])
            return self._launch(argv, env, f"worker-{i}")

        return start

    def _start_zookeeper(self, port: int) -> DaemonProcess:
        """ZooKeeper is the cluster's coordination service, not the job: not in the job's group."""
        assert self.env is not None
        data = self.workdir / "zookeeper"
        if data.exists():
            shutil.rmtree(data)  # a restarted ZooKeeper starts empty; masters recreate their nodes
        data.mkdir(parents=True)
        cfg = self.workdir / "conf" / "zoo.cfg"
        cfg.write_text(read_fixture("zookeeper", "zoo.cfg.template").format(
            tick_ms=ZK_TICK_MS, data_dir=data, port=port, host=self.placement.address("zookeeper"),
            min_session_ms=2 * ZK_TICK_MS, max_session_ms=ZK_MAX_SESSION_MS))
        tmp_opts = jvm_tmp_opts(self.workdir / "local").split()
        argv = [str(self.env.java), "-Xmx128m", *DAEMON_JAVA_OPTS.split(), *tmp_opts,
                "-Dzookeeper.admin.enableServer=false", "-cp", f"{self.env.jars}/*", ZOOKEEPER_CLASS, str(cfg)]
        env = {k: v for k, v in self.base_env().items() if not k.startswith("SPARK_")}
        return self._launch(argv, env, "zookeeper", job=False)
