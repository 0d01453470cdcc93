"""What faults do to the ``local`` Spark cluster's daemons: kill, pause, resume and restart masters,
workers (with their executors) and ZooKeeper; find and signal single executors.

:class:`SparkFaults` is a part of :class:`~.spark_local.LocalSparkCluster` (the fault operations of the
stack interface, :class:`~.base.SparkCluster`). Every signal goes to a daemon's whole process group.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any

import psutil

from pytest_streamchaos.poll import settled
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.process import Daemon
from pytest_streamchaos.stack.spark_daemons import LocalMaster, LocalWorker, LocalZooKeeper


class SparkFaults:
    """Kill / pause / resume / restart of the daemons, and the executors' handles. Part of
    :class:`~.spark_local.LocalSparkCluster`, which sets the attributes below."""

    zookeeper: LocalZooKeeper | None
    _masters: list[LocalMaster]
    _workers: list[LocalWorker]

    if TYPE_CHECKING:  # the cluster's observation (spark_local.LocalSparkCluster)
        def active_master(self) -> LocalMaster: ...

        def alive_workers(self) -> list[dict[str, Any]]: ...

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
        return self._workers[i].executor_pids()

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
