"""Outputs estimated from Spark's query progress, for jobs whose output cannot be read.

A job that writes to the console, to ``noop`` or to an external system gives the collector nothing
to read. Spark's own progress still says, per micro-batch, which input offsets it processed
(``sources[].startOffset`` / ``endOffset``: ``{topic: {partition: offset}}``) and when the batch
ended. With the broker's acknowledgement of every sent record (its partition and offset), that
gives the moment each record was processed: its "output" became visible when its batch ended (a
replayed batch processes it again). Throughput and latency per second follow exactly -- enough for
downtime, recovery time and failure cost -- but nothing says which records the job lost or
duplicated in its own output: a run built this way has no per-record verdict
(``ChaosRun.resolution == "none"``).

Sources whose offsets are not Kafka's (or records without an acknowledged offset) fall back to
ranks: batch ``k`` processed the sent records ``C[k-1] .. C[k]-1`` in send order (``C``: the
cumulative ``numInputRows``), which is right until a restart skips or replays records.
"""

from __future__ import annotations

import numpy as np

from pytest_streamchaos.records import BatchProgress, OutputRecords, SentRecords


def outputs_from_progress(sent: SentRecords, batches: list[BatchProgress], inputs: int = 1,
                          topic: str | None = None) -> OutputRecords:
    """Estimated outputs (see the module docstring). ``topic``: the input topic whose offsets
    identify ``sent`` (the first input of a join); ``inputs``: how many topics carry each id (a join
    reads every id once per topic) -- used by the rank fallback only."""
    ordered = sorted(batches, key=lambda b: b.get("t_end", 0.0))
    if topic is not None and sent.offset is not None and sent.partition is not None:
        ranges = [(b, _ranges(b, topic)) for b in ordered]
        if any(r for _, r in ranges):
            return _by_offsets(sent, ranges)
    return _by_rank(sent, ordered, inputs)


def _ranges(batch: BatchProgress, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (start, end)}`` of ``topic`` in one batch's progress (empty if not Kafka-like)."""
    out: dict[int, tuple[int, int]] = {}
    for src in batch.get("sources") or []:
        end, start = src.get("endOffset"), src.get("startOffset")
        if not isinstance(end, dict) or not isinstance(end.get(topic), dict):
            continue
        begin = start.get(topic, {}) if isinstance(start, dict) and isinstance(start.get(topic), dict) else {}
        for p, e in end[topic].items():
            try:
                out[int(p)] = (int(begin.get(p, 0)), int(e))
            except (TypeError, ValueError):
                continue
    return out


def _by_offsets(sent: SentRecords, ranges: list[tuple[BatchProgress, dict[int, tuple[int, int]]]]) -> OutputRecords:
    part, off = np.asarray(sent.partition), np.asarray(sent.offset)
    arrival: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    for b, r in ranges:
        for p, (lo, hi) in r.items():
            hit = np.flatnonzero((part == p) & (off >= lo) & (off < hi))
            if hit.size:
                rows.append(sent.ids[hit])
                arrival.append(np.full(hit.size, float(b["t_end"])))
    return _records(rows, arrival)


def _by_rank(sent: SentRecords, ordered: list[BatchProgress], inputs: int) -> OutputRecords:
    ids = sent.ids[np.argsort(sent.send_ts, kind="stable")]
    arrival: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    done = 0.0
    for b in ordered:
        n = (b.get("numInputRows") or 0) / max(inputs, 1)
        if n <= 0:
            continue
        lo, hi = int(round(done)), min(int(round(done + n)), ids.shape[0])
        done += n
        if hi > lo:
            rows.append(ids[lo:hi])
            arrival.append(np.full(hi - lo, float(b["t_end"])))
    return _records(rows, arrival)


def _records(rows: list[np.ndarray], arrival: list[np.ndarray]) -> OutputRecords:
    flat = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    t = np.concatenate(arrival) if arrival else np.zeros(0)
    order = np.argsort(t, kind="stable")
    return OutputRecords(arrival_ts=t[order], offsets=np.arange(flat.shape[0] + 1, dtype=np.int64),
                         ids=flat[order])
