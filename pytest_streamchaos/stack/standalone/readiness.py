"""What a Spark standalone cluster's masters report, and the waits built on it: the active master, its
ALIVE workers, a daemon listening, and the nudge of a worker stuck before it registered."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pytest_streamchaos.poll import poll, settled
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.process import Daemon, check_alive
from pytest_streamchaos.stack.standalone.daemons import SparkMaster, SparkWorker
from pytest_streamchaos.stack.standalone.plan import StandalonePlan

OnPoll = Callable[[list[dict[str, Any]]], None]


class Readiness:
    """The cluster's state as its masters report it (:class:`StandalonePlan`'s daemons), and the waits."""

    def __init__(self, plan: StandalonePlan, placement: Placement) -> None:
        self.plan, self.placement = plan, placement
        self.nudged_workers = 0  #: workers restarted because they stalled before registering

    def active_master(self) -> SparkMaster:
        """The master whose status is ALIVE (the only one without HA); raises StackError if none."""
        for m in self.plan.masters:
            st = m.state()
            if st and st.get("status") == "ALIVE":
                return m
        raise StackError(f"no ALIVE Spark master; seen {self._statuses()}")

    def _statuses(self) -> dict[str, str]:
        return {m.name: (m.state() or {}).get("status", "no answer") for m in self.plan.masters}

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the active master lists as ALIVE (its ``/json/`` entries); [] if no master is ALIVE."""
        for m in self.plan.masters:
            st = m.state()
            if st and st.get("status") == "ALIVE":
                return [w for w in st.get("workers", []) if w.get("state") == "ALIVE"]
        return []

    def wait_listening(self, d: Daemon, port: int, timeout: float) -> None:
        """Until ``d`` accepts connections on ``port``; a daemon that died fails the wait at once, with its log."""
        def listening() -> bool:
            check_alive([d], "Spark")
            return self.placement.listening(d, port)

        poll(listening, timeout, lambda _: TimeoutError(
            f"waited {timeout:.0f}s for Spark {d.name} to listen on {d.host}:{port}; "
            f"log {d.started().log_path}:\n{d.tail_log(20)}"))

    def wait_for_workers(self, k: int, timeout: float, *, exactly: bool = False,
                         must_live: Sequence[Daemon] = (), on_poll: OnPoll | None = None) -> None:
        """Until the active master reports at least ``k`` (``exactly`` k) ALIVE workers; one of ``must_live``
        that exits fails the wait at once; ``on_poll`` sees the ALIVE workers on every look that falls short."""
        seen: list[dict[str, Any]] = [{}]

        def enough() -> bool:
            check_alive(must_live, "Spark")
            alive = self.alive_workers()
            n = len(alive)
            if (n == k) if exactly else (n >= k):
                return True
            if on_poll is not None:
                on_poll(alive)
            seen[0] = {"alive_workers": [w.get("id") for w in alive], "masters": self._statuses()}
            return False

        poll(enough, timeout, lambda _: TimeoutError(
            f"waited {timeout:.0f}s for {'exactly' if exactly else 'at least'} {k} ALIVE Spark "
            f"worker(s); last seen {seen[0]}; logs in {self.plan.workdir / 'logs'}"), interval=0.2)

    def wait_master_forgot(self, worker_port: int, timeout: float = 5.0) -> None:
        """Until no ALIVE worker is listed at ``worker_port``. A worker that re-registers at an address the
        master still lists as ALIVE is refused ("Duplicate worker ID") and exits. A dead worker's connection
        drop is usually noticed at once, so this wait is short; a heal restarts the worker again if it lost
        the race anyway."""
        settled(lambda: not any(w.get("port") == worker_port for w in self.alive_workers()), timeout, interval=0.1)

    def stall_nudger(self, restart: Callable[[SparkWorker], None], grace: float = 1.5) -> OnPoll:
        """A :meth:`wait_for_workers` callback that restarts (once per worker, with ``restart``) a worker
        stuck before registration.

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
            for w in self.plan.workers:
                if w.index not in attempted_at and w.process is not None \
                        and "Connecting to master" in w.process.log_since_start():
                    attempted_at[w.index] = now
            if not alive_since:
                if not any((m.state() or {}).get("status") == "ALIVE" for m in self.plan.masters):
                    return
                alive_since.append(now)
            if now - alive_since[0] < grace:
                return
            registered = {w.get("port") for w in alive}
            for w in self.plan.workers:
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
                    restart(w)

        return on_poll
