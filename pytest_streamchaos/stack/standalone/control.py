"""What faults and heals do to a Spark standalone cluster's daemons: kill, pause, resume and restart
masters and workers (with their executors), wait for the effect, revive what is down. Every signal goes
to a daemon's whole process group (its container, on the docker backend)."""

from __future__ import annotations

import signal
from collections.abc import Sequence

from pytest_streamchaos.stack.process import Daemon
from pytest_streamchaos.stack.standalone.daemons import SparkMaster, SparkWorker
from pytest_streamchaos.stack.standalone.plan import StandalonePlan
from pytest_streamchaos.stack.standalone.readiness import Readiness


class DaemonControl:
    """Kill / pause / resume / restart of :class:`StandalonePlan`'s daemons."""

    def __init__(self, plan: StandalonePlan, readiness: Readiness) -> None:
        self.plan, self.readiness = plan, readiness

    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to worker ``i``'s process group (its executors included); a SIGKILL waits
        until the group is gone unless ``wait=False`` (then :meth:`wait_gone`)."""
        self.signal(self.plan.workers[i], sig, wait)

    def restart_worker(self, i: int) -> SparkWorker:
        """Kill worker ``i`` (if running) and start it again on the same ports."""
        w = self.plan.workers[i]
        self.kill(w)
        self.readiness.wait_master_forgot(w.port)
        w.start()
        return w

    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> SparkMaster:
        """Send ``sig`` to master ``i`` (default: the active one); returns it."""
        m = self.plan.masters[i] if i is not None else self.readiness.active_master()
        self.signal(m, sig, wait)
        return m

    def restart_master(self, i: int) -> SparkMaster:
        """Kill master ``i`` (if running) and start it again on the same ports."""
        m = self.plan.masters[i]
        self.kill(m)
        m.start()
        return m

    def signal(self, d: Daemon, sig: int, wait: bool = True) -> None:
        """``sig`` to ``d``'s group; a SIGKILL reaps it (unless ``wait=False``: then :meth:`wait_gone`)."""
        proc = d.started()
        proc.signal(sig)
        if sig == signal.SIGKILL:
            proc.paused = False
            # reap the group so `alive` is false when we return (or later, in wait_gone)
            proc.kill(timeout=10, wait=wait)

    def pause(self, d: Daemon, wait: bool = True) -> None:
        """SIGSTOP ``d`` and what it runs (``wait``: until all are stopped)."""
        d.started().pause(wait=wait)

    def resume(self, d: Daemon) -> None:
        if d.process is not None:
            d.process.resume()

    def kill(self, d: Daemon) -> None:
        """SIGKILL ``d``'s group and reap it (nothing when it never started)."""
        if d.process is not None:
            d.process.kill(timeout=10)

    def wait_gone(self, d: Daemon, timeout: float = 10.0) -> None:
        """Wait until ``d`` and its group are gone after a kill sent with ``wait=False``; ``TimeoutError`` otherwise."""
        if d.process is not None:
            d.process.wait_gone(timeout)

    def wait_paused(self, d: Daemon, timeout: float = 5.0) -> None:
        """Wait until every process of ``d``'s group is stopped after a pause sent with ``wait=False``."""
        if d.process is not None:
            d.process.wait_paused(timeout)

    def revive(self, daemons: Sequence[Daemon]) -> None:
        """Resume the paused ones of ``daemons``, start the dead ones again."""
        for d in daemons:
            if d.paused:
                d.started().resume()
        for d in daemons:
            if not d.alive:
                self.kill(d)  # reap leftovers of its group (e.g. orphaned executors)
                if isinstance(d, SparkWorker):
                    self.readiness.wait_master_forgot(d.port, timeout=2.0)
                d.start()
