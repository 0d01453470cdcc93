"""The driver's supervisor of a run: what ``spark-submit --supervise`` does for a driver in cluster mode,
for the client-mode driver of the run."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pytest_streamchaos.events import Kind
from pytest_streamchaos.stack.base import JobHandle


class DriverSupervisor:
    """A driver that exited on its own is started again from its checkpoint after ``delay`` seconds, at
    most ``max_restarts`` times (Spark refuses cluster mode for Python on standalone clusters, so the
    master cannot). Production jobs have this from their scheduler (YARN attempts, a Kubernetes restart
    policy, a job service's retries). Every exit is recorded (``driver_exited``) whether or not it is
    restarted; a driver a fault stopped is left to that fault (``hold()`` true)."""

    def __init__(self, job: JobHandle, record: Callable[..., Any], *, enabled: bool, hold: Callable[[], bool],
                 delay: float = 1.0, max_restarts: int = 10) -> None:
        self.job, self.record, self.enabled, self.hold = job, record, enabled, hold
        self.delay, self.max_restarts = delay, max_restarts
        self.restarts = 0
        self._down_since: float | None = None

    def will_restart(self) -> bool:
        """Whether a driver that is down now will be started again (by this supervisor or a fault)."""
        return self.hold() or (self.enabled and self.restarts < self.max_restarts)

    def check(self) -> None:
        """Call often: notes an exit, and restarts the driver once it has been down ``delay`` seconds."""
        job = self.job
        if job.alive or not job.launches or job.returncode is None:
            self._down_since = None
            return
        now = time.time()
        if self._down_since is None:
            self._down_since = now
            self.record(Kind.DRIVER_EXITED, "driver", code=job.returncode)
            return
        if (self.enabled and not self.hold() and now - self._down_since >= self.delay
                and self.restarts < self.max_restarts):
            self.restarts += 1
            self._down_since = None
            job.start()
