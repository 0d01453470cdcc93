"""The ``local`` Spark backend: a real standalone cluster of JVM processes on 127.0.0.1.

One JVM per master and worker (``$SPARK_HOME/bin/spark-class ...Master`` / ``...Worker`` with
SPARK_HOME = the pyspark package), executors as the workers' children (same process group, so a
worker fault hits its executors too). Optional HA: a ZooKeeper server from the jars pyspark ships and
two masters with ``spark.deploy.recoveryMode=ZOOKEEPER``.

Everything binds 127.0.0.1 and every daemon port is allocated and pinned (see :attr:`endpoints`), so
network faults can find them. Failure detection is shortened for chaos runs; the values in force are
in :attr:`LocalSparkCluster.effective_conf`.

The cluster is assembled from its parts: the daemons' handles and JVM flags (:mod:`.spark_daemons`),
their configuration and start (:mod:`.spark_launch`), the faults on them (:mod:`.spark_faults`); this
module holds its start-up, readiness and healing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, SparkCluster, StackError
from pytest_streamchaos.stack.environment import SparkEnvironment, check_spark_environment
from pytest_streamchaos.stack.host import current
from pytest_streamchaos.stack.process import Daemon, ManagedProcess, terminate_all
from pytest_streamchaos.stack.spark_daemons import LocalMaster, LocalWorker, LocalZooKeeper, check_alive
from pytest_streamchaos.stack.spark_faults import SparkFaults
from pytest_streamchaos.stack.spark_launch import WORKER_TIMEOUT_S, SparkLaunch


class LocalSparkCluster(SparkFaults, SparkLaunch, SparkCluster):
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
            current().ports.reserve(port)
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
            check_alive([d])  # a daemon that died fails the wait at once, with its log
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

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM every daemon group at once, SIGKILL what is left after ``timeout``. Idempotent."""
        terminate_all(self.processes(), timeout=timeout)
        self._started = False

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
        seen: list[dict[str, Any]] = [{}]

        def enough() -> bool:
            check_alive(must_live or [])
            alive = self.alive_workers()
            n = len(alive)
            if (n == k) if exactly else (n >= k):
                return True
            if on_poll is not None:
                on_poll(alive)
            seen[0] = {"alive_workers": [w.get("id") for w in alive],
                       "masters": {m.name: (m.state() or {}).get("status", "no answer") for m in self._masters}}
            return False

        poll(enough, timeout, lambda _: TimeoutError(
            f"waited {timeout:.0f}s for {'exactly' if exactly else 'at least'} {k} ALIVE Spark "
            f"worker(s); last seen {seen[0]}; logs in {self.workdir / 'logs'}"), interval=0.2)

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

    # -- healing -------------------------------------------------------------------------------
    def heal(self, timeout: float = 60.0) -> None:
        """Resume paused daemons, restart dead ones, and wait for a master ALIVE with all workers."""
        if not self._started:
            raise StackError("heal() before start(): the cluster is not running")
        deadline = time.monotonic() + timeout
        daemons: list[Daemon] = [*([self.zookeeper] if self.zookeeper else []), *self._masters, *self._workers]
        last: list[Exception] = []
        nudge = self._stall_nudger(grace=3.0)

        def healed() -> bool:
            self._revive(daemons)
            try:
                # Short slices: a restarted worker refused as a duplicate exits; the next round restarts it.
                self._wait_for_workers(self.n_workers, min(max(deadline - time.monotonic(), 0.1), 15.0),
                                       on_poll=nudge)
            except TimeoutError as exc:
                last[:] = [exc]
                return False
            return True

        poll(healed, timeout, interval=0.0, on_timeout=lambda _: TimeoutError(
            f"heal: the cluster did not get back to {self.n_workers} ALIVE workers within {timeout:.0f}s: "
            f"{last[0] if last else None}"))

    def _revive(self, daemons: list[Daemon]) -> None:
        """Resume the paused ones of ``daemons``, start the dead ones again."""
        for d in daemons:
            if d.paused:
                d.process.resume()  # type: ignore[union-attr]
        for d in daemons:
            if not d.alive:
                self._kill(d)  # reap leftovers of its group (e.g. orphaned executors)
                if isinstance(d, LocalWorker):
                    self._wait_master_forgot(d.port, timeout=2.0)
                d.start()

    def __enter__(self) -> LocalSparkCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
