"""A Spark standalone cluster on any placement: one master (two with ZooKeeper in HA mode) and N
workers, executors as the workers' children, so a worker fault hits its executors too.

Composed of collaborators, each a class of its own: the layout and the daemons' commands
(:class:`~.plan.StandalonePlan`), what the masters report and the waits (:class:`~.readiness.Readiness`),
the faults and revivals of the daemons (:class:`~.control.DaemonControl`), the executors found in the
workers' process trees (:mod:`.executors`) and the driver's launch (:mod:`..driver`); where each daemon
runs is the :class:`~..placement.Placement`'s. This class starts, heals and stops the whole and answers the
stack interface (:class:`~..base.SparkCluster`) and every Spark capability (:mod:`..capabilities`) by
delegating.

Every daemon port is allocated and pinned (see :meth:`StandaloneCluster.endpoints`), so network faults
can find them. Failure detection is shortened for chaos runs; the values in force are in
:attr:`StandaloneCluster.effective_conf`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

from pytest_streamchaos.machine.environment import SparkEnvironment, check_spark_environment
from pytest_streamchaos.poll import poll
from pytest_streamchaos.settings import Settings
from pytest_streamchaos.stack.base import (
    Endpoint,
    Executor,
    LaunchOptions,
    LinkScope,
    Node,
    SparkCluster,
    StackError,
)
from pytest_streamchaos.stack.driver.launcher import DriverSite, SubmitLauncher
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.process import Daemon, DaemonProcess, terminate_all
from pytest_streamchaos.stack.standalone.control import DaemonControl
from pytest_streamchaos.stack.standalone.daemons import SparkMaster, SparkWorker, ZooKeeper
from pytest_streamchaos.stack.standalone.executors import ProcessExecutor
from pytest_streamchaos.stack.standalone.plan import WORKER_TIMEOUT_S, StandalonePlan
from pytest_streamchaos.stack.standalone.readiness import Readiness


class StandaloneCluster(SparkCluster):
    """A Spark standalone cluster of JVMs on ``placement`` (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, *, placement: Placement, workers: int = 2, worker_cores: int = 1,
                 worker_memory: str = "1g", ha: bool = False, java_home: str = "", start_timeout: float = 90.0,
                 fixed_ports: dict[str, int] | None = None, worker_timeout_s: int = WORKER_TIMEOUT_S) -> None:
        """``fixed_ports``: see :class:`~.plan.StandalonePlan`."""
        if workers < 1:
            raise StackError(f"workers={workers}: a Spark cluster needs at least 1 worker; fix: --chaos-workers 1")
        self.workdir = Path(workdir).absolute()
        self.placement = placement
        self.java_home, self.start_timeout = java_home, start_timeout
        self.plan = StandalonePlan(self.workdir, placement, workers=workers, worker_cores=worker_cores,
                                   worker_memory=worker_memory, ha=ha, worker_timeout_s=worker_timeout_s,
                                   fixed_ports=dict(fixed_ports or {}))
        self.readiness = Readiness(self.plan, placement)
        self.control = DaemonControl(self.plan, self.readiness)
        self._started = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.master_url or '-'} {'running' if self._started else 'stopped'}>"

    # -- shape ---------------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return self.plan.master_url

    @property
    def effective_conf(self) -> dict[str, str]:
        return self.plan.effective_conf

    @property
    def driver_host(self) -> str:
        return self.placement.driver_host

    @property
    def link_scope(self) -> LinkScope:
        return self.placement.link_scope

    @property
    def env(self) -> SparkEnvironment | None:
        """What the cluster runs with (Java, SPARK_HOME), once started."""
        return self.plan.env

    @property
    def ha(self) -> bool:
        return self.plan.ha

    @property
    def masters(self) -> list[SparkMaster]:
        return list(self.plan.masters)

    @property
    def workers(self) -> list[SparkWorker]:
        return list(self.plan.workers)

    @property
    def zookeeper(self) -> ZooKeeper | None:
        return self.plan.zookeeper

    @property
    def nudged_workers(self) -> int:
        """Workers restarted because they stalled before registering."""
        return self.readiness.nudged_workers

    def endpoints(self) -> list[Endpoint]:
        """Every daemon with its pinned ports (for network faults)."""
        return [d.endpoint() for d in self.plan.daemons()]

    def processes(self) -> list[DaemonProcess]:
        """The current processes of every daemon (for recording pids/pgids)."""
        return [d.process for d in self.plan.daemons() if d.process is not None]

    def driver_env(self) -> dict[str, str]:
        """A complete environment for a driver (``spark-submit``) talking to this cluster."""
        return self.plan.driver_env()

    # -- start / stop / heal -----------------------------------------------------------------------
    def start(self) -> None:
        """Preflight, then start ZooKeeper (HA), the master(s) and every worker at once; wait until
        a master is ALIVE with all workers registered. On failure everything started is stopped."""
        if self._started:
            return
        env = check_spark_environment(self.java_home, self.plan.fixed_ports)
        for port in self.plan.fixed_ports.values():
            self.placement.host.ports.reserve(port)
        self.placement.prepare()
        self.plan.lay_out(env)
        self._started = True
        try:
            self._start_daemons()
        except BaseException:
            self.stop()
            raise

    def _start_daemons(self) -> None:
        plan, ready = self.plan, self.readiness
        if plan.zookeeper:
            plan.zookeeper.start()
        for m in plan.masters:
            m.start()
        # Workers boot while the master finishes its start-up (web UI, leader election), but only
        # once its RPC port listens: a worker that asks before the master is ALIVE retries only
        # after a hard-coded 5-15 s. Start-up is CPU-bound on small machines, so this gate costs
        # little; the stall nudger below covers the remaining race.
        ready.wait_listening(plan.masters[0], plan.masters[0].rpc_port, self.start_timeout)
        for w in plan.workers:
            w.start()
        # A daemon that exits during start-up will not come back by waiting: fail at once.
        ready.wait_for_workers(plan.n_workers, self.start_timeout, must_live=plan.daemons(),
                               on_poll=ready.stall_nudger(self._nudge))

    def _nudge(self, w: SparkWorker) -> None:
        self.control.kill(w)
        w.start()

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM every daemon group at once, SIGKILL what is left after ``timeout``. Idempotent."""
        procs = self.processes()
        terminate_all(procs, timeout=timeout)
        self.placement.release(procs)
        self._started = False

    def heal(self, timeout: float = 60.0) -> None:
        """Resume paused daemons, restart dead ones, and wait for a master ALIVE with all workers."""
        if not self._started:
            raise StackError("heal() before start(): the cluster is not running")
        deadline = time.monotonic() + timeout
        daemons: list[Daemon] = self.plan.daemons()
        last: list[Exception] = []
        nudge = self.readiness.stall_nudger(self._nudge, grace=3.0)

        def healed() -> bool:
            self.control.revive(daemons)
            try:
                # Short slices: a restarted worker refused as a duplicate exits; the next round restarts it.
                self.readiness.wait_for_workers(self.plan.n_workers, min(max(deadline - time.monotonic(), 0.1), 15.0),
                                                on_poll=nudge)
            except TimeoutError as exc:
                last[:] = [exc]
                return False
            return True

        poll(healed, timeout, interval=0.0, on_timeout=lambda _: TimeoutError(
            f"heal: the cluster did not get back to {self.plan.n_workers} ALIVE workers within {timeout:.0f}s: "
            f"{last[0] if last else None}"))

    # -- the stack interface: observation and faults (delegated) ---------------------------------
    def active_master(self) -> SparkMaster:
        return self.readiness.active_master()

    def alive_workers(self) -> list[dict[str, Any]]:
        return self.readiness.alive_workers()

    def wait_for_workers(self, k: int, timeout: float = 60.0, *, exactly: bool = False) -> None:
        """Block until the active master reports at least ``k`` (``exactly`` k) ALIVE workers."""
        self.readiness.wait_for_workers(k, timeout, exactly=exactly)

    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        self.control.kill_worker(i, sig, wait)

    def restart_worker(self, i: int) -> SparkWorker:
        return self.control.restart_worker(i)

    def pause_worker(self, i: int, wait: bool = True) -> None:
        self.control.pause(self.plan.workers[i], wait)

    def resume_worker(self, i: int) -> None:
        self.control.resume(self.plan.workers[i])

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> SparkMaster:
        return self.control.kill_master(i, sig, wait)

    def restart_master(self, i: int) -> SparkMaster:
        return self.control.restart_master(i)

    def pause_master(self, i: int, wait: bool = True) -> None:
        self.control.pause(self.plan.masters[i], wait)

    def resume_master(self, i: int) -> None:
        self.control.resume(self.plan.masters[i])

    def wait_gone(self, node: Node, timeout: float = 10.0) -> None:
        self.control.wait_gone(self._daemon(node), timeout)

    def wait_paused(self, node: Node, timeout: float = 5.0) -> None:
        self.control.wait_paused(self._daemon(node), timeout)

    def _daemon(self, node: Node) -> Daemon:
        """This cluster's daemon named like ``node`` (a handle it handed out)."""
        for d in self.plan.daemons():
            if d.name == node.name:
                return d
        raise StackError(f"{node.name} is not a daemon of this cluster: its daemons are "
                         f"{[d.name for d in self.plan.daemons()]}")

    def executors(self, i: int) -> list[ProcessExecutor]:
        """The executor JVMs worker ``i`` runs now."""
        return self.plan.workers[i].executors()

    def app_executors(self, app_id: str) -> list[Executor]:
        """The executors of application ``app_id`` on every worker (found in the workers' process trees)."""
        return [e for w in self.plan.workers for e in w.executors(app_id)]

    def kill_executor(self, executor: Executor, sig: int = signal.SIGKILL) -> None:
        executor.kill(sig)

    def pause_executor(self, executor: Executor) -> None:
        executor.kill(signal.SIGSTOP)

    def resume_executor(self, executor: Executor) -> None:
        with contextlib.suppress(ProcessLookupError):  # gone meanwhile: nothing to resume
            executor.kill(signal.SIGCONT)

    def executor_state(self, executor: Executor) -> str | None:
        return executor.state

    def link_sides(self) -> list[tuple[str, str]]:
        """Where the job's side of a link is: the workers' namespaces (their executors), where they have
        their own; [] when they share this host's."""
        return self.placement.link_sides(self.plan.workers)

    def host_links(self) -> str:
        """Where the host's network rules see the job's links (:class:`~..capabilities.HostLinks`)."""
        return "loopback" if self.placement.shares_host_network else "namespaces"

    def driver_site(self) -> DriverSite:
        """Drivers on this host submitted to this cluster; a job's executors are found in its workers."""
        return DriverSite(master_url=self.master_url, driver_host=self.driver_host, host=self.placement.host,
                          executors=self.app_executors)

    def launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> SubmitLauncher:
        """A launcher of drivers on this host for this cluster (``spark-submit --master <this cluster>`` in
        client mode: :mod:`..driver`)."""
        return SubmitLauncher(self.driver_site(), workdir, options or LaunchOptions())

    @classmethod
    def settings_kwargs(cls, settings: Settings, *, ha: bool | None = None) -> dict[str, object]:
        """The constructor's arguments from the plugin's :class:`~pytest_streamchaos.settings.Settings`."""
        return {"workers": settings.workers, "worker_cores": settings.worker_cores,
                "worker_memory": settings.worker_memory, "ha": settings.ha if ha is None else ha,
                "java_home": settings.java_home, "start_timeout": settings.start_timeout}


