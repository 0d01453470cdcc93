"""One run against another of the same scenario: configuration A/B, or fault-tolerance overhead
(:func:`overhead`).

``run_b.versus(run_a)`` (or ``chaos.compare(...)``, which makes both runs) gives per headline metric
the value in A, in B and the change, and -- when B has faults -- a masking verdict per fault, after
Martin et al. (seed papers 003/004), judged against A as the fault-free reference:

- **masked**: during the fault's window (injection to the next fault or the end of the load) B's
  per-second p99 latency never rose above the *band* -- the highest per-second p99 latency the job
  showed without a fault: A during its load phase, B before its first fault -- and B's output never
  stopped;
- **degraded**: latency rose above the band, but output never stopped (no downtime), the fault
  recovered, and -- if ``slo_latency`` is given -- the peak latency stayed within it;
- **outage**: output stopped (downtime > 0), the fault did not recover, or latency broke the SLO.

Why the highest per-second p99 as the band: it is what the unfaulted job does at its worst on the
same machine, so only an effect the job never shows on its own is attributed to the fault. B's own
fault-free stretch counts too: on a shared machine two runs minutes apart differ by tens of percent,
and a B that was slower than A before any fault must not have that blamed on its fault.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from . import keys
from .run_metrics import RunMetrics
from .sentinels import RecoveryTime


class RunSet(Protocol):
    """Runs of one scenario (one run is a set of one): what a latency band is taken over."""

    @property
    def runs(self) -> Sequence[OneRun]: ...


class OneRun(RunSet, Protocol):
    """One run as the comparisons read it (a :class:`~pytest_streamchaos.analysis.result.ChaosRun`): its metrics,
    its JSON (what a comparison's picture draws)."""

    @property
    def metrics(self) -> RunMetrics: ...

    def to_dict(self) -> dict[str, object]: ...


class Runs(RunSet, Protocol):
    """A run or repeated runs (``ChaosRun``, ``RepeatedRun``): every run, the worst of them, and the headline
    metrics as attributes (:func:`~pytest_streamchaos.analysis.keys.from_run`)."""

    @property
    def worst_run(self) -> OneRun: ...

#: the metrics a comparison reports (dotted: attributes of the runs)
COMPARED: tuple[str, ...] = ("latency.p50", "latency.p99", "reliable_throughput", "downtime", "recovery_time",
                             "failure_cost", "lost", "duplicates", "reliability")


@dataclass(frozen=True)
class Delta:
    """One metric in A and B; ``change = b - a``; ``worse`` > 0 when B is worse (direction-aware)."""

    metric: str
    a: float
    b: float

    @property
    def change(self) -> float:
        return self.b - self.a

    @property
    def relative(self) -> float:
        """``change / |a|`` (NaN when A is 0 and nothing changed, inf when it did)."""
        c = self.change
        if self.a == 0 or not math.isfinite(self.a):
            if c == 0:
                return 0.0
            return math.nan if math.isnan(c) else math.copysign(math.inf, c)
        return c / abs(self.a)

    @property
    def worse(self) -> float:
        return keys.worse(self.metric, self.a, self.b)

    def __str__(self) -> str:
        rel = self.relative
        pct = "" if not math.isfinite(rel) or self.a == 0 else f" ({rel:+.0%})"
        return f"{self.metric}: {keys.fmt(self.a)} -> {keys.fmt(self.b)} ({keys.fmt_signed(self.change)}){pct}"


@dataclass(frozen=True)
class FaultVerdict:
    """The masking verdict on one fault of run B, against run A's latency band."""

    index: int
    kind: str
    target: str
    at: float  #: seconds from the start of B (as its timeline lines count)
    verdict: str  #: masked / degraded / outage
    peak_latency: float  #: highest per-second p99 latency of B in the fault's window
    band: float  #: the highest fault-free per-second p99 latency (A's load, B before its faults) x k
    downtime: float | None
    reason: str

    def __str__(self) -> str:
        return (f"fault {self.index} ({self.kind} {self.target} at {self.at:+.1f}s): {self.verdict} -- "
                f"{self.reason}")


@dataclass
class Versus:
    """Run B against run A (see the module docstring); ``labels`` name them in reports."""

    a: Runs
    b: Runs
    deltas: dict[str, Delta]
    faults: list[FaultVerdict] = field(default_factory=list)
    labels: tuple[str, str] = ("A", "B")
    slo_latency: float | None = None

    def __getitem__(self, metric: str) -> Delta:
        return self.deltas[metric]

    @property
    def verdicts(self) -> list[str]:
        """The masking verdict of each fault of B, in order."""
        return [f.verdict for f in self.faults]

    def describe(self) -> str:
        """Per-metric lines ``metric: a -> b (change)`` then one line per fault verdict."""
        a, b = self.labels
        lines = [f"{b} versus {a}:"] + [f"  {d}" for d in self.deltas.values()]
        lines += [f"  {v}" for v in self.faults]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, object]:
        num = keys.json_number
        return {
            "labels": list(self.labels),
            "slo_latency": self.slo_latency,
            "deltas": {m: {"a": num(d.a), "b": num(d.b), "change": num(d.change)} for m, d in self.deltas.items()},
            "faults": [{"index": v.index, "kind": v.kind, "target": v.target, "at": v.at, "verdict": v.verdict,
                        "peak_latency": num(v.peak_latency), "band": num(v.band), "downtime": v.downtime,
                        "reason": v.reason} for v in self.faults],
        }


def latency_band(run: RunSet, before_faults: bool = False) -> float:
    """The highest per-second p99 latency of ``run`` during its load phase (NaN if none measured);
    for repeated runs, the highest over all of them. ``before_faults``: only the seconds that end
    before its first fault (all of the load when it had none)."""
    return max((_band(one, before_faults) for one in run.runs), default=math.nan)


