"""Small helpers for tests around the stack (ours and yours): poll with a deadline, check a pid.

Nothing in a chaos test waits by ``sleep``: it polls for the condition and, when it gives up, says
what it waited for and what it saw last.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import psutil

T = TypeVar("T")


def wait_for(cond: Callable[[], T], timeout: float, what: str, last: Callable[[], Any] | None = None, *,
             interval: float = 0.05) -> T:
    """Poll ``cond`` until it returns something truthy and return that. After ``timeout`` seconds
    raise ``TimeoutError`` naming ``what`` and the last value seen (``last()`` if given, else the
    last result of ``cond``)."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(interval)
    seen = last() if last is not None else value
    raise TimeoutError(f"waited {timeout}s for {what}; last seen {seen!r}")


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
