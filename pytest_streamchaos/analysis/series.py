"""The building blocks of the per-bucket series: Spark's micro-batches, the normal gap between outputs,
histograms and spread / smoothed rates over buckets, per-bucket latency quantiles, runs of in-band
buckets, and the stability of recovery times (definitions in :mod:`pytest_streamchaos.analysis.metrics`)."""

from __future__ import annotations

import math

import numpy as np

from ..history import batch_start
from ..records import BatchProgress
from .run_metrics import MicroBatches, Stability
from .sentinels import NotRecovered, RecoveryTime


def micro_batches(batches: list[BatchProgress]) -> MicroBatches:
    """Parse Spark ``StreamingQueryProgress`` dicts (batchId, timestamp, durationMs.triggerExecution)."""
    bid, start, dur, rows = [], [], [], []
    for b in batches:
        trig = (b.get("durationMs") or {}).get("triggerExecution")
        bid.append(int(b.get("batchId", -1)))
        start.append(batch_start({"timestamp": b.get("timestamp")}))
        dur.append(float(trig) / 1000.0 if trig is not None else math.nan)
        rows.append(int(b.get("numInputRows", -1)))
    return MicroBatches(
        np.asarray(bid, dtype=np.int64),
        np.asarray(start, dtype=np.float64),
        np.asarray(dur, dtype=np.float64),
        np.asarray(rows, dtype=np.int64),
    )


def normal_gap(arrivals: np.ndarray, trigger: float, quantile: float = 0.8) -> float:
    """The job's normal time between outputs: ``max(trigger, time-weighted quantile of gaps)``."""
    a = np.asarray(arrivals, dtype=np.float64)
    if a.size < 2:
        return float(trigger)
    g = np.sort(np.diff(a))
    total = g.sum()
    if total <= 0:
        return float(trigger)
    share = np.cumsum(g) / total
    return float(max(trigger, g[min(int(np.searchsorted(share, quantile)), g.size - 1)]))


def _sorted(a: np.ndarray) -> np.ndarray:
    """``a`` sorted; recorded times usually already are, which a linear check finds."""
    return a if a.size < 2 or bool(np.all(a[1:] >= a[:-1])) else np.sort(a)


def _bucket_index(ts: np.ndarray, t0: float, B: float, nb: int) -> np.ndarray:
    """Bucket of each finite time (NaN dropped), clipped into ``[0, nb)``."""
    ts = np.asarray(ts, dtype=np.float64)
    if not np.isfinite(ts).all():
        ts = ts[np.isfinite(ts)]
    x = (ts - t0) * (1.0 / B)
    np.clip(x, 0, nb - 1, out=x)
    return x.astype(np.int64)  # truncation == floor for x >= 0


def _hist(ts: np.ndarray, t0: float, B: float, nb: int, weights: np.ndarray | None = None) -> np.ndarray:
    return np.bincount(_bucket_index(ts, t0, B, nb), weights=weights, minlength=nb)[:nb].astype(np.float64)


def _spread_cumulative(first_ts: np.ndarray, t0: float, B: float, nb: int, spread: float) -> np.ndarray:
    """Cumulative newly-processed ids at bucket edges, each id's mass spread uniformly over the
    ``spread`` seconds (the normal gap) before its first correct appearance: a micro-batch's output
    stands for the work of the interval before it, so the bursts of a healthy job become a flat
    rate while a real gap stays a gap."""
    edges = B * np.arange(nb + 1)
    ft = first_ts[np.isfinite(first_ts)] - t0
    if ft.size == 0:
        return np.zeros(nb + 1)
    r = B / 10.0  # aggregate on a fine grid first: O(#bins) below instead of O(#ids)
    fbin = np.floor(ft / r).astype(np.int64)
    mass = np.bincount(fbin).astype(np.float64)
    mb = np.flatnonzero(mass)
    d = max(float(spread), r)
    e = (mb + 1) * r
    s = e - d
    rho = mass[mb] / d

    def ramp_sum(starts: np.ndarray, x: np.ndarray) -> np.ndarray:
        # sum_i rho_i * max(x - start_i, 0); starts are sorted (fine bins ascending)
        a = np.concatenate(([0.0], np.cumsum(rho)))
        b = np.concatenate(([0.0], np.cumsum(rho * starts)))
        k = np.searchsorted(starts, x, side="right")
        return x * a[k] - b[k]

    return ramp_sum(s, edges) - ramp_sum(e, edges)