def _band(run: OneRun, before_faults: bool) -> float:
    """:func:`latency_band` of one run."""
    m = run.metrics
    s = m.series
    sel = (s.t >= m.load_start) & (s.t < m.load_end) & np.isfinite(s.latency_p99)
    if before_faults and m.faults:
        # buckets hold outputs by arrival time: one that ends by the first injection holds no output
        # the fault could have touched
        sel &= s.t + m.params.bucket_seconds <= min(f.t for f in m.faults)
    return float(s.latency_p99[sel].max()) if sel.any() else math.nan


def fault_free_band(b: OneRun, a: Runs) -> float:
    """The band of run ``b`` against the fault-free run ``a``: the higher of A's band and B's own
    before its first fault (NaN only when neither measured any)."""
    bands = [x for x in (latency_band(a), latency_band(b, before_faults=True)) if math.isfinite(x)]
    return max(bands, default=math.nan)


def fault_verdicts(run: OneRun, band: float, slo_latency: float | None = None,
                   factor: float = 1.0) -> list[FaultVerdict]:
    """A masking verdict per fault of ``run`` (one ChaosRun) against the latency ``band`` times
    ``factor`` (k: "p99 stays within k x the fault-free p99"; 1 = the band itself)."""
    if not factor > 0:
        raise ValueError(f"factor={factor!r}: the band's multiplier must be > 0")
    band = band * factor
    m = run.metrics
    s = m.series
    out = []
    for i, f in enumerate(m.faults):
        # the buckets the fault's window touches: [injection, horizon]
        sel = (s.t + m.params.bucket_seconds > f.t) & (s.t <= f.horizon) & np.isfinite(s.latency_p99)
        peak = float(s.latency_p99[sel].max()) if sel.any() else math.nan
        rose = math.isfinite(band) and peak > band
        if f.downtime is None:
            verdict, reason = "unknown", "its effect on the output was not measurable (the run's unavailable says why)"
        elif f.downtime > 0 or not f.recovered:
            verdict = "outage"
            reason = (f"output stopped for {f.downtime:.1f}s" if f.downtime > 0 else "did not recover")
        elif slo_latency is not None and peak > slo_latency:
            verdict, reason = "outage", f"p99 latency peaked at {peak:.2f}s, above the SLO {slo_latency:g}s"
        elif rose:
            slo = f", within the SLO {slo_latency:g}s" if slo_latency is not None else ""
            verdict, reason = "degraded", f"p99 latency rose to {peak:.2f}s (baseline band {band:.2f}s){slo}"
        else:
            within = f"({keys.fmt(peak)}s <= {band:.2f}s)"
            verdict, reason = "masked", f"p99 latency stayed within the baseline band {within}"
        out.append(FaultVerdict(i, f.kind, f.target, f.t - m.t0, verdict, peak,
                                band, f.downtime, reason))
    return out


def versus(b: Runs, a: Runs, slo_latency: float | None = None, labels: tuple[str, str] = ("A", "B"),
           factor: float = 1.0) -> Versus:
    """Run ``b`` against run ``a`` (ChaosRun or RepeatedRun; medians for repeated runs). The fault
    verdicts are those of ``b``'s faults (its worst run's, when repeated) against the fault-free band
    (:func:`fault_free_band`) times ``factor``."""
    deltas = {m: Delta(m, keys.from_run(a, m), keys.from_run(b, m)) for m in COMPARED}
    one = b.worst_run
    return Versus(a, b, deltas, fault_verdicts(one, fault_free_band(one, a), slo_latency, factor), labels,
                  slo_latency)


@dataclass(frozen=True)
class Overhead:
    """What a fault-tolerance setting costs in regular operation, and how fast it is back after a fault
    (after the study of Flink's fault-tolerance overhead with HiBench, seed paper 003): ratios of run B's
    steady state (its baseline: the load before its first fault, or all of it) to run A's."""

    latency_p50: float  #: B's baseline median latency / A's
    latency_p99: float  #: B's baseline p99 latency / A's
    throughput: float  #: B's baseline reliable throughput / A's (1.0 when both keep up with the load)
    #: seconds from B's fault until it was back to normal (its largest recovery time; NOT_RECOVERED
    #: compares above every number); None when B had no fault
    back_to_normal: RecoveryTime | None = None

    def within(self, max_latency_ratio: float, min_throughput_ratio: float = 0.0) -> bool:
        """The overhead verdict: B's baseline p99 latency at most ``max_latency_ratio`` x A's and its
        throughput at least ``min_throughput_ratio`` x A's (NaN ratios fail)."""
        return self.latency_p99 <= max_latency_ratio and self.throughput >= min_throughput_ratio

    def describe(self) -> str:
        back = ""
        if self.back_to_normal is not None:
            back = f", back to normal after a fault in {keys.fmt(float(self.back_to_normal))}s"
        return (f"overhead: latency p50 x{keys.fmt(self.latency_p50)}, p99 x{keys.fmt(self.latency_p99)}, "
                f"throughput x{keys.fmt(self.throughput)}{back}")


def _ratio(b: float, a: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)) or a <= 0:
        return math.nan
    return b / a


def overhead(b: OneRun, a: OneRun) -> Overhead:
    """Run ``b`` (the setting under test) against run ``a`` (the reference setting), both ChaosRuns
    of the same job and load: see :class:`Overhead`."""
    ma, mb = a.metrics, b.metrics
    return Overhead(_ratio(mb.latency.baseline, ma.latency.baseline),
                    _ratio(mb.latency.baseline_p99, ma.latency.baseline_p99),
                    _ratio(mb.baseline.throughput, ma.baseline.throughput),
                    mb.recovery_time if mb.faults else None)



