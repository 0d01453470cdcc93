"""The one deadline-poll helper: call a condition until it holds, or fail saying what was awaited.

Nothing in the harness waits by ``sleep`` alone: it polls for the condition and, when it gives up,
raises an error that says what it waited for and what it saw last. :func:`poll` is the primitive
(the caller builds the error); :func:`wait_for` raises ``TimeoutError`` with a standard message
(also importable from :mod:`pytest_streamchaos.testing`, its old home). Imports nothing of the package.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def poll(cond: Callable[[], T], timeout: float, on_timeout: Callable[[T], BaseException], *,
         interval: float = 0.05, clock: Callable[[], float] = time.monotonic) -> T:
    """Call ``cond`` until it returns something truthy and return that. Once ``timeout`` seconds
    (on ``clock``) have passed without it, raise ``on_timeout(last result of cond)``. ``cond`` is
    called at least once, and once more after the deadline; an exception from it propagates (a
    condition that can tell the wait is hopeless raises at once)."""
    deadline = clock() + timeout
    while True:
        value = cond()
        if value:
            return value
        if clock() >= deadline:
            raise on_timeout(value)
        time.sleep(interval)


def wait_for(cond: Callable[[], T], timeout: float, what: str, last: Callable[[], Any] | None = None, *,
             interval: float = 0.05, clock: Callable[[], float] = time.monotonic) -> T:
    """Poll ``cond`` until it returns something truthy and return that. After ``timeout`` seconds
    (on ``clock``) raise ``TimeoutError`` naming ``what`` and the last value seen (``last()`` if
    given, else the last result of ``cond``)."""

    def timed_out(value: object) -> TimeoutError:
        seen = last() if last is not None else value
        return TimeoutError(f"waited {timeout}s for {what}; last seen {seen!r}")

    return poll(cond, timeout, timed_out, interval=interval, clock=clock)


def settled(cond: Callable[[], Any], timeout: float, *, interval: float = 0.05,
            clock: Callable[[], float] = time.monotonic) -> bool:
    """Poll ``cond`` for up to ``timeout`` seconds (on ``clock``); whether it came true (for waits
    whose timeout is not an error, e.g. a grace period before a harder signal)."""
    try:
        poll(cond, timeout, lambda _: TimeoutError(), interval=interval, clock=clock)
    except TimeoutError:
        return False
    return True


class Every:
    """Calls ``fn`` every ``interval`` seconds on a daemon thread, from :meth:`start` until :meth:`stop`
    (the watchers of daemons the faults take down). A call that raises is skipped, not fatal: a daemon
    between lives answers nothing sensible, and what it would say is seen once it answers again."""

    def __init__(self, fn: Callable[[], Any], interval: float, name: str) -> None:
        import threading

        self.fn, self.interval, self.name = fn, interval, name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        import threading

        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> bool:
        """Stop calling (idempotent); whether it was running."""
        self._stop.set()
        th, self._thread = self._thread, None
        if th is not None:
            th.join(timeout=10)
        return th is not None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.fn()
            except Exception:  # see the class: the next call comes
                continue
