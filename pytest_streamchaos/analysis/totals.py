"""The run's totals (definitions in :mod:`pytest_streamchaos.analysis.metrics`): its downtime, recovery
time and failure cost over its faults, overall latency and reliable throughput, assembled with the
series, the baseline and the per-fault metrics into :class:`~.run_metrics.RunMetrics`."""

from __future__ import annotations

import math

import numpy as np

from .frame import RunFrame
from .groups import group_recoveries
from .run_metrics import Baseline, FaultMetrics, LatencySummary, RunMetrics, Series, worst_of
from .sentinels import RecoveryTime
from .series import micro_batches, stability


def run_metrics(m: RunFrame, faults: list[FaultMetrics], span: tuple[float, float] | None = None) -> RunMetrics:
    """The :class:`RunMetrics` of the run (its frame ``m``) with these per-fault metrics; ``span``: the
    stretch of a window's view (its totals without a fault: the longest abnormal gap that began in it)."""
    load_start, load_end, first_ts, bl = m.load_start, m.load_end, m.first_ts, m.bl
    ab_start, ab_len = m.ab_start, m.ab_len
    if span is not None:
        keep = (ab_start >= span[0]) & (ab_start < span[1])
        ab_start, ab_len = ab_start[keep], ab_len[keep]
    downtime_run, recovery_run, cost_run = _run_totals(faults, ab_start, ab_len, load_start)
    # Overall percentiles describe the measured part of the run (load + drain), not the startup
    # backlog of the warm-up, whose latency is the job's start time, not its behaviour.
    measured = m.lat_sorted[int(np.searchsorted(m.arr_sorted, load_start, side="left")):]
    lat_fin = measured[np.isfinite(measured)]
    if lat_fin.size:
        o50, o95, o99 = (float(v) for v in np.quantile(lat_fin, [0.5, 0.95, 0.99]))
        peak_all = float(lat_fin.max())
    else:
        o50 = o95 = o99 = peak_all = math.nan
    load_dur = max(load_end - load_start, 1e-9)
    rt_mean = float(np.count_nonzero((first_ts >= load_start) & (first_ts <= load_end))) / load_dur

    return RunMetrics(
        params=m.p,
        t0=m.t0,
        t_end=m.t_end,
        load_start=load_start,
        load_end=load_end,
        series=Series(
            t=m.edges[:-1], input=m.inp, outputs=m.outr, output_ids=m.out_ids, reliable=m.reliable,
            reliable_smoothed=m.smooth, latency_p50=bl[0], latency_p95=bl[1], latency_p99=bl[2],
            latency_max=bl[4], backlog=m.backlog, in_band=m.ok,
        ),
        latency=LatencySummary(o50, o95, o99, peak_all, m.b50, m.b95, m.b99, m.bound,
                               int(lat_fin.size)),
        baseline=Baseline(load_start, m.base_end, m.base_tp, m.b50, m.bound, m.gap0,
                          m.downtime_gap),
        faults=faults,
        downtime=downtime_run,
        recovery_time=recovery_run,
        failure_cost=cost_run,
        reliable_throughput=rt_mean,
        batches=micro_batches(m.history.trace.batches),
        stability=stability([f.recovery_time for f in faults]),
        output_latency=m.lat_all,
        unavailable=m.unavailable,
        cycle=m.cycle,
    )


def _run_totals(faults: list[FaultMetrics], ab_start: np.ndarray, ab_len: np.ndarray,
                load_start: float) -> tuple[float | None, RecoveryTime | None, float | None]:
    """The run's downtime, recovery time and failure cost: the worst over its faults (without a
    fault, the longest abnormal gap, ``ab_start`` / ``ab_len``, during the load phase); None when a
    fault's is not measurable (a worse one may hide there). Its recovery time is the worst over its groups of
    faults whose recoveries overlap (:func:`~.groups.recovery_groups`): a fault the next one struck before it
    recovered has none of its own, the chain of them has one, to its last fault's recovery."""
    if faults:
        # a cut-off fault's own "not recovered" would say the job never came back when it did after the last of
        # its chain, and its own None would hide the chain's recovery: the chain is measured as one
        return worst_of(faults, group_recoveries(faults))
    # no fault: the longest abnormal gap during the load phase still counts as downtime
    sel = ab_start >= load_start
    return (float(ab_len[sel].max()) if sel.any() else 0.0), 0.0, 0.0