def _forward_mean(x: np.ndarray, w: int, stop: int) -> np.ndarray:
    """Mean of ``x[b : min(b + w, stop)]`` (or ``x[b]`` past ``stop``)."""
    n = x.size
    c = np.concatenate(([0.0], np.cumsum(x)))
    b = np.arange(n)
    hi = np.where(b < stop, np.minimum(b + w, stop), b + 1)
    hi = np.minimum(hi, n)
    return (c[hi] - c[b]) / np.maximum(hi - b, 1)


def _bucket_latency(arr: np.ndarray, lat: np.ndarray, t0: float, B: float, nb: int, qs: list[float]) -> np.ndarray:
    """Per-bucket latency quantiles ``qs`` and max (NaN for buckets without outputs); arr sorted."""
    out = np.full((len(qs) + 1, nb), np.nan)
    fin = np.isfinite(lat)
    a, lv = arr[fin], lat[fin]
    if a.size == 0:
        return out
    cut = np.searchsorted(a, t0 + B * np.arange(nb + 1), side="left")
    cut[-1] = a.size
    for b in np.flatnonzero(np.diff(cut) > 0):
        seg = lv[cut[b] : cut[b + 1]]
        out[: len(qs), b] = np.quantile(seg, qs)
        out[-1, b] = seg.max()
    return out


def stability(rts: list[RecoveryTime | None], cap: float | None = None) -> Stability:
    """The spread of recovery times ``rts`` across repeated faults (None: not measurable, left out).

    Without ``cap`` the statistics are over the recovered faults only. With ``cap`` (the interval
    between the faults) the convention of "A Comprehensive Benchmarking Analysis of Fault Recovery in
    Stream Processing Frameworks" (§8): a fault that did not recover counts as ``cap`` seconds, and no
    recovery time counts more than ``cap`` (``not_recovered`` still says how many did not recover)."""
    nr = sum(isinstance(x, NotRecovered) for x in rts)
    if cap is None:
        vals = np.asarray([float(x) for x in rts if x is not None and not isinstance(x, NotRecovered)])
    else:
        vals = np.asarray([cap if isinstance(x, NotRecovered) else min(float(x), cap) for x in rts if x is not None])
    if vals.size == 0:
        return Stability(list(rts), math.nan, math.nan, math.nan, math.nan, math.nan, nr)
    mean, std = float(vals.mean()), float(vals.std())
    return Stability(list(rts), mean, std, std / mean if mean > 0 else 0.0, float(vals.min()), float(vals.max()), nr)


def _in_band_runs(ok: np.ndarray) -> np.ndarray:
    """Per bucket, how many in-band buckets run from it (one more entry, 0, past the end)."""
    nb = ok.shape[0]
    run = np.zeros(nb + 1, dtype=np.int64)
    for_b = ok.astype(np.int64)
    # reverse cumulative with resets: vectorised via positions of the next bad bucket
    bad_pos = np.flatnonzero(~ok)
    nxt = np.searchsorted(bad_pos, np.arange(nb), side="left")
    # no bad bucket at all: every bucket's next bad one is the end
    next_bad = (np.where(nxt < bad_pos.size, bad_pos[np.minimum(nxt, bad_pos.size - 1)], nb) if bad_pos.size
                else np.full(nb, nb))
    run[:nb] = (next_bad - np.arange(nb)) * for_b
    return run
