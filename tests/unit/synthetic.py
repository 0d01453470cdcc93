"""Synthetic traces with known answers, for the analysis' own tests and benchmarks (``benchmarks/`` puts this
folder on its path). Test support: it lives with the tests, not in the package.

Everything is deterministic given the arguments: inputs are sent at a constant ``rate``, outputs
come ``latency`` seconds later (or at the next micro-batch boundary), and planted outages / latency
spikes / drops / duplicates change exactly what the caller says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_streamchaos.events import Kind, Phase
from pytest_streamchaos.history import Window
from pytest_streamchaos.records import FAULT_INJECTED, OutputRecords, SentRecords, TimelineEvent, Trace

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
    progress: bool = False,
) -> Trace:
    """A stateless run: id ``i`` is sent at ``t0 + i / rate`` and output once after ``latency``.

    ``batch_interval``: outputs only at multiples of it (micro-batch bursts). ``drop``/``duplicate``:
    ids (relative to ``id_base``) never output / output twice. ``stop_at``: no output from then on
    (the job dies). ``faults``: run-relative fault times recorded on the timeline. ``progress``: the trace
    carries Spark's progress of those micro-batches (:func:`micro_batches`; needs ``batch_interval``).
    """
    n = int(rate * duration)
    i = np.arange(n, dtype=np.int64)
    send = t0 + i / rate
    out = send + latency
    _add_spikes(out, spikes, t0)
    if batch_interval:
        out = t0 + np.ceil((out - t0) / batch_interval) * batch_interval
    _hold_back(out, outages, t0)
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
    phases: dict[str, float] = {Phase.WARMUP_END: t0 + warmup, Phase.LOAD_END: t0 + duration,
                                Phase.DRAIN_END: t0 + duration + drain}
    timeline = [TimelineEvent(t0 + f, FAULT_INJECTED, "worker-1") for f in faults]
    batches = micro_batches(send, batch_interval, t0) if progress and batch_interval else []
    return Trace(sent, outputs, batches=batches, timeline=timeline, phases=phases, trigger_seconds=trigger)


def micro_batches(send: np.ndarray, interval: float, t0: float = T0) -> list[dict]:
    """Spark's progress of a job that plans a micro-batch every ``interval`` seconds from ``t0`` (its
    ``t_start``) and ends it at the next plan: batch ``k`` reads what was sent (``send``) between the
    plans of batches ``k - 1`` and ``k``, as Spark's Kafka source does."""
    if send.size == 0:
        return []
    n = int(np.ceil((float(send.max()) - t0) / interval)) + 2
    plans = t0 + interval * np.arange(n)
    rows = np.diff(np.searchsorted(send, plans, side="left"), prepend=0)
    return [{"id": "synthetic", "batchId": k, "t_start": float(plans[k]), "t_end": float(plans[k] + interval),
             "numInputRows": int(rows[k]), "durationMs": {"triggerExecution": int(interval * 1000)}}
            for k in range(n)]


def _add_spikes(out: np.ndarray, spikes: Sequence[Spike], t0: float) -> None:
    """Delay the output times ``out`` (in place) by the planted latency spikes."""
    for s in spikes:
        a, b = t0 + s.start, t0 + s.start + s.length
        m = (out >= a) & (out < b)
        x = (out[m] - a) / s.length
        out[m] += s.height * (1.0 - np.abs(2.0 * x - 1.0))


def _hold_back(out: np.ndarray, outages: Sequence[Outage], t0: float) -> None:
    """Hold the output times ``out`` (in place) back past the planted outages."""
    n = out.shape[0]
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
    phases: dict[str, float] = {Phase.WARMUP_END: t0 + warmup, Phase.LOAD_END: t0 + duration,
                                Phase.DRAIN_END: t0 + duration + drain}
    timeline = [TimelineEvent(t0 + f, FAULT_INJECTED, "worker-1") for f in faults]
    return Trace(sent, outputs, timeline=timeline, phases=phases, trigger_seconds=1.0)


