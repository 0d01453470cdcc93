"""What real-time mode (``trigger(realTime=...)``) promises, judged over a run's history.

- :class:`RealTimeLatency`: the latency of each record (its output's arrival minus its send time) before the
  first fault and after the last one settled -- the mode's point is sub-second latency, and a fault's cost
  is what it does to that. A measurement: ``ok`` is None when either side has no records.
- :class:`ReplayBound`: duplicates only within the last checkpoint interval. Real-time mode commits the
  offsets at the end of each interval (its trigger's), after the records were written, so a failure replays
  at most what was written since the last commit: every duplicated record's first output came at most one
  interval (plus ``slack``) before the fault that made it. A duplicate older than that, or one no fault
  explains, violates the bound.

Both are pure: ids, arrival and send times, the faults' injection times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pytest_streamchaos.history import History

from ..checker import CheckResult


def first_arrivals(history: History) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(ids, first arrival, second arrival (NaN: output once), outputs per id) of every id the outputs carry."""
    out = history.outputs
    ids = np.asarray(out.ids, dtype=np.int64)
    if ids.size == 0:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty, empty, empty.astype(np.int64)
    arrival = np.repeat(np.asarray(out.arrival_ts, dtype=float), out.lengths())  # each id's output's arrival
    order = np.lexsort((arrival, ids))
    ids_sorted, arr_sorted = ids[order], arrival[order]
    uniq, start, counts = np.unique(ids_sorted, return_index=True, return_counts=True)
    second = np.full(uniq.size, np.nan)
    again = counts > 1
    second[again] = arr_sorted[start[again] + 1]
    return uniq, arr_sorted[start], second, counts


def interval_of(history: History) -> float:
    """A real-time query's interval, read off its batches (each lasts one): their median duration (0: none)."""
    durations = [b.end - b.start for b in history.micro_batches if b.end > b.start]
    return float(np.median(durations)) if durations else 0.0


def record_latencies(history: History) -> tuple[np.ndarray, np.ndarray]:
    """(first arrival, latency) of each input record that was output: its first output's arrival minus the
    time the broker acknowledged it."""
    ids, first, _, _ = first_arrivals(history)
    sent = history.sent
    sent_ids = np.asarray(sent.ids, dtype=np.int64)
    if ids.size == 0 or sent_ids.size == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(sent_ids)
    pos = np.clip(np.searchsorted(sent_ids[order], ids), 0, sent_ids.size - 1)
    known = sent_ids[order][pos] == ids
    send = np.asarray(sent.send_ts, dtype=float)[order][pos]
    return first[known], (first - send)[known]


def _quantiles(latency: np.ndarray) -> dict[str, float | int]:
    if latency.size == 0:
        return {"records": 0}
    return {"records": int(latency.size), "p50": round(float(np.quantile(latency, 0.5)), 4),
            "p99": round(float(np.quantile(latency, 0.99)), 4), "max": round(float(latency.max()), 4)}


@dataclass
class RealTimeLatency:
    """Latency per record before the first fault and after the last one (its heal, or its injection when it is
    not healed, plus ``settle`` seconds)."""

    settle: float = 10.0
    name: str = "realtime_latency"

    def check(self, history: History) -> CheckResult:
        arrival, latency = record_latencies(history)
        faults = history.injected()
        warm = history.phase("warmup_end") or (float(arrival.min()) if arrival.size else 0.0)
        first = min((f.injected_at or 0.0 for f in faults), default=None)
        last = max(((f.healed_at or f.injected_at or 0.0) for f in faults), default=None)
        before = latency[(arrival >= warm) & (arrival < (first if first is not None else np.inf))]
        after = latency[arrival >= last + self.settle] if last is not None else np.zeros(0)
        sides = {"before": _quantiles(before), "after": _quantiles(after)}
        numbers: dict[str, object] = {**sides, "settle_s": self.settle}
        lines = [f"latency per record before the first fault: {_words(sides['before'])}"]
        if last is not None:
            lines.append(f"after the last fault (+{self.settle:g}s): {_words(sides['after'])}")
        ok = True if before.size and (last is None or after.size) else None
        return CheckResult(self.name, ok, lines, numbers,
                           reason="" if ok else "no records on one side of the faults to measure")


def _words(q: dict[str, float | int]) -> str:
    if not q.get("records"):
        return "no records"
    return f"p50 {q['p50'] * 1000:.0f} ms, p99 {q['p99'] * 1000:.0f} ms, max {q['max'] * 1000:.0f} ms " \
           f"({q['records']} records)"


@dataclass
class ReplayBound:
    """Real-time mode's promise: every duplicated record was first output at most ``interval`` (the trigger's,
    its checkpoint interval) plus ``slack`` seconds before the injection of a fault."""

    interval: float
    slack: float = 1.0
    name: str = "replay_bound"

    def check(self, history: History) -> CheckResult:
        _, first, second, counts = first_arrivals(history)
        dup = counts > 1
        dup_first, dup_again = first[dup], second[dup]
        injections = np.array(sorted(f.injected_at for f in history.injected() if f.injected_at is not None))
        bound = self.interval + self.slack
        # each duplicate's replaying fault: the last one injected before its second output; its age, the
        # seconds from its first output to that fault (inf: no fault came before it was output again)
        age = np.full(dup_first.size, np.inf)
        which = np.searchsorted(injections, dup_again, side="right") - 1 if injections.size else np.zeros(0, int)
        if injections.size and dup_first.size:
            has = which >= 0
            age[has] = injections[which[has]] - dup_first[has]
        outside = int(np.sum(age > bound))
        finite = age[np.isfinite(age)]
        oldest = float(finite.max()) if finite.size else None
        per_fault = [int(np.sum((age <= bound) & (which == i))) for i in range(injections.size)]
        numbers = {"duplicates": int(dup.sum()), "outside_bound": outside, "interval_s": self.interval,
                   "bound_s": bound, "oldest_s": None if oldest is None else round(oldest, 3),
                   "per_fault": per_fault}
        lines = [f"{int(dup.sum())} records duplicated; the oldest was first output "
                 f"{'-' if oldest is None else f'{oldest:.2f}s'} before the fault that replayed it (bound: the "
                 f"interval {self.interval:g}s + {self.slack:g}s)"]
        if outside:
            lines.append(f"{outside} duplicated records lie outside the last interval before a fault (or after "
                         "every fault): the mode's bound does not hold")
        return CheckResult(self.name, outside == 0, lines, numbers)
