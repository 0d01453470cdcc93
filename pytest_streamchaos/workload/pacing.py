"""The generator's pacing: a token bucket on the monotonic clock.

Records are due from the schedule's origin at the target rate, so the rate does not drift over long
runs. A generator that falls behind catches up by at most ``max_lag_s`` of records; older due
records are *skipped* (never created, so never in the ground truth). A rate change or a pause
restarts the schedule from the moment it takes effect (nothing owed from before).
"""

from __future__ import annotations

import numpy as np


class Pacer:
    """How many records are due at each tick, and when each was scheduled (its event time).

    :attr:`pending_rate` and :attr:`paused` are set from the test's thread and take effect at the
    producing thread's next :meth:`due`.
    """

    def __init__(self, rate: float, max_lag_s: float, max_records: int | None) -> None:
        self.rate = float(rate)  #: the rate in effect
        self.pending_rate: float | None = None  #: a new rate, from the next tick
        self.paused = False
        self.skipped = 0  #: due records never created (too far behind)
        self.max_lag_s = max_lag_s
        self.max_records = max_records
        self._t0 = 0.0  # the schedule's origin (monotonic)
        self._base = 0  # records produced before the origin

    @property
    def target(self) -> float:
        """The current target rate (records/s), a pending change included."""
        return self.pending_rate or self.rate

    def start(self, now: float) -> None:
        """Put the schedule's origin at ``now`` (monotonic)."""
        self._t0, self._base = now, 0

    def due(self, now: float, produced: int) -> int | None:
        """Records due at ``now`` with ``produced`` made so far; None once ``max_records`` were made."""
        if self.pending_rate is not None:
            self.rate, self.pending_rate = self.pending_rate, None
            self._t0, self._base = now, produced
        if self.paused:
            self._t0, self._base = now, produced
            return 0
        due = self._base + int((now - self._t0) * self.rate) - produced
        max_backlog = int(self.rate * self.max_lag_s) + 1
        if due > max_backlog:  # too far behind: forget the oldest due records (their slots
            self.skipped += due - max_backlog  # in event time stay empty)
            self._base -= due - max_backlog
            due = max_backlog
        if self.max_records is not None:
            due = min(due, self.max_records - produced)
            if due <= 0 and produced >= self.max_records:
                return None
        return due

    def scheduled(self, seqs: np.ndarray, wall_offset: float) -> np.ndarray:
        """When the records ``seqs`` were scheduled, on the wall clock (monotonic + ``wall_offset``)."""
        return self._t0 + (seqs - self._base + 1) / self.rate + wall_offset
