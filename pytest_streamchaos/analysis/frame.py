"""The run-wide half of the metrics (definitions in :mod:`pytest_streamchaos.analysis.metrics`): the time
frame, the baseline and whether it is measurable, the per-bucket series, the abnormal output gaps and the
band, computed once from the :class:`~pytest_streamchaos.history.History`; :mod:`.per_fault` then measures
each fault against them."""

from __future__ import annotations

import math

import numpy as np

from ..events import Phase
from ..history import FaultRecord, History
from .oracle import Oracle
from .params import BASELINE_CYCLES, MetricParams
from .series import (
    _bucket_index,
    _bucket_latency,
    _forward_mean,
    _hist,
    _in_band_runs,
    _sorted,
    _spread_cumulative,
    normal_gap,
)
from .trigger import batch_cadence
from .validate import GuaranteeReport


class RunFrame:
    """The working state of :func:`~pytest_streamchaos.analysis.metrics.compute_metrics`: one method per
    run-wide step of the definitions, each leaving its results as attributes for the next (:meth:`build`
    runs them in order). ``faults``: the injections measured (``History.injected``), in time order."""

    def __init__(self, history: History, report: GuaranteeReport, oracle: Oracle, p: MetricParams) -> None:
        self.history, self.report, self.p = history, report, p
        sent, outs = history.sent, history.outputs
        self.B = float(p.bucket_seconds)

        # outputs in arrival order (the collector records them so; be safe)
        arrival = np.asarray(outs.arrival_ts, dtype=np.float64)
        ref = oracle.reference_send_ts(sent, outs, report.appearance_rows)
        lat_all = arrival - ref
        if arrival.size > 1 and bool(np.any(np.diff(arrival) < 0)):
            order = np.argsort(arrival, kind="stable")
            arr_sorted, lat_sorted = arrival[order], lat_all[order]
        else:
            arr_sorted, lat_sorted = arrival, lat_all
        self.arrival, self.lat_all, self.arr_sorted, self.lat_sorted = arrival, lat_all, arr_sorted, lat_sorted

        self.faults: list[FaultRecord] = history.injected(p.fault_kinds)
        self.ft = np.asarray([f.injected_at for f in self.faults], dtype=np.float64)
        self.send_ts = np.asarray(sent.send_ts, dtype=np.float64)
        self.first_ts = report.pair_first_ts

    def build(self) -> RunFrame:
        """Every run-wide step, in order."""
        self.time_frame()
        self.baseline()
        self.measurability()
        self.series()
        self.abnormal_gaps()
        self.bands()
        return self

    def time_frame(self) -> None:
        """``t0``, ``t_end``, the buckets, the load phase and the baseline's end (or why there is none)."""
        history, p, B = self.history, self.p, self.B
        send_ts, arr_sorted, ft = self.send_ts, self.arr_sorted, self.ft
        starts = ([float(send_ts.min())] if send_ts.size else []) + ([float(arr_sorted[0])] if arr_sorted.size else [])
        if not starts:
            raise ValueError("cannot compute metrics of an empty trace: nothing was sent and nothing came out")
        t0 = float(min(starts + ([float(ft[0])] if ft.size else [])))
        ends = [float(send_ts.max()) if send_ts.size else t0, float(arr_sorted[-1]) if arr_sorted.size else t0]
        ends += [float(v) for v in history.phases.values()] + ([float(ft[-1])] if ft.size else [])
        t_end = max(ends)
        nb = int(math.floor((t_end - t0) / B)) + 1
        self.t0, self.t_end, self.nb = t0, t_end, nb
        self.edges = t0 + B * np.arange(nb + 1)

        if Phase.WARMUP_END in history.phases:
            load_start = float(history.phases[Phase.WARMUP_END])
        else:
            load_start = (float(arr_sorted[0]) if arr_sorted.size else t0) + p.warmup_seconds
        load_end = float(history.phases.get(Phase.LOAD_END, send_ts.max() if send_ts.size else t_end))
        base_end = float(ft[0]) if ft.size else load_end
        unavailable: dict[str, str] = {}
        if ft.size and base_end - load_start < max(B, p.hold_seconds):
            # Degrade, do not vanish: the counts and the guarantee need no baseline, so they are still
            # reported; only what compares against the baseline becomes None, with this reason.
            why = (
                f"no usable baseline: the first fault at t={base_end - t0:.1f}s comes {base_end - load_start:.1f}s "
                f"after warm-up ended (t={load_start - t0:.1f}s); recovery needs at least "
                f"{max(B, p.hold_seconds):.1f}s of steady "
                "load before the first fault -- inject it later (after=...) or shorten the warm-up"
            )
            unavailable = {"recovery_time": why, "failure_cost": why}
        self.load_start, self.load_end, self.base_end = load_start, load_end, base_end
        self.unavailable, self.has_baseline = unavailable, not unavailable

    def baseline(self) -> None:
        """Normal gap, downtime threshold, baseline throughput and latency, the latency bound."""
        p, arr_sorted, first_ts = self.p, self.arr_sorted, self.first_ts
        load_start, base_end = self.load_start, self.base_end
        # arrivals are sorted: time windows are slices (no full-length masks on millions of outputs)
        i0, i1 = np.searchsorted(arr_sorted, [load_start, base_end], side="left")
        gap0 = normal_gap(arr_sorted[i0:i1], self.history.trigger_seconds, p.gap_time_quantile)
        self.gap0, self.downtime_gap = gap0, max(p.min_gap_seconds, p.gap_factor * gap0)
        processed_in_base = np.count_nonzero((first_ts >= load_start) & (first_ts < base_end))
        self.base_tp = processed_in_base / max(base_end - load_start, 1e-9)
        base_lat = self.lat_sorted[i0:i1]
        base_lat = base_lat[np.isfinite(base_lat)]
        q = p.latency_quantile
        if base_lat.size:
            b50, b95, b99, bq = (float(v) for v in np.quantile(base_lat, [0.5, 0.95, 0.99, q]))
        else:
            b50 = b95 = b99 = bq = math.nan
        self.b50, self.b95, self.b99, self.bq = b50, b95, b99, bq
        slack = self.history.trigger_seconds if p.latency_slack_seconds is None else p.latency_slack_seconds
        self.bound = bq * p.latency_factor + slack if math.isfinite(bq) else math.inf

    def measurability(self) -> None:
        """The job's cycle, and whether the baseline saw its normal output (:func:`baseline_measurable`): if
        not, downtime, recovery time and failure cost are not measurable (``gap_known`` False)."""
        self.cycle, why = baseline_measurable(self.history, self.load_start, self.base_end, self.base_tp,
                                              self.arr_sorted, self.t0, bool(self.ft.size) and self.has_baseline)
        self.gap_known = why is None
        if why is not None:
            self.unavailable = {"downtime": why, "recovery_time": why, "failure_cost": why}
            self.has_baseline = False

    def series(self) -> None:
        """The per-bucket series: rates, reliable throughput (raw, spread, smoothed), latency, backlog."""
        p, B, nb, t0 = self.p, self.B, self.nb, self.t0
        arr_sorted, first_ts, report = self.arr_sorted, self.first_ts, self.report
        self.inp = _hist(self.send_ts, t0, B, nb) / B
        arr_b = _bucket_index(arr_sorted, t0, B, nb)
        self.outr = np.bincount(arr_b, minlength=nb)[:nb] / B
        lengths = self.history.outputs.lengths()
        if lengths.size and bool((lengths == 1).all()):
            self.out_ids = self.outr.copy()
        else:
            self.out_ids = _hist(self.arrival, t0, B, nb, weights=lengths) / B
        self.reliable = _hist(first_ts, t0, B, nb) / B
        cum = _spread_cumulative(first_ts, t0, B, nb, self.gap0)
        spread = np.diff(cum) / B
        # the outputs of the last normal gap's input come after the load ends: judge only up to here
        self.judge_end = max(self.load_start, self.load_end - self.gap0)
        w_b = max(1, int(round(p.smooth_seconds / B)))
        self.spread, self.w_b = spread, w_b
        self.smooth = _forward_mean(spread, w_b, self.stop_bucket(self.judge_end))
        # trailing mean, for detection only (a forward window would see a gap before it starts)
        c_sp = np.concatenate(([0.0], np.cumsum(spread)))
        lo = np.maximum(np.arange(nb) + 1 - w_b, 0)
        self.trailing = (c_sp[1:] - c_sp[lo]) / (np.arange(nb) + 1 - lo)
        qs = [0.5, 0.95, 0.99, p.latency_quantile]
        self.bl = _bucket_latency(arr_sorted, self.lat_sorted, t0, B, nb, qs)
        self.lat_q = self.bl[3]
        sent_exp = _sorted(self.send_ts[report.pair_rows]) if report.pair_rows.size else np.empty(0)
        done = _sorted(first_ts[np.isfinite(first_ts)])
        sent_cum = np.searchsorted(sent_exp, self.edges[1:], side="right")
        self.backlog = (sent_cum - np.searchsorted(done, self.edges[1:], side="right")).astype(np.float64)

    def abnormal_gaps(self) -> None:
        """Gaps between outputs while input arrives, longer than the downtime threshold."""
        arr_sorted, load_end = self.arr_sorted, self.load_end
        uniq = arr_sorted[np.concatenate(([True], np.diff(arr_sorted) > 0))] if arr_sorted.size else arr_sorted
        if uniq.size == 0:
            uniq = np.array([self.load_start])  # nothing ever came out: one gap from the end of warm-up
        g_start = uniq
        g_end = np.concatenate((uniq[1:], [math.inf]))
        g_len = np.minimum(g_end, load_end) - g_start
        abnormal = (g_len > self.downtime_gap) & (g_start < load_end)
        self.ab_start, self.ab_end = g_start[abnormal], np.minimum(g_end[abnormal], load_end)
        self.ab_len = self.ab_end - self.ab_start

    def bands(self) -> None:
        """Which buckets are in band, the run of in-band buckets from each, the owner fault of each
        abnormal gap, and the send times of expected inputs never processed."""
        p, B, nb, t0, ft = self.p, self.B, self.nb, self.t0, self.ft
        ab_start, ab_end, base_tp = self.ab_start, self.ab_end, self.base_tp
        tp_ok = self.throughput_ok(self.smooth)
        self.tp_trailing_ok = (np.abs(self.trailing - base_tp) <= p.throughput_band * base_tp if base_tp > 0
                               else np.ones(nb, bool))
        self.lat_ok = ~(self.lat_q > self.bound)  # NaN (no output) passes
        in_gap = np.zeros(nb + 1, dtype=np.int64)
        # buckets overlapping an abnormal gap are out of band: difference array over bucket ranges
        gb0 = np.clip(np.floor((ab_start - t0) / B).astype(np.int64), 0, nb - 1)
        gb1 = np.clip(np.floor((ab_end - t0) / B).astype(np.int64), 0, nb - 1)
        np.add.at(in_gap, gb0, 1)
        np.add.at(in_gap, gb1 + 1, -1)
        self.gap_ok = gap_ok = np.cumsum(in_gap[:nb]) == 0
        self.ok = tp_ok & self.lat_ok & gap_ok
        self.run = _in_band_runs(self.ok)  # run length of in-band buckets starting at each bucket
        self.hold_b = max(1, int(math.ceil(p.hold_seconds / B - 1e-9)))

        # a gap is the fault's that came before the output was due (the last output plus the normal
        # gap), not before that last output: a broker killed 0.3 s after a batch's output owns the
        # silence that follows, though it began before the kill
        due = ab_start + self.gap0
        owner = np.searchsorted(ft, due, side="right") - 1 if ft.size else np.full(ab_start.size, -1)
        if ft.size:
            owner = np.where((owner < 0) & (ab_end > ft[0]), 0, owner)
        self.owner = owner
        rows = self.report.pair_rows
        self.pend_send = np.sort(self.send_ts[rows[~np.isfinite(self.first_ts)]]) if rows.size else np.empty(0)

    def stop_bucket(self, end: float) -> int:
        """The first bucket a judgement that ends at ``end`` does not look into."""
        return min(self.nb, int(math.ceil((end - self.t0) / self.B)))

    def throughput_ok(self, smooth: np.ndarray) -> np.ndarray:
        """Which buckets of a smoothed reliable throughput are within the band around the baseline's."""
        base_tp, band = self.base_tp, self.p.throughput_band
        return np.abs(smooth - base_tp) <= band * base_tp if base_tp > 0 else np.ones(self.nb, bool)

    def runs_until(self, end: float) -> np.ndarray:
        """:attr:`run` as a judgement that ends at ``end`` sees it: the forward-smoothed throughput looks no
        further than ``end``. A fault the next one cuts is judged on what came before that one, as the history
        so far showed it then -- else the next fault's dip, smoothed back, would undo a recovery that was
        over before it (docs/metrics.md#recovery)."""
        smooth = _forward_mean(self.spread, self.w_b, self.stop_bucket(end))
        return _in_band_runs(self.throughput_ok(smooth) & self.lat_ok & self.gap_ok)


