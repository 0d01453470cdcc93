"""The per-fault half of the metrics (definitions in :mod:`pytest_streamchaos.analysis.metrics`): each
fault's window and the gaps it owns, the output's first sign of it, its recovery, its failure cost and
verdict, and what the system did about it (its reaction, its recovery phases), measured against the
run-wide :class:`~.frame.RunFrame`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..events import Kind, Launched, TimelineEvent
from ..history import FaultRecord
from .frame import RunFrame
from .params import MetricParams, phase_kinds
from .run_metrics import FaultMetrics
from .sentinels import NOT_RECOVERED, NotRecovered, RecoveryTime


def measure_fault(m: RunFrame, i: int, fault: FaultRecord) -> FaultMetrics:
    """The metrics of the ``i``-th fault measured (``fault``: ``m.faults[i]``)."""
    p, ft, arr_sorted = m.p, m.ft, m.arr_sorted
    ab_start, ab_end, ab_len = m.ab_start, m.ab_end, m.ab_len
    f = float(ft[i])
    horizon, mine = occurrence_window(ft, i, m.B, m.judge_end, m.owner)
    if not m.gap_known:
        return _unmeasured(m, fault, f, horizon)
    if mine.size:
        j = mine[np.argmax(ab_len[mine])]
        downtime, gs, ge = float(ab_len[j]), float(ab_start[j]), float(ab_end[j])
        out_gap = max(0.0, ge - max(gs, f))
    else:
        downtime, gs, ge, out_gap = 0.0, None, None, 0.0
    k_after = int(np.searchsorted(arr_sorted, f, side="right"))
    first_after = float(arr_sorted[k_after]) if k_after < arr_sorted.size else None
    signs, j0 = _signs(m, f, horizon, mine)
    timeline = m.history.timeline
    sys_ev = first_system_event(timeline, p.system_detection_kinds, f, horizon)
    sys_det = None if sys_ev is None else sys_ev.t - f
    common: dict[str, Any] = dict(
        t=f, kind=fault.kind, target=fault.target, horizon=horizon, downtime=downtime, gap_start=gs, gap_end=ge,
        output_gap=out_gap, first_output_after=first_after, system_detection=sys_det,
        system_detection_event=None if sys_ev is None else sys_ev.kind,
        phases=recovery_phases(timeline, f, horizon), aim=fault.aim, label=fault.label)
    if not signs and horizon - f < m.downtime_gap + m.B:
        return _unmeasured(m, fault, f, horizon, short=True)
    if not m.has_baseline:
        detection = (min(signs) - f) if signs else None
        return FaultMetrics(**common, output_symptom=detection, catch_up=None, recovery_time=None,
                            recovered_at=None, peak_latency=math.nan, failure_cost=None,
                            verdict="outage" if downtime > p.outage_seconds else "unknown")
    detection, rec, rec_at = _recovery(m, f, horizon, signs)
    recovered = not isinstance(rec, NotRecovered)
    # not recovered when the next fault cut it: its cost is what it did until then, not the rest of the run
    last = horizon if cut_off(m, horizon) else m.t_end
    w_end = f + p.hold_seconds if detection is None else rec_at if recovered and rec_at is not None else last
    peak = peak_latency(m.lat_sorted[j0:int(np.searchsorted(arr_sorted, w_end, side="right"))],
                        m.pend_send if not recovered else None, f, horizon, last)
    if math.isnan(peak):
        cost = 0.0
    else:
        cost = max(0.0, peak - m.b99) if math.isfinite(m.b99) else math.nan
    catch_up = None if not recovered or detection is None else max(0.0, float(rec) - detection - out_gap)
    return FaultMetrics(**common, output_symptom=detection, catch_up=catch_up, recovery_time=rec,
                        recovered_at=rec_at if recovered else None, peak_latency=peak, failure_cost=cost,
                        verdict=_verdict(detection, downtime, recovered, peak, p))


def _unmeasured(m: RunFrame, fault: FaultRecord, f: float, horizon: float, short: bool = False) -> FaultMetrics:
    """:func:`unmeasured_fault`; ``short``: its window is too short for a gap to show (:func:`short_window`)."""
    if short:
        why = short_window(f - m.t0, horizon - f, horizon < m.judge_end, m.downtime_gap)
        m.unavailable.update({k: why for k in ("downtime", "recovery_time", "failure_cost")
                              if k not in m.unavailable})
    return unmeasured_fault(m.history.timeline, m.p, m.arr_sorted, fault, f, horizon)


def _signs(m: RunFrame, f: float, horizon: float, mine: np.ndarray) -> tuple[list[float], int]:
    """The times of the output's first signs of a fault at ``f`` (detection), and the index of
    the first output at or after ``f``."""
    t0, B, arr_sorted = m.t0, m.B, m.arr_sorted
    signs = []
    if mine.size:
        signs.append(max(float(m.ab_start[mine].min()), f))
    j0, j1 = np.searchsorted(arr_sorted, [f, horizon], side="left")
    if m.has_baseline:  # the latency bound and the throughput band are relative to the baseline
        high = np.flatnonzero(m.lat_sorted[j0:j1] > m.bound)
        if high.size:
            signs.append(float(arr_sorted[j0 + high[0]]))
        kf = int(math.ceil((f - t0) / B - 1e-9))
        kh = int(math.floor((horizon - t0) / B + 1e-9))
        sign_bad = ~(m.tp_trailing_ok[kf:kh] & m.lat_ok[kf:kh])
        bad = np.flatnonzero(sign_bad)
        if bad.size:
            signs.append(float(m.edges[kf + bad[0] + 1]))  # known at the end of that bucket
    return signs, j0


def _recovery(m: RunFrame, f: float, horizon: float,
              signs: list[float]) -> tuple[float | None, RecoveryTime, float | None]:
    """(detection, recovery time, recovered at) of a fault at ``f`` with these signs."""
    if not signs:
        return None, 0.0, f
    t0, B, nb, hold_b, edges = m.t0, m.B, m.nb, m.hold_b, m.edges
    d_t = min(signs)
    kb = int(math.floor((d_t - t0) / B))
    run, end = m.run, horizon
    if cut_off(m, horizon):  # judged as the history showed it when the next fault struck (RunFrame.runs_until)
        end = max(f, horizon - m.gap0)
        run = m.runs_until(end)
    cand = np.flatnonzero(run[kb:nb] >= hold_b) + kb
    cand = cand[edges[cand] + hold_b * B <= end + 1e-9]
    if cand.size:
        rec_at = max(float(edges[cand[0]]), d_t)
        return d_t - f, rec_at - f, rec_at
    return d_t - f, NOT_RECOVERED, None


def cut_off(m: RunFrame, horizon: float) -> bool:
    """Whether a fault's ``horizon`` is the next fault's injection, before the end of the judged load: what
    came after belongs to that one. Its last normal gap is then judged as a load's last is (``judge_end``): the
    output of the input sent in it was due after the next fault struck."""
    return horizon < m.judge_end


def occurrence_window(ft: np.ndarray, i: int, bucket: float, judge_end: float,
                      owner: np.ndarray) -> tuple[float, np.ndarray]:
    """The horizon of the ``i``-th fault (injection times ``ft``, sorted) and the abnormal gaps it owns
    (indices into ``owner``, each gap's owning fault). Faults injected less than a bucket apart (two
    marks at the same moment: both workers killed at once) are one occurrence: each is judged up to
    the next fault that is not part of it and owns the gaps of all of them -- else the first would get
    a zero-length window and be called masked, and the last the whole outage."""
    g0, g1 = i, i
    while g0 > 0 and ft[g0] - ft[g0 - 1] < bucket:
        g0 -= 1
    while g1 + 1 < ft.size and ft[g1 + 1] - ft[g1] < bucket:
        g1 += 1
    f = float(ft[i])
    horizon = max(f, min(float(ft[g1 + 1]) if g1 + 1 < ft.size else math.inf, judge_end))
    return horizon, np.flatnonzero((owner >= g0) & (owner <= g1))


def short_window(at: float, window: float, next_fault: bool, gap: float) -> str:
    """Why a fault at ``at`` (run seconds) with no sign in its ``window`` (to the next fault, or the end of
    the load) is not measurable: shorter than an abnormal output ``gap`` takes to show."""
    until = "the next fault" if next_fault else "the end of the load"
    return (f"the fault at t={at:.1f}s showed no sign by its horizon {window:.1f}s later ({until}), too soon for "
            f"an output gap to show (the job's gaps are abnormal past {gap:.1f}s): keep the load on longer after "
            "it (duration=...)")


def unmeasured_fault(timeline: list[TimelineEvent], params: MetricParams, arrivals: np.ndarray,
                     fault: FaultRecord, f: float, horizon: float) -> FaultMetrics:
    """The metrics of a fault whose effect cannot be measured: what the timeline and the output (sorted
    ``arrivals``) say of it -- the system's reaction, the first output after it, its phases --, nothing
    compared with a baseline (verdict ``unknown``)."""
    k = int(np.searchsorted(arrivals, f, side="right"))
    sys_ev = first_system_event(timeline, params.system_detection_kinds, f, horizon)
    return FaultMetrics(
        t=f, kind=fault.kind, target=fault.target, horizon=horizon, downtime=None, gap_start=None, gap_end=None,
        output_symptom=None, output_gap=None, catch_up=None, recovery_time=None, recovered_at=None,
        first_output_after=float(arrivals[k]) if k < arrivals.size else None, peak_latency=math.nan,
        failure_cost=None, verdict="unknown", system_detection=None if sys_ev is None else sys_ev.t - f,
        system_detection_event=None if sys_ev is None else sys_ev.kind,
        phases=recovery_phases(timeline, f, horizon), aim=fault.aim, label=fault.label)


def peak_latency(latencies: np.ndarray, pending: np.ndarray | None, f: float, horizon: float, t_end: float) -> float:
    """The peak of the ``latencies`` of the outputs in a fault's window (see *failure cost*; NaN without
    outputs); for a fault that did not recover, the sorted send times of inputs never processed
    (``pending``) count with their age at ``t_end``: they waited at least that long."""
    lw = latencies[np.isfinite(latencies)]
    peak = float(lw.max()) if lw.size else math.nan
    if pending is not None and pending.size:
        k0 = int(np.searchsorted(pending, f, side="left"))
        if k0 < pending.size and pending[k0] <= horizon:
            waited = t_end - float(pending[k0])
            peak = max(peak, waited) if math.isfinite(peak) else waited
    return peak


def _verdict(detection: float | None, downtime: float, recovered: bool, peak: float, p: MetricParams) -> str:
    """A measured fault's verdict: masked (no sign in the output), outage or degraded."""
    if detection is None:
        return "masked"
    if (
        downtime > p.outage_seconds
        or not recovered
        or (p.slo_latency_seconds is not None and not peak <= p.slo_latency_seconds)
    ):
        return "outage"
    return "degraded"


