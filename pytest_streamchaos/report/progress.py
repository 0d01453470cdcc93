"""Live progress of a chaos run: one status line per test, rewritten in place on a terminal, plain
lines every ``every`` seconds (and at each phase change) when the output is not a terminal (CI
logs), nothing with ``-q``.

The runner calls the reporter about once a second with ``phase``, ``elapsed``, ``planned``,
``sent``, ``outputs``, ``backlog`` and ``faults`` (``Chaos.status``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest


def format_status(test: str, s: dict[str, Any]) -> str:
    """``[chaos] test_x  load 12/30s  sent 2450  outputs 2400  backlog 50  faults 1``."""
    return (f"[chaos] {test}  {s.get('phase', '?')} {s.get('elapsed', 0):.0f}/{s.get('planned', 0):.0f}s  "
            f"sent {s.get('sent', 0)}  outputs {s.get('outputs', 0)}  backlog {s.get('backlog', 0)}  "
            f"faults {s.get('faults', 0)}")


class StatusLine:
    """The ``Chaos.status`` callback of one test; call :meth:`finish` after each run."""

    def __init__(self, write: Callable[[str], None], test: str, live: bool, every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.write = write
        self.test = test
        self.live = live
        self.every = every
        self.clock = clock
        self._last: float | None = None
        self._phase: str | None = None
        self._width = 0

    def __call__(self, status: dict[str, Any]) -> None:
        line = format_status(self.test, status)
        if self.live:
            # \r and pad: the new line may be shorter than the one it overwrites; the first one starts
            # a line of its own (pytest's progress dots of the file are on the current one)
            self.write(("\r" if self._width else "\n") + line.ljust(self._width))
            self._width = max(self._width, len(line))
            return
        now = self.clock()
        if self._phase != status.get("phase") or self._last is None or now - self._last >= self.every:
            self._phase, self._last = status.get("phase"), now
            self.write(line + "\n")

    def finish(self) -> None:
        """End the live line (the next output starts on a fresh line)."""
        if self.live and self._width:
            self.write("\n")
            self._width = 0
        self._last = self._phase = None


def status_for(config: pytest.Config, nodeid: str) -> StatusLine | None:
    """The status callback for a test, or None with ``-q`` or without a terminal reporter."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or config.get_verbosity() < 0:
        return None
    capman = config.pluginmanager.get_plugin("capturemanager")

    live = bool(tr.isatty)

    def write(text: str) -> None:
        # The run loop executes inside the test, where pytest captures stdout: step around the capture,
        # as pytest's own live logging does.
        with _uncaptured(capman):
            if not live:
                tr.ensure_newline()  # not after the file name pytest has written on this line
            tr.write(text, flush=True)

    return StatusLine(write, nodeid.split("::")[-1], live=live)


@contextlib.contextmanager
def _uncaptured(capman: Any) -> Iterator[None]:
    if capman is None:
        yield
        return
    with capman.global_and_fixture_disabled():
        yield