def baseline_measurable(history: History, start: float, end: float, throughput: float, arrivals: np.ndarray, t0: float,
                        judged: bool) -> tuple[float, str | None]:
    """The job's cycle (``max(trigger, Spark's progress's median time between batches)``), and why the
    baseline from ``start`` to ``end`` (its ``throughput``; the sorted output ``arrivals``) cannot tell a
    fault's effect, or None when it can (or is not ``judged``: no fault, or no baseline already). A job whose
    output flows while its batches run (real-time mode) has no silence between batches to tell apart: its
    progress's cadence (the checkpoint interval) is not its cycle."""
    cadence = None if history.trace.continuous else batch_cadence(history.trace.batches, end)
    cycle = max(float(history.trigger_seconds), cadence or 0.0)
    short = end - start < BASELINE_CYCLES * cycle
    # nothing processed in the baseline is unknown normal output -- unless nothing came out after it either:
    # a job that stopped for good is an outage whatever its normal output
    silent = throughput <= 0 and arrivals.size > 0 and arrivals[-1] >= end
    if not judged or not (short or silent):
        return cycle, None
    from_progress = cadence is not None and cadence > history.trigger_seconds
    return cycle, unmeasurable_baseline(cycle, from_progress, start - t0, end - t0, short)


def unmeasurable_baseline(cycle: float, from_progress: bool, start: float, end: float, short: bool) -> str:
    """Why a baseline from ``start`` to ``end`` (run seconds) cannot tell a fault's effect: ``short`` -- less
    than :data:`BASELINE_CYCLES` of the job's ``cycle`` (read from Spark's progress, or its trigger) -- or
    nothing processed in it."""
    where = f"the baseline -- the steady load from warm-up's end (t={start:.1f}s) to the first fault (t={end:.1f}s) -- "
    if not short:
        return (f"nothing was processed during {where}so the job's normal output is unknown; inject the first "
                "fault once the output flows (a later after=...)")
    need = BASELINE_CYCLES * cycle
    source = "Spark's progress" if from_progress else "its trigger"
    pace = f"every {cycle:.1f}s ({source})"
    return (f"the job's micro-batches come {pace} and {where}lasted {end - start:.1f}s, less than the {need:.0f}s "
            f"({BASELINE_CYCLES:g} micro-batches) needed to learn its normal output, so a fault's effect cannot be "
            "told from the job's usual silence between batches; inject the first fault at least "
            f"{need:.0f}s after steady state (after={math.ceil(need)}) and keep the load on for several "
            "micro-batches after it (duration=...)")