def recovery_phases(timeline: list[TimelineEvent], f: float, until: float) -> list[dict[str, Any]]:
    """The first event of each :func:`~.params.phase_kinds` kind in ``[f, until]``, in time order: how the system
    went from the fault to recovery (a leader elected, the broker back, the NameNode out of safe mode)."""
    seen: dict[str, TimelineEvent] = {}
    phases = phase_kinds()
    for e in sorted(timeline, key=lambda e: e.t):
        if e.kind in phases and f <= e.t <= until and e.kind not in seen:
            if e.kind == Kind.DRIVER_LAUNCHED and not Launched.of(e).relaunch:
                continue
            seen[e.kind] = e
    return [{"at": round(e.t - f, 3), "kind": e.kind, "target": e.target} for e in seen.values()]


def first_system_event(timeline: list[TimelineEvent], kinds: tuple[str, ...], f: float,
                        horizon: float) -> TimelineEvent | None:
    """The first event of ``kinds`` in ``[f, horizon]``; a ``driver_launched`` counts only as a
    relaunch (its first launch is the job's start, not a reaction)."""
    best: TimelineEvent | None = None
    for e in timeline:
        if e.kind not in kinds or not f <= e.t <= horizon:
            continue
        if e.kind == Kind.DRIVER_LAUNCHED and not Launched.of(e).relaunch:
            continue
        if best is None or e.t < best.t:
            best = e
    return best
