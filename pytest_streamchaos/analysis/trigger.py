"""The trigger a job actually runs with, read off its micro-batches' start times.

Spark's processing-time trigger starts a batch at the next multiple of its interval since the epoch
(``ProcessingTimeExecutor.nextBatchTime``), so the starts of a job with ``trigger(processingTime="5
seconds")`` all lie a few milliseconds past a multiple of 5 s, where a job without a trigger (as fast
as possible) starts each batch when the last one ended, at any millisecond. The job's code and its
conf say nothing the harness can read; its batches say it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

from pytest_streamchaos.history import batch_start
from pytest_streamchaos.records import BatchProgress

#: the intervals looked for, longest first (a start aligned to 10 s is aligned to 5 s too)
CANDIDATES_S = (300.0, 120.0, 60.0, 30.0, 20.0, 15.0, 10.0, 5.0, 3.0, 2.0, 1.0, 0.5, 0.25, 0.1)
#: how late past its aligned time a batch may start and still count as aligned (the timer's wake-up and
#: the trigger's bookkeeping take a few milliseconds; a tenth of a short interval at most)
LATE_S = 0.08
#: the share of starts that must be aligned: a batch that overran its interval starts unaligned
ALIGNED_SHARE = 0.75
#: fewer starts than this say nothing
MIN_STARTS = 4
#: what :func:`observed_trigger` returns for a job that runs batch after batch
AS_FAST_AS_POSSIBLE = 0.0


def observed_trigger(starts: Sequence[float]) -> float | None:
    """The processing-time trigger interval in seconds that the batch ``starts`` (epoch seconds) follow,
    :data:`AS_FAST_AS_POSSIBLE` (0.0) when they follow none, None when there are too few to tell."""
    if len(starts) < MIN_STARTS:
        return None
    for interval in CANDIDATES_S:
        late = min(LATE_S, interval / 10)
        aligned = sum(1 for t in starts if (t % interval) < late)
        if aligned >= ALIGNED_SHARE * len(starts):
            return interval
    return AS_FAST_AS_POSSIBLE


def trigger_words(interval: float | None) -> str | None:
    """``"5 s"``, ``"as fast as possible"``, or None (not known)."""
    if interval is None:
        return None
    return "as fast as possible" if interval == AS_FAST_AS_POSSIBLE else f"{interval:g} s"


def batch_cadence(batches: list[BatchProgress], before: float) -> float | None:
    """The median time between the starts of consecutive micro-batches (batch ids ``k`` and ``k + 1`` of
    one query in one driver launch) started before ``before``: the job's real pace whatever trigger it
    hard-codes. None with fewer than two such batches."""
    starts: dict[tuple[str | None, str | None, int], float] = {}
    for b in batches:
        t = batch_start(b)
        if math.isfinite(t) and t < before:
            starts.setdefault((b.get("app_id"), b.get("id"), int(b.get("batchId", -1))), t)
    gaps = [t1 - starts[(app, q, n - 1)] for (app, q, n), t1 in starts.items() if (app, q, n - 1) in starts]
    return float(median(gaps)) if gaps else None
