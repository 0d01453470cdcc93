"""Synthetic traces with known answers, for the analysis' own tests and benchmarks (and for users who
want to check an oracle or an SLA before running a real stack).

Everything is deterministic given the arguments: inputs are sent at a constant ``rate``, outputs
come ``latency`` seconds later (or at the next micro-batch boundary), and planted outages / latency
spikes / drops / duplicates change exactly what the caller says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .trace import FAULT_INJECTED, OutputRecords, SentRecords, TimelineEvent, Trace

T0 = 1_700_000_000.0


@dataclass
class Outage:
    """No output in ``[start, start + length)`` (run-relative seconds); afterwards the backlog is
    output at ``catch_up_rate`` per second (None: all at once at the end of the outage)."""

    start: float
    length: float
    catch_up_rate: float | None = None


@dataclass
class Spike:
    """Extra latency on outputs due in ``[start, start + length)``: a triangle peaking at ``height``
    seconds in the middle."""

    start: float
    length: float
    height: float


def _csr(arrival: np.ndarray, ids: np.ndarray) -> OutputRecords:
    offsets = np.arange(ids.size + 1, dtype=np.int64)
    return OutputRecords(arrival, offsets, ids)


def stateless_trace(
    rate: float = 1000.0,
    duration: float = 60.0,
    latency: float = 0.2,
    warmup: float = 5.0,
    drain: float = 5.0,
    faults: Sequence[float] = (),
    outages: Sequence[Outage] = (),
    spikes: Sequence[Spike] = (),
    batch_interval: float | None = None,
    drop: np.ndarray | None = None,
    duplicate: np.ndarray | None = None,
    stop_at: float | None = None,
    trigger: float = 1.0,
    id_base: int = 0,
    t0: float = T0,
) -> Trace:
    """A stateless run: id ``i`` is sent at ``t0 + i / rate`` and output once after ``latency``.

    ``batch_interval``: outputs only at multiples of it (micro-batch bursts). ``drop``/``duplicate``:
    ids (relative to ``id_base``) never output / output twice. ``stop_at``: no output from then on
    (the job dies). ``faults``: run-relative fault times recorded on the timeline.
    """
    n = int(rate * duration)
    i = np.arange(n, dtype=np.int64)
    send = t0 + i / rate
    out = send + latency
    for s in spikes:
        a, b = t0 + s.start, t0 + s.start + s.length
        m = (out >= a) & (out < b)
        x = (out[m] - a) / s.length
        out[m] += s.height * (1.0 - np.abs(2.0 * x - 1.0))
    if batch_interval:
        out = t0 + np.ceil((out - t0) / batch_interval) * batch_interval
    for o in outages:
        a, b = t0 + o.start, t0 + o.start + o.length
        hit = np.flatnonzero(out >= a)
        if hit.size == 0:
            continue
        first = hit[0]
        if o.catch_up_rate is None:
            out[first:] = np.maximum(out[first:], b)
        else:
            k = np.arange(n - first)
            out[first:] = np.maximum(out[first:], b + k / o.catch_up_rate)
    keep = np.ones(n, dtype=bool)
    if drop is not None:
        keep[np.asarray(drop, dtype=np.int64)] = False
    if stop_at is not None:
        keep &= out < t0 + stop_at
    ids = i[keep]
    arr = out[keep]
    if duplicate is not None:
        d = np.asarray(duplicate, dtype=np.int64)
        d = d[keep[d]]
        ids = np.concatenate((ids, d))
        arr = np.concatenate((arr, out[d] + 0.5 * latency))
    o = np.argsort(arr, kind="stable")
    sent = SentRecords(i + id_base, np.zeros(n, dtype=np.int64), send.copy(), send)
    outputs = _csr(arr[o], ids[o] + id_base)
    phases = {"warmup_end": t0 + warmup, "load_end": t0 + duration, "drain_end": t0 + duration + drain}
    timeline = [TimelineEvent(t0 + f, FAULT_INJECTED, "worker-1") for f in faults]
    return Trace(sent, outputs, timeline=timeline, phases=phases, trigger_seconds=trigger)


def windowed_trace(
    rate: float = 1000.0,
    duration: float = 60.0,
    keys: int = 4,
    size: float = 5.0,
    latency: float = 0.5,
    warmup: float = 10.0,
    drain: float = 5.0,
    t0: float = T0,
    faults: Sequence[float] = (),
) -> Trace:
    """A keyed tumbling-window run (event time = send time, key = id mod ``keys``): every finalized
    (key, window) is output once, ``latency`` after the first input of its key past the window end."""
    n = int(rate * duration)
    i = np.arange(n, dtype=np.int64)
    send = t0 + i / rate
    k = i % keys
    sent = SentRecords(i, k, send.copy(), send)
    w = np.floor(send / size).astype(np.int64)
    # group ids by (key, window)
    order = np.lexsort((i, w, k))
    kw = k[order] * (w.max() + 1) + w[order]
    cut = np.flatnonzero(np.diff(kw)) + 1
    starts = np.concatenate(([0], cut))
    gk, gw = k[order][starts], w[order][starts]
    ends = (gw + 1) * size
    # closing input: first of the same key with event time >= end
    closer = np.searchsorted(send, ends, side="left")
    closer = closer + ((gk - k[np.minimum(closer, n - 1)]) % keys) if n else closer
    finished = closer < n
    arrival = np.where(finished, send[np.minimum(closer, n - 1)] + latency, np.inf)
    lengths = np.diff(np.concatenate((starts, [n])))
    sel = finished
    ids_parts = np.split(i[order], starts[1:])
    out_ids = [p for p, s in zip(ids_parts, sel, strict=True) if s]
    offs = np.zeros(len(out_ids) + 1, dtype=np.int64)
    np.cumsum(lengths[sel], out=offs[1:])
    a = arrival[sel]
    o = np.argsort(a, kind="stable")
    flat = np.concatenate([out_ids[j] for j in o]) if out_ids else np.empty(0, np.int64)
    offs2 = np.zeros(o.size + 1, dtype=np.int64)
    np.cumsum(lengths[sel][o], out=offs2[1:])
    outputs = OutputRecords(
        a[o], offs2, flat, keys=gk[sel][o], window_start=(gw[sel][o] * size).astype(np.float64),
        window_end=((gw[sel][o] + 1) * size).astype(np.float64),
    )
    phases = {"warmup_end": t0 + warmup, "load_end": t0 + duration, "drain_end": t0 + duration + drain}
    timeline = [TimelineEvent(t0 + f, FAULT_INJECTED, "worker-1") for f in faults]
    return Trace(sent, outputs, timeline=timeline, phases=phases, trigger_seconds=1.0)
