"""What one pytest session owns of this machine: the ports it handed out, the reaper (what must die with
pytest), the job group (the job's network identity) and the faults' host-wide machinery (their iptables
chain, the loopback's shaper, the probed capabilities).

One :class:`Host` per session: the session's stack (``stack.fixtures.Stacks``) makes it, hands it to every
cluster it starts, makes it :func:`current` for the session (what the faults and helper processes started
without one use) and closes it at the end: the rules, the shaping and the job group are removed then
(the reaper's watchdog still acts on what is registered when the process exits). A test that needs
one of them gets it from the ``streamchaos_host`` fixture; a script (a benchmark, ``python -m``) gets a
host of its own on first use of :func:`current`, closed when the interpreter exits.
"""

from __future__ import annotations

import atexit
import itertools
import os
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from pytest_streamchaos.machine.ports import PortRegistry
from pytest_streamchaos.stack.jobgroup import JobGroup
from pytest_streamchaos.stack.reaper import Reaper

T = TypeVar("T")
_numbers = itertools.count(1)


class Host:
    """This machine's resources as one session owns them (see the module docstring)."""

    def __init__(self) -> None:
        self.number = next(_numbers)
        self.ports = PortRegistry()
        self._lock = threading.RLock()
        self._reaper: Reaper | None = None
        self._reaper_pid = 0
        self._group: JobGroup | None = None
        self._shared: dict[Hashable, tuple[Any, Callable[[Any], None] | None]] = {}
        self.closed = False

    def __repr__(self) -> str:
        return f"<Host {self.number}{' closed' if self.closed else ''}>"

    @property
    def reaper(self) -> Reaper:
        """The watchdog that kills, runs and removes what is registered with it when this process dies,
        started on first use (a forked child gets a watchdog of its own)."""
        with self._lock:
            if self._reaper is None or self._reaper_pid != os.getpid() or not self._reaper.alive:
                self._reaper, self._reaper_pid = Reaper(), os.getpid()
            return self._reaper

    @property
    def job_group(self) -> JobGroup:
        """The cgroup the job's processes start in and the marking of their connections, set up on first
        use (check :attr:`JobGroup.available`)."""
        with self._lock:
            if self._group is None:
                suffix = "" if self.number == 1 else f"-{self.number}"
                self._group = JobGroup(self.reaper, name=f"streamchaos-{os.getpid()}{suffix}",
                                       chain=f"SC-JOB-{os.getpid()}{suffix}").setup()
            return self._group

    def isolating_group(self) -> JobGroup | None:
        """The job group when one was set up and isolates the job (without setting one up), else None."""
        g = self._group
        return g if g is not None and g.available else None

    def shared(self, key: Hashable, make: Callable[[], T], *, valid: Callable[[T], bool] = lambda _: True,
               close: Callable[[T], None] | None = None) -> T:
        """One ``make()`` per ``key`` on this host (made again when ``valid`` says the kept one is stale):
        the host-wide machinery of the faults (their chain, the shaper, the capabilities). :meth:`close`
        calls ``close`` on it (remove the rules, restore the loopback)."""
        with self._lock:
            kept = self._shared.get(key)
            if kept is None or not valid(kept[0]):
                kept = self._shared[key] = (make(), close)
            return kept[0]

    def close(self) -> None:
        """Remove what the faults left (rules, shaping) and the job group. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            for thing, close in self._shared.values():
                try:
                    if close is not None:
                        close(thing)
                except Exception:  # clean up the rest regardless
                    pass
            self._shared.clear()
            if self._group is not None:
                self._group.close()
            # the watchdog stays: at this process's exit it still kills and removes whatever is
            # registered then (a group that would not stop, a cgroup that still had processes)


_current: Host | None = None
_own: Host | None = None
_current_lock = threading.Lock()


def current() -> Host:
    """The session's host while a session runs (:meth:`activate`), else one of this process's own,
    made on first use and closed at exit."""
    global _own
    with _current_lock:
        if _current is not None:
            return _current
        if _own is None or _own.closed:
            _own = Host()
            atexit.register(_own.close)
        return _own


@contextmanager
def activate(host: Host) -> Iterator[Host]:
    """Make ``host`` :func:`current` while the block runs (a session's stack, for its whole session)."""
    global _current
    with _current_lock:
        before, _current = _current, host
    try:
        yield host
    finally:
        with _current_lock:
            _current = before
