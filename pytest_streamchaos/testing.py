"""Small helpers for tests around the stack (ours and yours): poll with a deadline, check a pid.

``wait_for`` lives in :mod:`pytest_streamchaos.poll` (the harness uses it too); it is re-exported here.

Nothing in a chaos test waits by ``sleep``: it polls for the condition and, when it gives up, says
what it waited for and what it saw last.
"""

from __future__ import annotations

import psutil

from pytest_streamchaos.poll import wait_for

__all__ = ["pid_alive", "wait_for"]


def pid_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