def fanout_trace(
    copies: np.ndarray,
    rate: float = 1000.0,
    latency: float = 0.2,
    drop: np.ndarray | None = None,
    duplicate: np.ndarray | None = None,
    t0: float = T0,
) -> Trace:
    """A fan-out run: id ``i`` (sent at ``t0 + i / rate``) yields ``copies[i]`` outputs, one id each,
    ``latency`` (+ 1 ms per copy) later; ``SentRecords.annotations["copies"]`` holds ``copies``.

    ``drop``: ids whose last copy never comes out; ``duplicate``: ids whose first copy comes out twice.
    """
    copies = np.asarray(copies, dtype=np.int64)
    n = copies.size
    i = np.arange(n, dtype=np.int64)
    send = t0 + i / rate
    ids = np.repeat(i, copies)
    k = np.arange(ids.size) - np.repeat(np.cumsum(copies) - copies, copies)  # copy number
    arr = send[ids] + latency + 0.001 * k
    keep = np.ones(ids.size, dtype=bool)
    if drop is not None:
        d = np.asarray(drop, dtype=np.int64)
        keep[(np.cumsum(copies) - 1)[d[copies[d] > 0]]] = False
    extra_ids, extra_arr = np.empty(0, np.int64), np.empty(0)
    if duplicate is not None:
        d = np.asarray(duplicate, dtype=np.int64)
        d = d[copies[d] > 0]
        extra_ids, extra_arr = d, send[d] + 1.5 * latency
    ids = np.concatenate((ids[keep], extra_ids))
    arr = np.concatenate((arr[keep], extra_arr))
    o = np.argsort(arr, kind="stable")
    sent = SentRecords(i, np.zeros(n, dtype=np.int64), send.copy(), send,
                       annotations={"copies": copies.astype(np.float64)})
    phases: dict[str, float] = {Phase.WARMUP_END: t0 + 1.0, Phase.LOAD_END: t0 + n / rate,
                                Phase.DRAIN_END: t0 + n / rate + 2.0}
    return Trace(sent, _csr(arr[o], ids[o]), phases=phases, trigger_seconds=1.0)


def aggregate_trace(
    rate: float = 1000.0,
    duration: float = 60.0,
    keys: int = 4,
    size: float = 5.0,
    amounts: np.ndarray | None = None,
    drop: np.ndarray | None = None,
    duplicate: np.ndarray | None = None,
    output_mode: str = "update",
    t0: float = T0,
) -> Trace:
    """The outputs of :func:`windowed_trace` as a job without ids reports them: per (key, window)
    the count of its inputs (or, with ``amounts``, their sum; ``annotations["amount"]``), with
    ``drop`` ids missing from it and ``duplicate`` ids counted twice.

    ``output_mode="update"``: every group is first emitted early with half its value (a partial
    update), then with its final value; ``"append"``: once, with the final value.
    """
    base = windowed_trace(rate=rate, duration=duration, keys=keys, size=size, t0=t0)
    n = len(base.sent)
    w = np.ones(n) if amounts is None else np.asarray(amounts, dtype=np.float64)
    wt = w.copy()
    if drop is not None:
        wt[np.asarray(drop, dtype=np.int64)] = 0.0
    if duplicate is not None:
        wt[np.asarray(duplicate, dtype=np.int64)] += w[np.asarray(duplicate, dtype=np.int64)]
    out = base.outputs
    flat_w = wt[out.ids]
    nonempty = out.lengths() > 0
    vals = np.zeros(len(out))
    vals[nonempty] = np.add.reduceat(flat_w, out.offsets[:-1][nonempty])
    # windowed_trace fills every one of these columns
    assert out.keys is not None and out.window_start is not None and out.window_end is not None
    arrival, ks, ws, we = out.arrival_ts, out.keys, out.window_start, out.window_end
    if output_mode != "append":  # an earlier partial update per group: only the last value counts
        arrival = np.concatenate((arrival - 0.5 * size, arrival))
        vals = np.concatenate((np.floor(vals / 2), vals))
        ks, ws, we = (np.concatenate((c, c)) for c in (ks, ws, we))
    o = np.argsort(arrival, kind="stable")
    outputs = OutputRecords(arrival[o], np.zeros(o.size + 1, np.int64), np.empty(0, np.int64), keys=ks[o],
                            window_start=ws[o], window_end=we[o], values=vals[o])
    sent = base.sent
    if amounts is not None:
        sent.annotations["amount"] = w
    return Trace(sent, outputs, timeline=base.timeline, phases=base.phases, trigger_seconds=1.0)


