"""The ``local`` Spark backend: a real standalone cluster of JVM processes on 127.0.0.1.

One JVM per master and worker (``$SPARK_HOME/bin/spark-class ...Master`` / ``...Worker`` with
SPARK_HOME = the pyspark package), executors as the workers' children (same process group, so a
worker fault hits its executors too). Optional HA: a ZooKeeper server from the jars pyspark ships and
two masters with ``spark.deploy.recoveryMode=ZOOKEEPER``.

Everything binds 127.0.0.1 and every daemon port is allocated and pinned (see :attr:`endpoints`), so
network faults can find them. Failure detection is shortened for chaos runs; the values in force are
in :attr:`LocalSparkCluster.effective_conf`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.poll import poll, settled
from pytest_streamchaos.stack import cds
from pytest_streamchaos.stack.base import Endpoint, SparkCluster, StackError
from pytest_streamchaos.stack.environment import SparkEnvironment, check_spark_environment
from pytest_streamchaos.stack.ports import HOST, free_port, reserve
from pytest_streamchaos.stack.process import Daemon, ManagedProcess, terminate_all

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
ZOOKEEPER_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"

#: Daemon JVM flags, chosen for start-up CPU (measured: a master or worker burns ~6.5 CPU-s to boot
#: with defaults, ~3 with these; on 2 cores that is the cold-start time). C1 only and the serial GC:
#: the daemons do little work, so peak JIT performance does not matter. Bytecode verification off:
#: the classes are Spark's own jars from the pyspark wheel (saves ~15 %). IPv4 only: plain
#: 127.0.0.1 sockets rather than IPv4-mapped IPv6 ones.
DAEMON_JAVA_OPTS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Djava.net.preferIPv4Stack=true "
                    "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")
DAEMON_MEMORY = "256m"


def jvm_tmp_opts(tmp: os.PathLike | str) -> str:
    """JVM flags that keep its scratch files (unpacked native libraries) in ``tmp`` -- a directory
    the plugin removes -- and write no hsperfdata file that a SIGKILLed JVM would leave behind."""
    Path(tmp).mkdir(parents=True, exist_ok=True)
    return f"-Djava.io.tmpdir={tmp} -XX:-UsePerfData"

#: Seconds without a heartbeat before the master declares a worker dead (Spark default 60). Workers
#: heartbeat every timeout/4. A killed worker is noticed at once (its connection drops); a paused one
#: only after this timeout (up to twice it, the check runs every timeout).
WORKER_TIMEOUT_S = 10
#: ZooKeeper caps every session at maxSessionTimeout; Spark asks for 60 s (hard-coded), so this is
#: the time a killed active master keeps its leadership.
ZK_TICK_MS = 200
ZK_MAX_SESSION_MS = 4000


def _http_json(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - 127.0.0.1 only
            return json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


class LocalMaster(Daemon):
    """A Spark master JVM."""

    role = "master"

    def __init__(self, index: int, rpc_port: int, webui_port: int, rest_port: int, start) -> None:
        super().__init__(index, start)
        self.rpc_port, self.webui_port, self.rest_port = rpc_port, webui_port, rest_port

    @property
    def url(self) -> str:
        return f"spark://{self.host}:{self.rpc_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def state(self) -> dict[str, Any] | None:
        """The master's ``/json/`` document (``status``: ALIVE / STANDBY / RECOVERING ...), or None
        when it does not answer."""
        if not self.alive or self.paused:
            return None
        return _http_json(self.webui_url + "/json/")

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "master", self.host, {"rpc": self.rpc_port, "webui": self.webui_port,
                                                    "rest": self.rest_port})


class LocalWorker(Daemon):
    """A Spark worker JVM; its executors are its child processes (same process group)."""

    role = "worker"

    def __init__(self, index: int, port: int, webui_port: int, workdir: Path, start) -> None:
        super().__init__(index, start)
        self.port, self.webui_port, self.workdir = port, webui_port, workdir

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def executor_pids(self) -> list[int]:
        """PIDs of the executor JVMs (``CoarseGrainedExecutorBackend``) this worker runs."""
        if not self.alive:
            return []
        pids = []
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []
        for child in children:
            try:
                if EXECUTOR_CLASS in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                    pids.append(child.pid)
            except psutil.Error:
                continue
        return pids

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "worker", self.host, {"rpc": self.port, "webui": self.webui_port})


class LocalZooKeeper(Daemon):
    """A standalone ZooKeeper server (HA mode only)."""

    role = "zookeeper"

    def __init__(self, port: int, start) -> None:
        super().__init__(0, start)
        self.port = port

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "zookeeper", self.host, {"client": self.port})


class LocalSparkCluster(SparkCluster):
    """A Spark standalone cluster of local JVMs: 1 master (2 with ``ha``) and ``workers`` workers."""

    def __init__(
        self,
        workdir: str | os.PathLike,
        *,
        workers: int = 2,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        ha: bool = False,
        java_home: str = "",
        start_timeout: float = 90.0,
        fixed_ports: dict[str, int] | None = None,
        worker_timeout_s: int = WORKER_TIMEOUT_S,
    ) -> None:
        """``fixed_ports`` pins chosen ports instead of allocated ones; keys ``master-<i>.rpc``,
        ``master-<i>.webui``, ``master-<i>.rest``, ``worker-<i>.rpc``, ``worker-<i>.webui``,
        ``zookeeper.client``."""
        if workers < 1:
            raise StackError(f"workers={workers}: a Spark cluster needs at least 1 worker; fix: --chaos-workers 1")
        self.workdir = Path(workdir).absolute()
        self.n_workers, self.worker_cores, self.worker_memory = workers, worker_cores, worker_memory
        self.ha, self.java_home, self.start_timeout = ha, java_home, start_timeout
        self.fixed_ports = dict(fixed_ports or {})
        self.worker_timeout_s = worker_timeout_s
        self.env: SparkEnvironment | None = None
        self._masters: list[LocalMaster] = []
        self._workers: list[LocalWorker] = []
        self.zookeeper: LocalZooKeeper | None = None
        self.master_url = ""
        self.effective_conf: dict[str, str] = {}
        self._started = False
        self.nudged_workers = 0  #: workers restarted because they stalled before registering

    @classmethod
    def from_settings(cls, settings: Any, workdir: str | os.PathLike, *, ha: bool | None = None) -> LocalSparkCluster:
        """Build from the plugin's :class:`~pytest_streamchaos.settings.Settings` (``ha`` overrides
        ``settings.ha``)."""
        return cls(workdir, workers=settings.workers, worker_cores=settings.worker_cores,
                   worker_memory=settings.worker_memory, ha=settings.ha if ha is None else ha,
                   java_home=settings.java_home, start_timeout=settings.start_timeout)

    # -- shape ---------------------------------------------------------------------------------
    @property
    def masters(self) -> list[LocalMaster]:
        return list(self._masters)

    @property
    def workers(self) -> list[LocalWorker]:
        return list(self._workers)

    def endpoints(self) -> list[Endpoint]:
        """Every daemon with its pinned ports (for network faults)."""
        daemons: list[Any] = [*self._masters, *self._workers]
        if self.zookeeper:
            daemons.append(self.zookeeper)
        return [d.endpoint() for d in daemons]

    def processes(self) -> list[ManagedProcess]:
        """The current processes of every daemon (for recording pids/pgids)."""
        daemons: list[Daemon] = [*self._masters, *self._workers]
        if self.zookeeper:
            daemons.append(self.zookeeper)
        return [d.process for d in daemons if d.process is not None]

    # -- start / stop --------------------------------------------------------------------------
    def start(self) -> None:
        """Preflight, then start ZooKeeper (HA), the master(s) and every worker at once; wait until
        a master is ALIVE with all workers registered. On failure everything started is stopped."""
        if self._started:
            return
        self.env = check_spark_environment(self.java_home, self.fixed_ports)
        for port in self.fixed_ports.values():
            reserve(port)
        self._plan()
        self._started = True
        try:
            daemons: list[Daemon] = [*self._masters, *self._workers]
            if self.zookeeper:
                daemons.insert(0, self.zookeeper)
                self.zookeeper.start()
            for m in self._masters:
                m.start()
            # Workers boot while the master finishes its start-up (web UI, leader election), but only
            # once its RPC port listens: a worker that asks before the master is ALIVE retries only
            # after a hard-coded 5-15 s. Start-up is CPU-bound on small machines, so this gate costs
            # little; the stall nudger below covers the remaining race.
            self._wait_listening(self._masters[0], self._masters[0].rpc_port, self.start_timeout)
            for w in self._workers:
                w.start()
            # A daemon that exits during start-up will not come back by waiting: fail at once.
            self._wait_for_workers(self.n_workers, self.start_timeout, must_live=daemons,
                                   on_poll=self._stall_nudger())
        except BaseException:
            self.stop()
            raise

    def _wait_listening(self, d: Daemon, port: int, timeout: float) -> None:
        def listening() -> bool:
            _check_alive([d])  # a daemon that died fails the wait at once, with its log
            return self._listening(d, port)

        poll(listening, timeout, lambda _: TimeoutError(
            f"waited {timeout:.0f}s for Spark {d.name} to listen on {d.host}:{port}; "
            f"log {d.process.log_path}:\n{d.tail_log(20)}"))

    def _listening(self, d: Daemon, port: int) -> bool:
        try:
            conns = psutil.Process(d.pid).net_connections("inet")
        except psutil.Error:
            conns = []
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns)

    # -- what a backend changes: where a daemon lives and how it is started ----------------------
    def _address(self, name: str) -> str:
        """The address daemon ``name`` (``master-0``, ``worker-1``, ``zookeeper``) binds and is reached at."""
        return HOST

    def _launch(self, argv: list[str], env: dict[str, str], name: str, job: bool = True) -> ManagedProcess:
        """Start one daemon: a process (in the job's group, unless ``job=False``: ZooKeeper is the
        cluster's coordination service, not the job); a container in the docker backend."""
        return ManagedProcess(argv, env=env, log_path=self.workdir / "logs" / f"{name}.log", cwd=self.workdir,
                              name=name, job=job)

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM every daemon group at once, SIGKILL what is left after ``timeout``. Idempotent."""
        terminate_all(self.processes(), timeout=timeout)
        self._started = False

    # -- planning: ports, dirs, conf -----------------------------------------------------------
    def _port(self, key: str) -> int:
        return self.fixed_ports.get(key) or free_port()

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

    # -- observation ---------------------------------------------------------------------------
    def active_master(self) -> LocalMaster:
        """The master whose status is ALIVE (the only one without HA); raises StackError if none."""
        for m in self._masters:
            st = m.state()
            if st and st.get("status") == "ALIVE":
                return m
        seen = {m.name: (m.state() or {}).get("status", "no answer") for m in self._masters}
        raise StackError(f"no ALIVE Spark master; seen {seen}")

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the active master lists as ALIVE (its ``/json/`` entries); [] if no master is
        ALIVE."""
        for m in self._masters:
            st = m.state()
            if st and st.get("status") == "ALIVE":
                return [w for w in st.get("workers", []) if w.get("state") == "ALIVE"]
        return []

    def wait_for_workers(self, k: int, timeout: float = 60.0, *, exactly: bool = False) -> None:
        """Block until the active master reports at least ``k`` (``exactly`` k) ALIVE workers."""
        self._wait_for_workers(k, timeout, exactly=exactly)

    def _wait_for_workers(self, k: int, timeout: float, *, exactly: bool = False,
                          must_live: list[Daemon] | None = None,
                          on_poll: Callable[[list[dict[str, Any]]], None] | None = None) -> None:
        deadline = time.monotonic() + timeout
        seen: Any = None
        while True:
            _check_alive(must_live or [])
            alive = self.alive_workers()
            n = len(alive)
            if (n == k) if exactly else (n >= k):
                return
            if on_poll is not None:
                on_poll(alive)
            seen = {"alive_workers": [w.get("id") for w in alive],
                    "masters": {m.name: (m.state() or {}).get("status", "no answer") for m in self._masters}}
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"waited {timeout:.0f}s for {'exactly' if exactly else 'at least'} {k} ALIVE Spark "
                    f"worker(s); last seen {seen}; logs in {self.workdir / 'logs'}"
                )
            time.sleep(0.2)

    def _stall_nudger(self, grace: float = 1.5) -> Callable[[list[dict[str, Any]]], None]:
        """A poll callback that restarts (once per worker) a worker stuck before registration.

        Why: workers boot in parallel with the master. A worker whose first attempt came before the
        master listened ("Failed to connect") or before it was elected leader (the master answers
        "in standby", which the worker ignores silently) retries only after a hard-coded 5-15 s.
        Restarting it once the master has been ALIVE for ``grace`` seconds costs about 2-3 s.
        """
        alive_since: list[float] = []
        attempted_at: dict[int, float] = {}  # worker index -> when we first saw its connect attempt
        nudged: set[int] = set()

        def on_poll(alive: list[dict[str, Any]]) -> None:
            now = time.monotonic()
            for w in self._workers:
                if w.index not in attempted_at and w.process is not None \
                        and "Connecting to master" in w.process.log_since_start():
                    attempted_at[w.index] = now
            if not alive_since:
                if not any((m.state() or {}).get("status") == "ALIVE" for m in self._masters):
                    return
                alive_since.append(now)
            if now - alive_since[0] < grace:
                return
            registered = {w.get("port") for w in alive}
            for w in self._workers:
                if w.port in registered or w.index in nudged or not w.alive or w.paused:
                    continue
                log = w.process.log_since_start() if w.process else ""
                # Only an attempt made before the master was ALIVE (or a refused one) is stuck; a
                # later attempt is merely slow on a loaded machine and will succeed.
                early = w.index in attempted_at and attempted_at[w.index] < alive_since[0]
                if early or "Failed to connect to master" in log:
                    nudged.add(w.index)
                    attempted_at.pop(w.index, None)
                    self.nudged_workers += 1
                    self._kill(w)
                    w.start()

        return on_poll

    # -- faults --------------------------------------------------------------------------------
    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to worker ``i``'s process group (its executors included); a SIGKILL waits
        until the group is gone unless ``wait=False`` (then :meth:`wait_gone`)."""
        self._signal(self._workers[i], sig, wait)

    def pause_worker(self, i: int, wait: bool = True) -> None:
        """SIGSTOP worker ``i`` and its executors (``wait``: until all are stopped)."""
        self._pause(self._workers[i], wait)

    def wait_gone(self, daemon: Daemon, timeout: float = 10.0) -> None:
        """Wait until ``daemon`` (a worker or master of this cluster) and its group are gone after a
        kill sent with ``wait=False``; ``TimeoutError`` otherwise."""
        if daemon.process is not None:
            daemon.process.wait_gone(timeout)

    def wait_paused(self, daemon: Daemon, timeout: float = 5.0) -> None:
        """Wait until every process of ``daemon``'s group is stopped after ``pause_*(wait=False)``."""
        if daemon.process is not None:
            daemon.process.wait_paused(timeout)

    def resume_worker(self, i: int) -> None:
        """SIGCONT worker ``i`` and its executors."""
        self._resume(self._workers[i])

    def restart_worker(self, i: int) -> LocalWorker:
        """Kill worker ``i`` (if running) and start it again on the same ports."""
        w = self._workers[i]
        self._kill(w)
        self._wait_master_forgot(w.port)
        w.start()
        return w

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> LocalMaster:
        """Send ``sig`` to master ``i`` (default: the active one); returns it."""
        m = self._masters[i] if i is not None else self.active_master()
        self._signal(m, sig, wait)
        return m

    def pause_master(self, i: int, wait: bool = True) -> None:
        self._pause(self._masters[i], wait)

    def resume_master(self, i: int) -> None:
        self._resume(self._masters[i])

    def restart_master(self, i: int) -> LocalMaster:
        """Kill master ``i`` (if running) and start it again on the same ports."""
        m = self._masters[i]
        self._kill(m)
        m.start()
        return m

    def executors(self, i: int) -> list[int]:
        """The executor JVMs worker ``i`` runs (their pids are the handles)."""
        return self.workers[i].executor_pids()

    def signal_executor(self, executor: int, sig: int) -> None:
        """``sig`` to one executor JVM (ProcessLookupError when it is gone)."""
        os.kill(executor, sig)

    def executor_state(self, executor: int) -> str | None:
        """psutil's status of the executor (``running``, ``stopped`` ...), None when it is gone."""
        try:
            st = psutil.Process(executor).status()
        except psutil.Error:
            return None
        return None if st == psutil.STATUS_ZOMBIE else st

    def link_sides(self) -> list[tuple[str, str]]:
        """[]: the job shares this host's namespace; the job group's mark scopes network faults."""
        return []

    def kill_zookeeper(self, sig: int = signal.SIGKILL) -> None:
        if self.zookeeper is None:
            raise StackError("no ZooKeeper: the cluster was started without ha; fix: --chaos-ha")
        self._signal(self.zookeeper, sig)

    def _signal(self, d: Daemon, sig: int, wait: bool = True) -> None:
        if d.process is None:
            raise StackError(f"{d.name} was never started")
        d.process.signal(sig)
        if sig == signal.SIGKILL:
            d.process.paused = False
            # reap the group so `alive` is false when we return (or later, in wait_gone)
            d.process.kill(timeout=10, wait=wait)

    def _pause(self, d: Daemon, wait: bool = True) -> None:
        if d.process is None:
            raise StackError(f"{d.name} was never started")
        d.process.pause(wait=wait)

    def _resume(self, d: Daemon) -> None:
        if d.process is not None:
            d.process.resume()

    def _kill(self, d: Daemon) -> None:
        if d.process is not None:
            d.process.kill(timeout=10)

    def _wait_master_forgot(self, worker_port: int, timeout: float = 5.0) -> None:
        # A worker that re-registers at an address the master still lists as ALIVE is refused
        # ("Duplicate worker ID") and exits. A dead worker's connection drop is usually noticed at
        # once, so this wait is short; heal() restarts the worker again if it lost the race anyway.
        settled(lambda: not any(w.get("port") == worker_port for w in self.alive_workers()), timeout, interval=0.1)

    # -- healing -------------------------------------------------------------------------------
    def heal(self, timeout: float = 60.0) -> None:
        """Resume paused daemons, restart dead ones, and wait for a master ALIVE with all workers."""
        if not self._started:
            raise StackError("heal() before start(): the cluster is not running")
        deadline = time.monotonic() + timeout
        daemons: list[Daemon] = [*([self.zookeeper] if self.zookeeper else []), *self._masters, *self._workers]
        last: Exception | None = None
        nudge = self._stall_nudger(grace=3.0)
        while time.monotonic() < deadline:
            for d in daemons:
                if d.paused:
                    d.process.resume()  # type: ignore[union-attr]
            for d in daemons:
                if not d.alive:
                    self._kill(d)  # reap leftovers of its group (e.g. orphaned executors)
                    if isinstance(d, LocalWorker):
                        self._wait_master_forgot(d.port, timeout=2.0)
                    d.start()
            try:
                # Short slices: a restarted worker refused as a duplicate exits; the next round restarts it.
                self._wait_for_workers(self.n_workers, min(max(deadline - time.monotonic(), 0.1), 15.0),
                                       on_poll=nudge)
                return
            except TimeoutError as exc:
                last = exc
        raise TimeoutError(f"heal: the cluster did not get back to {self.n_workers} ALIVE workers within "
                           f"{timeout:.0f}s: {last}")

    def __enter__(self) -> LocalSparkCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _check_alive(daemons: list[Daemon]) -> None:
    for d in daemons:
        p = d.process
        if p is not None and not p.alive:
            raise StackError(f"Spark {d.name} exited with code {p.returncode} during start-up "
                             f"(log {p.log_path}):\n{p.tail_log(25)}")
