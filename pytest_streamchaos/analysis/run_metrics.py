"""What the metrics of one run are: per bucket (:class:`Series`), per fault (:class:`FaultMetrics`) and for
the run (:class:`RunMetrics`), with their JSON forms; and whether more load would change them
(:func:`recovery_settled`). Definitions in :mod:`pytest_streamchaos.analysis.metrics`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .. import deprecation
from ..events import Kind, TimelineEvent
from ..history import Aim
from .params import MetricParams, reaction_kinds
from .sentinels import NOT_RECOVERED, NotRecovered, RecoveryTime


def _num(x: object) -> Any:
    """JSON-friendly number: NaN -> None, inf -> 'inf', NOT_RECOVERED -> None."""
    if x is None or isinstance(x, NotRecovered):
        return None
    if isinstance(x, (float, np.floating)):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def _arr(a: np.ndarray) -> list[Any]:
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return [None if not math.isfinite(v) else v for v in a.tolist()]
    return a.tolist()


@dataclass
class LatencySummary:
    """Latency percentiles (seconds): overall, in the baseline, and the peak."""

    p50: float
    p95: float
    p99: float
    peak: float
    #: median baseline latency
    baseline: float
    baseline_p95: float
    #: what failure cost is measured against
    baseline_p99: float
    #: the band's upper bound on the per-bucket latency quantile
    bound: float
    count: int

    def to_dict(self) -> dict[str, object]:
        return {f.name: _num(getattr(self, f.name)) for f in fields(self)}


@dataclass
class Series:
    """Per-bucket series; ``t`` are bucket starts on the run clock, rates are per second."""

    t: np.ndarray
    input: np.ndarray
    outputs: np.ndarray
    output_ids: np.ndarray
    reliable: np.ndarray
    reliable_smoothed: np.ndarray
    latency_p50: np.ndarray
    latency_p95: np.ndarray
    latency_p99: np.ndarray
    latency_max: np.ndarray
    backlog: np.ndarray
    in_band: np.ndarray

    def to_dict(self) -> dict[str, object]:
        return {f.name: _arr(getattr(self, f.name)) for f in fields(self)}


@dataclass
class Baseline:
    start: float
    end: float
    throughput: float
    latency: float
    latency_bound: float
    normal_gap: float
    downtime_gap: float

    def to_dict(self) -> dict[str, object]:
        return {f.name: _num(getattr(self, f.name)) for f in fields(self)}


@dataclass
class FaultMetrics:
    """Everything measured about one fault (times absolute on the run clock, durations in s)."""

    t: float
    kind: str
    target: str
    horizon: float
    #: None: not measurable (the run's ``unavailable`` says why)
    downtime: float | None
    gap_start: float | None
    gap_end: float | None
    #: seconds from the fault to the first sign in the output (None: masked, or no baseline to see it)
    output_symptom: float | None
    #: None: not measurable
    output_gap: float | None
    catch_up: float | None
    #: None: not measurable (no baseline; see ``RunMetrics.unavailable``)
    recovery_time: RecoveryTime | None
    recovered_at: float | None
    first_output_after: float | None
    peak_latency: float
    #: None: not measurable (no baseline)
    failure_cost: float | None
    #: masked / degraded / outage, or ``unknown`` without a baseline and without downtime
    verdict: str
    #: seconds from the fault to the system's own first reaction in the timeline (None: none seen)
    system_detection: float | None = None
    #: the timeline kind of that reaction, e.g. ``executor_removed``
    system_detection_event: str | None = None
    #: what the system and the schedule did from the fault until it recovered (or its horizon): the first
    #: event of each :func:`~.params.phase_kinds` kind, as ``{"at": seconds after the fault, "kind", "target"}``
    phases: list[dict[str, Any]] = field(default_factory=list)
    #: an aimed fault (``when=``): where it landed (:class:`~pytest_streamchaos.history.Aim`: moment,
    #: batch, phase, hit, attempts; its JSON form is accepted too); None for a fault fired on the clock
    aim: Aim | None = None
    #: the fault occurrence's label (``FaultRecord.label``): what a window of the run names its faults by
    label: str = ""

    def __post_init__(self) -> None:
        self.aim = Aim.of(self.aim)

    @property
    def hit(self) -> bool | None:
        """Whether an aimed fault landed in the phase its moment names (None: not aimed). A test that
        needs the moment asserts it: ``assert run.faults[0].hit``."""
        return None if self.aim is None else self.aim.hit

    @property
    def detection(self) -> float | None:
        """Deprecated old name of :attr:`output_symptom` (the first sign in the output, not when the
        system detected the fault: that is :attr:`system_detection`); goes in 0.3.0."""
        deprecation.use("run.faults[i].detection", error=AttributeError)
        return self.output_symptom

    @property
    def recovered(self) -> bool | None:
        """True / False, or None when recovery could not be measured."""
        if self.recovery_time is None:
            return None
        return not isinstance(self.recovery_time, NotRecovered)

    def to_dict(self) -> dict[str, object]:
        d = {f.name: _num(getattr(self, f.name)) for f in fields(self)}
        d["aim"] = None if self.aim is None else self.aim.to_dict()
        d["recovered"] = self.recovered
        return d


@dataclass
class MicroBatches:
    """Spark micro-batches from the progress dicts: id, start time, trigger execution duration."""

    batch_id: np.ndarray
    start: np.ndarray
    duration: np.ndarray
    num_input_rows: np.ndarray

    def __len__(self) -> int:
        return int(self.batch_id.size)

    def summary(self) -> dict[str, object]:
        d = self.duration[np.isfinite(self.duration)]
        if d.size == 0:
            return {"count": len(self)}
        p50, p95 = np.quantile(d, [0.5, 0.95])
        return {"count": len(self), "p50": float(p50), "p95": float(p95), "max": float(d.max())}

    def to_dict(self) -> dict[str, object]:
        return {
            "batch_id": _arr(self.batch_id),
            "start": _arr(self.start),
            "duration": _arr(self.duration),
            "num_input_rows": _arr(self.num_input_rows),
            "summary": self.summary(),
        }


@dataclass
class Stability:
    """Spread of recovery times across repeated faults (recovered faults only)."""

    recovery_times: list[RecoveryTime | None]
    mean: float
    std: float
    cv: float
    min: float
    max: float
    not_recovered: int

    def is_stable(self, max_cv: float = 0.5) -> bool:
        """The stability verdict: every fault recovered and the recovery times vary by at most
        ``max_cv`` (std / mean) across them (docs/metrics.md#stability). Without a recovered fault: False."""
        return self.not_recovered == 0 and math.isfinite(self.cv) and self.cv <= max_cv

    def to_dict(self) -> dict[str, object]:
        d = {f.name: _num(getattr(self, f.name)) for f in fields(self) if f.name != "recovery_times"}
        d["recovery_times"] = [_num(x) for x in self.recovery_times]
        return d


@dataclass
class RunMetrics:
    """All metrics of one run; see the module docstring for definitions."""

    params: MetricParams
    t0: float
    t_end: float
    load_start: float
    load_end: float
    series: Series
    latency: LatencySummary
    baseline: Baseline
    faults: list[FaultMetrics]
    #: None: not measurable (the reason is in :attr:`unavailable`)
    downtime: float | None
    #: None: not measurable (the reason is in :attr:`unavailable`)
    recovery_time: RecoveryTime | None
    #: None: not measurable (the reason is in :attr:`unavailable`)
    failure_cost: float | None
    reliable_throughput: float
    batches: MicroBatches
    stability: Stability
    #: latency of every output in arrival order (NaN: no reference input)
    output_latency: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    #: metric name -> why it could not be computed (empty when every metric was)
    unavailable: dict[str, str] = field(default_factory=dict)
    #: the job's cycle: its trigger, or the median time between its micro-batches' starts when longer
    cycle: float = math.nan

    @property
    def recovered(self) -> bool | None:
        """True / False, or None when recovery could not be measured."""
        if self.recovery_time is None:
            return None
        return not isinstance(self.recovery_time, NotRecovered)

    def derived_events(self) -> list[TimelineEvent]:
        """Timeline events the analysis derives: first output after each fault, recovered / not."""
        ev: list[TimelineEvent] = []
        for i, f in enumerate(self.faults):
            tgt = f.target
            if f.first_output_after is not None:
                ev.append(TimelineEvent(f.first_output_after, Kind.FIRST_OUTPUT_AFTER_FAULT, tgt, {"fault": i}))
            if f.recovered_at is not None:
                detail = {"fault": i, "recovery_time": f.recovery_time}
                ev.append(TimelineEvent(f.recovered_at, Kind.RECOVERED, tgt, detail))
            elif f.recovered is False:  # None: not measurable, which is not "not recovered"
                ev.append(TimelineEvent(f.horizon, Kind.NOT_RECOVERED, tgt, {"fault": i}))
        return ev

    def to_dict(self) -> dict[str, object]:
        return {
            "params": self.params.to_dict(),
            "t0": self.t0,
            "t_end": self.t_end,
            "load_start": self.load_start,
            "load_end": self.load_end,
            "downtime": _num(self.downtime),
            "recovery_time": _num(self.recovery_time),
            "recovered": self.recovered,
            "failure_cost": _num(self.failure_cost),
            "unavailable": dict(self.unavailable),
            "measurable": not any(k in self.unavailable for k in ("downtime", "recovery_time")),
            "cycle": _num(self.cycle),
            "reliable_throughput": _num(self.reliable_throughput),
            "latency": self.latency.to_dict(),
            "baseline": self.baseline.to_dict(),
            "faults": [f.to_dict() for f in self.faults],
            "stability": self.stability.to_dict(),
            "batches": self.batches.to_dict(),
            "series": self.series.to_dict(),
        }


def recovery_settled(m: RunMetrics, timeline: list[TimelineEvent]) -> bool:
    """Whether every fault of ``m``, computed from a run still under load whose ``timeline`` so far
    is given, has a recovery verdict that more load would not change
    (docs/metrics.md#ending-the-load-on-recovery). ``need`` below is the hold, then the forward
    throughput window of its last bucket, then the stretch a later output can reach back into (its
    spread over the normal gap, or the start of a downtime gap), plus two buckets for rounding.

    - A fault that showed a sign and recovered: its recovery point ``T`` is at least ``need`` before the
      load's current end. Every bucket that decides ``T`` is then complete, so the whole run reports
      the same ``T``.
    - A fault with no sign so far (masked): the system reacted to it (``system_detection``), and
      ``need`` has passed with nothing in the output since the last event of :func:`~.params.reaction_kinds`
      after the first fault (the schedule's last injection or heal, an executor removed or added, a
      worker registered, ...). A fault the system has not noticed yet never settles: Spark notices
      some faults only after a timeout, and ending the load early would then report "masked" for
      what a longer load shows as an outage.
    - Not recovered, or no baseline: never settled.
    """
    if not m.faults:
        return False
    p = m.params
    reach_back = max(m.baseline.normal_gap, m.baseline.downtime_gap)
    if not math.isfinite(reach_back):
        return False
    need = p.hold_seconds + p.smooth_seconds + reach_back + 2 * p.bucket_seconds
    first = min(f.t for f in m.faults)
    reacting = reaction_kinds()
    quiet_since = max((e.t for e in timeline if e.kind in reacting and e.t >= first), default=first)

    def settled(f: FaultMetrics) -> bool:
        if f.output_symptom is None:  # masked so far (or no baseline: recovery_time None)
            return (f.recovery_time is not None and f.system_detection is not None
                    and max(f.t + f.system_detection, quiet_since) + need <= m.load_end)
        return bool(f.recovered) and f.recovered_at is not None and f.recovered_at + need <= m.load_end

    return all(settled(f) for f in m.faults)


def uncovered(faults: list[FaultMetrics]) -> list[FaultMetrics]:
    """The faults of one schedule whose own recovery is the schedule's: those the schedule's next fault did not
    strike before they recovered (a driver killed again while it replays: its first kill's recovery is cut at
    the second, and the schedule is over when the second one's is)."""
    ordered = sorted(faults, key=lambda f: f.t)
    out = []
    for i, f in enumerate(ordered):
        later = [g.t for g in ordered[i + 1:] if g.t > f.t]
        if not later or (f.recovered_at is not None and f.recovered_at <= later[0]):
            out.append(f)
    return out


def faults_back(m: RunMetrics, labels: set[str], timeline: list[TimelineEvent]) -> bool:
    """Whether the faults of ``labels`` (one schedule of one history), measured in ``m`` -- the metrics of the
    history so far, judged up to the output's last normal gap before its end -- are over, so that the next
    schedule's faults may fire (docs/explore.md#one-history): each recovered (its output back in band for the
    hold, which ``m`` reports only once the hold is complete), or, with no sign in the output, noticed by the
    system and quiet since its last reaction for the hold and a normal gap. A fault the schedule's next fault
    struck before it recovered counts through that one (:func:`uncovered`). A fault that did not recover, or
    that no baseline measures, is never over (its schedule runs to its longest). A schedule none of whose
    faults was injected is over."""
    mine = uncovered([f for f in m.faults if f.label in labels])
    if not mine:
        return True
    reacting = reaction_kinds()
    quiet_for = m.params.hold_seconds + m.baseline.normal_gap
    if not math.isfinite(quiet_for):
        return False

    def back(f: FaultMetrics) -> bool:
        if f.recovery_time is None or isinstance(f.recovery_time, NotRecovered):
            return False
        if f.output_symptom is not None:
            return f.recovered_at is not None
        reacted = [e.t for e in timeline if e.kind in reacting and e.t >= f.t]
        return f.system_detection is not None and max([f.t, *reacted]) + quiet_for <= m.load_end

    return all(back(f) for f in mine)


def back_due(m: RunMetrics, labels: set[str], timeline: list[TimelineEvent]) -> float:
    """The earliest load end at which :func:`faults_back` may say otherwise than it says on ``m`` (the history
    so far), if no output came that changes it: when to ask again. The metrics judge up to a normal gap
    before the load's end, and a recovery's hold ends on a bucket edge, so a recovery can show only once that
    judged end reaches the next edge; a fault with no sign is over once it has been quiet for the hold and a
    normal gap since its last reaction. Asking at these instants rather than on a clock of its own costs as
    many judgements and answers as soon as the history can (inf: no baseline to judge against)."""
    gap, bucket = m.baseline.normal_gap, m.params.bucket_seconds
    if not math.isfinite(gap):
        return math.inf
    judged = max(m.load_start, m.load_end - gap)
    due = [m.t0 + bucket * (math.floor((judged - m.t0) / bucket + 1e-9) + 1) + gap]
    reacting = reaction_kinds()
    quiet_for = m.params.hold_seconds + gap
    for f in uncovered([f for f in m.faults if f.label in labels]):
        if f.output_symptom is None and f.system_detection is not None:
            quiet = max([f.t, *(e.t for e in timeline if e.kind in reacting and e.t >= f.t)]) + quiet_for
            due += [quiet] if quiet > m.load_end else []
    return min(due)


#: how far apart a fault's horizon and the next fault's injection may be and still be the same instant (both
#: come from the same timeline stamp; the slack is float noise only)
SAME_INSTANT = 1e-6


def struck_at_horizon(fault: FaultMetrics, later: FaultMetrics) -> bool:
    """Whether ``later`` struck ``fault`` before it recovered: ``fault`` did not recover by its horizon, and
    that horizon is ``later``'s injection (a fault is judged up to the next one)."""
    return fault.recovered is False and abs(later.t - fault.horizon) <= SAME_INSTANT


def cut_off_by(fault: FaultMetrics, faults: Sequence[FaultMetrics]) -> FaultMetrics | None:
    """The fault of ``faults`` (the run's) that struck before ``fault`` recovered -- injected at its horizon --,
    when the job came back after both (a later fault recovered): ``fault``'s own recovery is then not measurable,
    which is not "not recovered". None when ``fault`` recovered, was not measured, or really did not recover
    (nothing after it came back)."""
    if fault.recovered is not False:
        return None
    later = sorted((g for g in faults if g.t > fault.t), key=lambda g: g.t)
    cutter = next((g for g in later if struck_at_horizon(fault, g)), None)
    return cutter if cutter is not None and any(g.recovered for g in later) else None


def worst_of(faults: list[FaultMetrics], recovery_times: list[RecoveryTime | None]
             ) -> tuple[float | None, RecoveryTime | None, float | None]:
    """The worst downtime, recovery time and failure cost of ``faults`` (at least one), their recovery times
    given as the caller counts them (``recovery_times``: one per group of faults whose recoveries overlap,
    :func:`~.groups.recovery_groups`; None where not measurable): None when one is not measurable (a worse one
    may hide there); :data:`NOT_RECOVERED` when one did not recover, even if another is not measurable."""
    downs = [f.downtime for f in faults]
    costs = [f.failure_cost for f in faults]
    rec: RecoveryTime | None
    if any(isinstance(r, NotRecovered) for r in recovery_times):
        rec = NOT_RECOVERED
    elif any(r is None for r in recovery_times):
        rec = None
    else:
        rec = max(float(r) for r in recovery_times if r is not None)
    down = None if any(d is None for d in downs) else max(float(d) for d in downs if d is not None)
    cost = None if any(c is None for c in costs) else max(float(c) for c in costs if c is not None)
    return down, rec, cost