def seen_at(trace: Trace, t: float) -> Trace:
    """``trace`` as a run still under load saw it at time ``t``: inputs sent and outputs arrived by
    then, timeline events up to then, and of the phases only the warm-up's end (the load has not
    ended). For testing verdicts made mid-run against the verdict on the whole trace."""
    s, o = trace.sent, trace.outputs
    ks = s.send_ts <= t
    sent = SentRecords(s.ids[ks], s.keys[ks], s.event_ts[ks], s.send_ts[ks],
                       None if s.poison is None else s.poison[ks], {k: v[ks] for k, v in s.annotations.items()})
    n = int(np.searchsorted(o.arrival_ts, t, side="right"))  # outputs are in arrival order
    outputs = OutputRecords(o.arrival_ts[:n], o.offsets[: n + 1], o.ids[: int(o.offsets[n])],
                            *(None if a is None else a[:n] for a in (o.keys, o.window_start, o.window_end, o.topic,
                                                                      o.values)))
    phases = {k: v for k, v in trace.phases.items() if k == Phase.WARMUP_END and v <= t}
    return Trace(sent, outputs, timeline=[e for e in trace.timeline if e.t <= t], phases=phases,
                 trigger_seconds=trace.trigger_seconds)


@dataclass
class Schedule:
    """One schedule of a synthetic one history: its fault ``kind`` injected at ``at`` (run-relative seconds),
    the output held back for ``outage`` seconds from then (caught up at 150 records/s), the window closed at
    ``closed`` (as the runner closes it once the fault is back: :func:`one_history`)."""

    kind: str
    at: float
    outage: float
    closed: float


def one_history(schedules: Sequence[Schedule], duration: float = 120.0, stop_at: float | None = None,
                pairs: Sequence[tuple[int, float, float]] = ()) -> Trace:
    """A job planning a micro-batch a second, 50 records/s, that played ``schedules`` one after another in one
    history: each fault labelled as the runner labels a window's (``<kind> step=1 window=<i>``), each window
    closed at its ``closed`` time, from one second before it (the plan of the last committed batch), and the
    tail window after the last one (``history_window`` events). ``pairs``: ``(window, at, outage)``, a second
    step of that window's schedule (``step=2``) struck during the first's outage, extending it. ``stop_at``:
    no output from then on (the job died)."""
    outs = [Outage(s.at, s.outage, catch_up_rate=150.0) for s in schedules]
    outs += [Outage(at, length, catch_up_rate=150.0) for _, at, length in pairs]
    steps = sorted([(s.at, i, 1, s.kind) for i, s in enumerate(schedules)]
                   + [(at, i, 2, schedules[i].kind) for i, at, _ in pairs])
    trace = stateless_trace(rate=50.0, duration=duration, latency=0.2, batch_interval=1.0, progress=True,
                            faults=[at for at, *_ in steps], outages=sorted(outs, key=lambda o: o.start),
                            stop_at=stop_at)
    for e, (_, i, step, kind) in zip(trace.timeline, steps, strict=True):
        e.detail.update(fault=kind, label=f"{kind} step={step} window={i}")
    start = -np.inf
    for i, s in enumerate(schedules):
        labels = tuple(f"{kind} step={step} window={w}" for _, w, step, kind in steps if w == i)
        window = Window(i, " + ".join(labels), start, T0 + s.closed - 1.0, labels)
        trace.timeline.append(TimelineEvent(T0 + s.closed, Kind.HISTORY_WINDOW, "", window.detail()))
        start = window.end
    tail = Window(len(schedules), "after the last schedule", start)
    trace.timeline.append(TimelineEvent(T0 + duration, Kind.HISTORY_WINDOW, "", tail.detail()))
    return trace
