"""Recovery and performance metrics of one run (docs/metrics.md), pure and vectorised.

Definitions (all times in seconds on the run clock; ``B`` = ``MetricParams.bucket_seconds``):

- **series**: per bucket of ``B`` seconds: input rate (sent records), output rate, id appearances,
  *reliable throughput* (distinct expected ids whose first correct appearance falls in the bucket,
  PGVal §3.4.3), latency p50/p95/p99/max of the outputs arriving in the bucket, and the *backlog*
  (consumer lag in records: expected inputs sent but not yet processed at the bucket's end).
- **latency** of an output: arrival minus the oracle's reference send time (stateless: the latest
  input it carries; windows: the first input past the window end, PGVal §3.4.2).
- **baseline**: the load phase before the first fault, from ``phases['warmup_end']`` (else the
  first output + ``warmup_seconds``) to the first fault (else ``phases['load_end']``). Baseline
  throughput is its mean reliable throughput, baseline latency the median latency there.
- **normal gap**: the job's usual time between outputs, ``max(trigger, g)`` where ``g`` is the
  time-weighted ``gap_time_quantile`` of baseline output gaps (the gap length that covers that
  share of baseline time -- robust to bursty micro-batch output and to a single odd pause).
- **downtime** after a fault: the longest gap between consecutive outputs (clipped at the end of
  input, ``phases['load_end']``) that is longer than ``max(min_gap_seconds, gap_factor * normal
  gap)``. A gap belongs to the last fault injected at or before its start (a gap straddling the
  first fault belongs to it).
- **band**: a bucket is *in band* when (a) the de-bursted, forward-smoothed reliable throughput
  (each newly processed id spread over the normal gap before its first appearance;
  then averaged over ``smooth_seconds``) is within ``±throughput_band`` of the baseline, (b) the
  ``latency_quantile`` of its outputs' latencies is at most ``baseline latency quantile *
  latency_factor + slack`` (slack defaults to the trigger interval; buckets without outputs pass
  (b)), and (c) it does not overlap an abnormal output gap.
- **system detection** of a fault at ``f``: the first event after ``f`` (before the horizon) in
  which Spark, Kafka or the harness's supervisor reacted to it -- a kind in
  ``MetricParams.system_detection_kinds`` (executor removed, master fail-over, driver relaunch,
  ...); ``system_detection`` is its time minus ``f`` (None: the system never said so).
- **recovery** from a fault at ``f``: the *output symptom* ``D`` is the first sign in the output
  after ``f`` -- output stops (start of an abnormal gap, clipped to ``f``), an output above the
  latency bound, or an out-of-band bucket. Without a sign before the horizon (the next fault or
  the end of input) the fault is masked and recovery time is 0. Otherwise the recovery point ``T``
  is the first time ``>= D`` from which every bucket stays in band for ``hold_seconds``;
  ``recovery_time = T - f``, split into ``output_symptom = D - f`` (``detection`` is an alias kept
  for old tests), ``output_gap`` (downtime gap after ``f``) and ``catch_up`` (the rest). No such
  ``T`` whose hold ends by the horizon: :data:`NOT_RECOVERED`.
- **no baseline**: when the first fault comes less than ``max(bucket, hold_seconds)`` after the
  load started there is no baseline to compare against. Lost / duplicates / incorrect and the
  guarantee are still reported (they do not need one), so are downtime and the output gaps; the
  metrics that compare against the baseline (recovery time, catch-up, failure cost, the masking
  verdict) are ``None`` and ``RunMetrics.unavailable`` names the reason for each.
- **not measurable** (a trigger slower than the run's phases): the job's *cycle* is the time between
  its micro-batches (``max(trigger, the median interval between batch starts in Spark's progress)``).
  A baseline shorter than :data:`BASELINE_CYCLES` cycles, or one in which nothing was processed (while
  output came later), has not seen the job's normal output: what a fault did cannot be told from what
  the job always does (a 30 s trigger's silence after a kill is its usual silence), so downtime,
  recovery time and failure cost are ``None``, the verdicts ``unknown``. So is a fault with no sign
  whose window (to its horizon) is shorter than a downtime gap and a bucket: no gap could show in it yet.
- **failure cost**: the peak latency of outputs arriving in ``[f, T]`` (``[f, f + hold]`` for a
  masked fault, to the end of the run when not recovered) minus the baseline p99 latency, at least
  0 (PGVal §3.4.4: the largest latency increase a failure causes; measured against the baseline's
  p99 rather than its median so that the normal micro-batch sawtooth is not counted as cost).
  When not recovered, inputs never processed count with their age at the end of the run.
- **masking verdict** (docs/metrics.md#masking-verdict): *masked* (no sign), *degraded* (a sign, no
  downtime above ``outage_seconds``, recovered, peak latency within ``slo_latency_seconds`` if
  given) or *outage*.
- **stability** across repeated faults: the spread of per-fault recovery times (docs/metrics.md#stability).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from pytest_streamchaos.events import Kind, Phase

from .. import deprecation
from ..history import Aim, batch_start
from ..records import FAULT_INJECTED, TimelineEvent, Trace
from .oracle import IdentityOracle, Oracle
from .trigger import batch_cadence
from .validate import GuaranteeReport, validate


class NotMeasurable(AssertionError):
    """A metric this run could not measure was compared, converted or computed with: ``assert
    run.downtime < 10`` fails naming why, instead of passing on a number nothing measured."""


class NotMeasured:
    """The value of a metric the run could not measure (``ChaosRun.downtime``, ``recovery_time``,
    ``failure_cost``), and why: it prints as ``not measurable``, is falsy, equals nothing but itself, and
    any comparison, arithmetic or ``float()`` raises :class:`NotMeasurable` with the reason -- a bound
    asserted on it can neither pass nor fail silently. ``isinstance(v, NotMeasured)`` tests for it."""

    __slots__ = ("name", "reason")

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def _refuse(self, *_: object) -> Any:
        raise NotMeasurable(f"{self.name} was not measured on this run, so no bound on it can be checked: "
                            f"{self.reason}")

    __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __float__ = __int__ = __round__ = __abs__ = __neg__ = _refuse

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NotMeasured) and (other.name, other.reason) == (self.name, self.reason)

    def __hash__(self) -> int:
        return hash(("NotMeasured", self.name, self.reason))

    def __repr__(self) -> str:
        return f"not measurable ({self.reason})"

    def __str__(self) -> str:
        return "not measurable"

    def __format__(self, spec: str) -> str:
        return "not measurable"


class NotRecovered:
    """The result "did not recover": greater than every number, so ``assert t < 30`` fails readably."""

    _instance: NotRecovered | None = None

    def __new__(cls) -> NotRecovered:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "not recovered"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "not recovered"

    def __reduce__(self) -> str:
        return "NOT_RECOVERED"

    def __float__(self) -> float:
        return math.inf

    def __hash__(self) -> int:
        return hash("NOT_RECOVERED")

    def __eq__(self, other: object) -> bool:
        return other is self

    def __lt__(self, other: object) -> bool:
        if other is self or isinstance(other, numbers.Real):
            return False
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, numbers.Real):
            return False
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if other is self:
            return False
        if isinstance(other, numbers.Real):
            return True
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if other is self or isinstance(other, numbers.Real):
            return True
        return NotImplemented


#: Sentinel recovery time of a fault the job did not recover from (repr ``not recovered``).
NOT_RECOVERED = NotRecovered()

RecoveryTime = float | NotRecovered

#: how many of the job's cycles (its time between micro-batches) the baseline must span for recovery to be
#: measurable: two, so that the baseline saw the job's output come back at least once
BASELINE_CYCLES = 2.0

#: Default :attr:`MetricParams.system_detection_kinds`: Spark's event log (executor lost, query
#: terminated), the harness's watchers (master fail-over, worker registered again is *not* one:
#: that is healing), the driver supervisor (driver exited / relaunched), and the Kafka cluster's
#: own reactions (a broker fenced, a partition's leadership moved or lost, a new KRaft controller).
SYSTEM_DETECTION_KINDS: tuple[str, ...] = (
    Kind.EXECUTOR_REMOVED, Kind.WORKER_LOST, Kind.MASTER_FAILOVER, Kind.DRIVER_EXITED, Kind.DRIVER_LAUNCHED,
    Kind.QUERY_TERMINATED, Kind.SOURCE_TIMEOUT, Kind.BROKER_FENCED, Kind.LEADER_ELECTED, Kind.LEADER_LOST,
    Kind.CONTROLLER_ELECTED, Kind.TASK_FAILED, Kind.DATANODE_DEAD,
)


@dataclass
class MetricParams:
    """Tunables of the metrics; every one can be set per test."""

    bucket_seconds: float = 1.0
    #: throughput band: within ± this fraction of the baseline reliable throughput
    throughput_band: float = 0.3
    #: latency band: latency quantile <= baseline quantile * latency_factor + latency_slack_seconds
    latency_factor: float = 1.5
    #: additive latency slack; None = the trace's trigger interval
    latency_slack_seconds: float | None = None
    #: which per-bucket latency quantile is compared against the bound (and baseline quantile used)
    latency_quantile: float = 0.95
    #: how long metrics must stay in band to call a fault recovered
    hold_seconds: float = 5.0
    #: forward moving window of the throughput used for the band
    smooth_seconds: float = 5.0
    #: downtime threshold = max(min_gap_seconds, gap_factor * normal gap)
    gap_factor: float = 2.0
    min_gap_seconds: float = 0.0
    #: time-weighted quantile of baseline output gaps that defines the normal gap
    gap_time_quantile: float = 0.8
    #: warm-up after the first output when the trace has no phases['warmup_end']
    warmup_seconds: float = 0.0
    #: timeline kinds that are fault injections
    fault_kinds: tuple[str, ...] = (FAULT_INJECTED,)
    #: masking verdict: downtime above this is an outage
    outage_seconds: float = 0.0
    #: masking verdict: peak latency above this (seconds) is an outage; None = no latency SLO
    slo_latency_seconds: float | None = None
    #: timeline kinds in which the system (Spark, Kafka, the driver supervisor) shows it noticed a
    #: fault; the first one after a fault is its ``system_detection``. ``driver_launched`` counts
    #: only as a relaunch (launch > 1): the first launch is the job's start.
    system_detection_kinds: tuple[str, ...] = SYSTEM_DETECTION_KINDS

    def __post_init__(self) -> None:
        for name in ("bucket_seconds", "hold_seconds", "smooth_seconds", "gap_factor"):
            if not getattr(self, name) > 0:
                raise ValueError(f"MetricParams.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0 < self.latency_quantile <= 1 or not 0 < self.gap_time_quantile <= 1:
            raise ValueError("MetricParams: latency_quantile and gap_time_quantile must be in (0, 1]")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


def _num(x: Any) -> Any:
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

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
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
    #: event of each :data:`PHASE_KINDS` kind, as ``{"at": seconds after the fault, "kind", "target"}``
    phases: list[dict[str, Any]] = field(default_factory=list)
    #: an aimed fault (``when=``): where it landed (:class:`~pytest_streamchaos.history.Aim`: moment,
    #: batch, phase, hit, attempts; its JSON form is accepted too); None for a fault fired on the clock
    aim: Aim | None = None

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

    def to_dict(self) -> dict[str, Any]:
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

    def summary(self) -> dict[str, Any]:
        d = self.duration[np.isfinite(self.duration)]
        if d.size == 0:
            return {"count": len(self)}
        p50, p95 = np.quantile(d, [0.5, 0.95])
        return {"count": len(self), "p50": float(p50), "p95": float(p95), "max": float(d.max())}

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": self.params.to_dict(),
            "t0": self.t0,
            "t_end": self.t_end,
            "load_start": self.load_start,
            Phase.LOAD_END: self.load_end,
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


#: timeline kinds after which a fault with no sign yet must stay quiet before it counts as masked for
#: good: the faults' injections and heals, and the system's reactions to them (a restarted worker's
#: new executor shows in the output only once it runs tasks)
REACTION_KINDS: tuple[str, ...] = (
    Kind.FAULT_INJECTED, Kind.FAULT_HEALED, *SYSTEM_DETECTION_KINDS, Kind.EXECUTOR_ADDED, Kind.WORKER_REGISTERED,
    Kind.DRIVER_STARTED, Kind.QUERY_STARTED, Kind.BROKER_REGISTERED, Kind.ISR_SHRUNK, Kind.ISR_EXPANDED,
    Kind.NAMENODE_SAFEMODE_EXIT, Kind.DATANODE_REGISTERED,
)
#: what a fault's recovery phases are made of: the system's reactions and the steps of its healing
PHASE_KINDS: tuple[str, ...] = tuple(k for k in REACTION_KINDS if k != FAULT_INJECTED)


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
      ``need`` has passed with nothing in the output since the last event of :data:`REACTION_KINDS`
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
    quiet_since = max((e.t for e in timeline if e.kind in REACTION_KINDS and e.t >= first), default=first)

    def settled(f: FaultMetrics) -> bool:
        if f.output_symptom is None:  # masked so far (or no baseline: recovery_time None)
            return (f.recovery_time is not None and f.system_detection is not None
                    and max(f.t + f.system_detection, quiet_since) + need <= m.load_end)
        return bool(f.recovered) and f.recovered_at is not None and f.recovered_at + need <= m.load_end

    return all(settled(f) for f in m.faults)


# ------------------------------------------------------------------------------------------------
# building blocks


def micro_batches(batches: list[dict[str, Any]]) -> MicroBatches:
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


# ------------------------------------------------------------------------------------------------


def compute_metrics(
    trace: Trace,
    report: GuaranteeReport | None = None,
    oracle: Oracle | None = None,
    params: MetricParams | None = None,
) -> RunMetrics:
    """All metrics of a run. ``report`` defaults to ``validate(trace, oracle)`` (identity oracle)."""
    p = params or MetricParams()
    oracle = oracle or IdentityOracle()
    if report is None:
        report = validate(trace, oracle)
    m = _Measure(trace, report, oracle, p)
    m.time_frame()
    m.baseline()
    m.measurability()
    m.series()
    m.abnormal_gaps()
    m.bands()
    faults = [m.fault(i, ev) for i, ev in enumerate(m.fault_events)]
    return m.result(faults)


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


def baseline_measurable(trace: Trace, start: float, end: float, throughput: float, arrivals: np.ndarray, t0: float,
                        judged: bool) -> tuple[float, str | None]:
    """The job's cycle (``max(trigger, Spark's progress's median time between batches)``), and why the
    baseline from ``start`` to ``end`` (its ``throughput``; the sorted output ``arrivals``) cannot tell a
    fault's effect, or None when it can (or is not ``judged``: no fault, or no baseline already)."""
    cadence = batch_cadence(trace.batches, end)
    cycle = max(float(trace.trigger_seconds), cadence or 0.0)
    short = end - start < BASELINE_CYCLES * cycle
    # nothing processed in the baseline is unknown normal output -- unless nothing came out after it either:
    # a job that stopped for good is an outage whatever its normal output
    silent = throughput <= 0 and arrivals.size > 0 and arrivals[-1] >= end
    if not judged or not (short or silent):
        return cycle, None
    from_progress = cadence is not None and cadence > trace.trigger_seconds
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


def short_window(at: float, window: float, next_fault: bool, gap: float) -> str:
    """Why a fault at ``at`` (run seconds) with no sign in its ``window`` (to the next fault, or the end of
    the load) is not measurable: shorter than an abnormal output ``gap`` takes to show."""
    until = "the next fault" if next_fault else "the end of the load"
    return (f"the fault at t={at:.1f}s showed no sign by its horizon {window:.1f}s later ({until}), too soon for "
            f"an output gap to show (the job's gaps are abnormal past {gap:.1f}s): keep the load on longer after "
            "it (duration=...)")


def unmeasured_fault(trace: Trace, params: MetricParams, arrivals: np.ndarray, ev: TimelineEvent, f: float,
                     horizon: float) -> FaultMetrics:
    """The metrics of a fault whose effect cannot be measured: what the timeline and the output (sorted
    ``arrivals``) say of it -- the system's reaction, the first output after it, its phases --, nothing
    compared with a baseline (verdict ``unknown``)."""
    k = int(np.searchsorted(arrivals, f, side="right"))
    sys_ev = _first_system_event(trace.timeline, params.system_detection_kinds, f, horizon)
    return FaultMetrics(
        t=f, kind=_fault_kind(ev), target=ev.target, horizon=horizon, downtime=None, gap_start=None, gap_end=None,
        output_symptom=None, output_gap=None, catch_up=None, recovery_time=None, recovered_at=None,
        first_output_after=float(arrivals[k]) if k < arrivals.size else None, peak_latency=math.nan,
        failure_cost=None, verdict="unknown", system_detection=None if sys_ev is None else sys_ev.t - f,
        system_detection_event=None if sys_ev is None else sys_ev.kind,
        phases=recovery_phases(trace.timeline, f, horizon), aim=Aim.of(ev.detail.get("aim")))


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


class _Measure:
    """The working state of :func:`compute_metrics`: one method per step of the definitions in the
    module docstring, each leaving its results as attributes for the next."""

    def __init__(self, trace: Trace, report: GuaranteeReport, oracle: Oracle, p: MetricParams) -> None:
        self.trace, self.report, self.p = trace, report, p
        sent, outs = trace.sent, trace.outputs
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

        self.fault_events = sorted((e for e in trace.timeline if e.kind in p.fault_kinds), key=lambda e: e.t)
        self.ft = np.asarray([e.t for e in self.fault_events], dtype=np.float64)
        self.send_ts = np.asarray(sent.send_ts, dtype=np.float64)
        self.first_ts = report.pair_first_ts

    def time_frame(self) -> None:
        """``t0``, ``t_end``, the buckets, the load phase and the baseline's end (or why there is none)."""
        trace, p, B = self.trace, self.p, self.B
        send_ts, arr_sorted, ft = self.send_ts, self.arr_sorted, self.ft
        starts = ([float(send_ts.min())] if send_ts.size else []) + ([float(arr_sorted[0])] if arr_sorted.size else [])
        if not starts:
            raise ValueError("cannot compute metrics of an empty trace: nothing was sent and nothing came out")
        t0 = float(min(starts + ([float(ft[0])] if ft.size else [])))
        ends = [float(send_ts.max()) if send_ts.size else t0, float(arr_sorted[-1]) if arr_sorted.size else t0]
        ends += [float(v) for v in trace.phases.values()] + ([float(ft[-1])] if ft.size else [])
        t_end = max(ends)
        nb = int(math.floor((t_end - t0) / B)) + 1
        self.t0, self.t_end, self.nb = t0, t_end, nb
        self.edges = t0 + B * np.arange(nb + 1)

        if "warmup_end" in trace.phases:
            load_start = float(trace.phases["warmup_end"])
        else:
            load_start = (float(arr_sorted[0]) if arr_sorted.size else t0) + p.warmup_seconds
        load_end = float(trace.phases.get(Phase.LOAD_END, send_ts.max() if send_ts.size else t_end))
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
        gap0 = normal_gap(arr_sorted[i0:i1], self.trace.trigger_seconds, p.gap_time_quantile)
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
        slack = self.trace.trigger_seconds if p.latency_slack_seconds is None else p.latency_slack_seconds
        self.bound = bq * p.latency_factor + slack if math.isfinite(bq) else math.inf

    def measurability(self) -> None:
        """The job's cycle, and whether the baseline saw its normal output (:func:`baseline_measurable`): if
        not, downtime, recovery time and failure cost are not measurable (``gap_known`` False)."""
        self.cycle, why = baseline_measurable(self.trace, self.load_start, self.base_end, self.base_tp,
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
        lengths = self.trace.outputs.lengths()
        if lengths.size and bool((lengths == 1).all()):
            self.out_ids = self.outr.copy()
        else:
            self.out_ids = _hist(self.arrival, t0, B, nb, weights=lengths) / B
        self.reliable = _hist(first_ts, t0, B, nb) / B
        cum = _spread_cumulative(first_ts, t0, B, nb, self.gap0)
        spread = np.diff(cum) / B
        # the outputs of the last normal gap's input come after the load ends: judge only up to here
        self.judge_end = max(self.load_start, self.load_end - self.gap0)
        judge_end_bucket = min(nb, int(math.ceil((self.judge_end - t0) / B)))
        w_b = max(1, int(round(p.smooth_seconds / B)))
        self.smooth = _forward_mean(spread, w_b, judge_end_bucket)
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
        tp_ok = np.abs(self.smooth - base_tp) <= p.throughput_band * base_tp if base_tp > 0 else np.ones(nb, bool)
        self.tp_trailing_ok = (np.abs(self.trailing - base_tp) <= p.throughput_band * base_tp if base_tp > 0
                               else np.ones(nb, bool))
        self.lat_ok = ~(self.lat_q > self.bound)  # NaN (no output) passes
        in_gap = np.zeros(nb + 1, dtype=np.int64)
        # buckets overlapping an abnormal gap are out of band: difference array over bucket ranges
        gb0 = np.clip(np.floor((ab_start - t0) / B).astype(np.int64), 0, nb - 1)
        gb1 = np.clip(np.floor((ab_end - t0) / B).astype(np.int64), 0, nb - 1)
        np.add.at(in_gap, gb0, 1)
        np.add.at(in_gap, gb1 + 1, -1)
        gap_ok = np.cumsum(in_gap[:nb]) == 0
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

    def fault(self, i: int, ev: TimelineEvent) -> FaultMetrics:
        """The metrics of the ``i``-th fault (injected by ``ev``)."""
        p, ft, arr_sorted = self.p, self.ft, self.arr_sorted
        ab_start, ab_end, ab_len = self.ab_start, self.ab_end, self.ab_len
        f = float(ft[i])
        horizon, mine = occurrence_window(ft, i, self.B, self.judge_end, self.owner)
        if not self.gap_known:
            return self._unmeasured(ev, f, horizon)
        if mine.size:
            j = mine[np.argmax(ab_len[mine])]
            downtime, gs, ge = float(ab_len[j]), float(ab_start[j]), float(ab_end[j])
            out_gap = max(0.0, ge - max(gs, f))
        else:
            downtime, gs, ge, out_gap = 0.0, None, None, 0.0
        k_after = int(np.searchsorted(arr_sorted, f, side="right"))
        first_after = float(arr_sorted[k_after]) if k_after < arr_sorted.size else None
        signs, j0 = self._signs(f, horizon, mine)
        sys_ev = _first_system_event(self.trace.timeline, p.system_detection_kinds, f, horizon)
        sys_det = None if sys_ev is None else sys_ev.t - f
        common: dict[str, Any] = dict(
            t=f, kind=_fault_kind(ev), target=ev.target, horizon=horizon, downtime=downtime, gap_start=gs, gap_end=ge,
            output_gap=out_gap, first_output_after=first_after, system_detection=sys_det,
            system_detection_event=None if sys_ev is None else sys_ev.kind,
            phases=recovery_phases(self.trace.timeline, f, horizon), aim=Aim.of(ev.detail.get("aim")))
        if not signs and horizon - f < self.downtime_gap + self.B:
            return self._unmeasured(ev, f, horizon, short=True)
        if not self.has_baseline:
            detection = (min(signs) - f) if signs else None
            return FaultMetrics(**common, output_symptom=detection, catch_up=None, recovery_time=None,
                                recovered_at=None, peak_latency=math.nan, failure_cost=None,
                                verdict="outage" if downtime > p.outage_seconds else "unknown")
        detection, rec, rec_at = self._recovery(f, horizon, signs)
        recovered = not isinstance(rec, NotRecovered)
        w_end = f + p.hold_seconds if detection is None else rec_at if recovered and rec_at is not None else self.t_end
        peak = peak_latency(self.lat_sorted[j0:int(np.searchsorted(arr_sorted, w_end, side="right"))],
                            self.pend_send if not recovered else None, f, horizon, self.t_end)
        if math.isnan(peak):
            cost = 0.0
        else:
            cost = max(0.0, peak - self.b99) if math.isfinite(self.b99) else math.nan
        catch_up = None if not recovered or detection is None else max(0.0, float(rec) - detection - out_gap)
        return FaultMetrics(**common, output_symptom=detection, catch_up=catch_up, recovery_time=rec,
                            recovered_at=rec_at if recovered else None, peak_latency=peak, failure_cost=cost,
                            verdict=_verdict(detection, downtime, recovered, peak, p))

    def _unmeasured(self, ev: TimelineEvent, f: float, horizon: float, short: bool = False) -> FaultMetrics:
        """:func:`unmeasured_fault`; ``short``: its window is too short for a gap to show (:func:`short_window`)."""
        if short:
            why = short_window(f - self.t0, horizon - f, horizon < self.judge_end, self.downtime_gap)
            self.unavailable.update({k: why for k in ("downtime", "recovery_time", "failure_cost")
                                     if k not in self.unavailable})
        return unmeasured_fault(self.trace, self.p, self.arr_sorted, ev, f, horizon)

    def _signs(self, f: float, horizon: float, mine: np.ndarray) -> tuple[list[float], int]:
        """The times of the output's first signs of a fault at ``f`` (detection), and the index of
        the first output at or after ``f``."""
        t0, B, arr_sorted = self.t0, self.B, self.arr_sorted
        signs = []
        if mine.size:
            signs.append(max(float(self.ab_start[mine].min()), f))
        j0, j1 = np.searchsorted(arr_sorted, [f, horizon], side="left")
        if self.has_baseline:  # the latency bound and the throughput band are relative to the baseline
            high = np.flatnonzero(self.lat_sorted[j0:j1] > self.bound)
            if high.size:
                signs.append(float(arr_sorted[j0 + high[0]]))
            kf = int(math.ceil((f - t0) / B - 1e-9))
            kh = int(math.floor((horizon - t0) / B + 1e-9))
            sign_bad = ~(self.tp_trailing_ok[kf:kh] & self.lat_ok[kf:kh])
            bad = np.flatnonzero(sign_bad)
            if bad.size:
                signs.append(float(self.edges[kf + bad[0] + 1]))  # known at the end of that bucket
        return signs, j0

    def _recovery(self, f: float, horizon: float,
                  signs: list[float]) -> tuple[float | None, RecoveryTime, float | None]:
        """(detection, recovery time, recovered at) of a fault at ``f`` with these signs."""
        if not signs:
            return None, 0.0, f
        t0, B, nb, hold_b, edges = self.t0, self.B, self.nb, self.hold_b, self.edges
        d_t = min(signs)
        kb = int(math.floor((d_t - t0) / B))
        cand = np.flatnonzero(self.run[kb:nb] >= hold_b) + kb
        cand = cand[edges[cand] + hold_b * B <= horizon + 1e-9]
        if cand.size:
            rec_at = max(float(edges[cand[0]]), d_t)
            return d_t - f, rec_at - f, rec_at
        return d_t - f, NOT_RECOVERED, None

    def result(self, faults: list[FaultMetrics]) -> RunMetrics:
        """The :class:`RunMetrics` of the run with these per-fault metrics."""
        load_start, load_end, first_ts, bl = self.load_start, self.load_end, self.first_ts, self.bl
        downtime_run, recovery_run, cost_run = _run_totals(faults, self.ab_start, self.ab_len, load_start)
        # Overall percentiles describe the measured part of the run (load + drain), not the startup
        # backlog of the warm-up, whose latency is the job's start time, not its behaviour.
        measured = self.lat_sorted[int(np.searchsorted(self.arr_sorted, load_start, side="left")):]
        lat_fin = measured[np.isfinite(measured)]
        if lat_fin.size:
            o50, o95, o99 = (float(v) for v in np.quantile(lat_fin, [0.5, 0.95, 0.99]))
            peak_all = float(lat_fin.max())
        else:
            o50 = o95 = o99 = peak_all = math.nan
        load_dur = max(load_end - load_start, 1e-9)
        rt_mean = float(np.count_nonzero((first_ts >= load_start) & (first_ts <= load_end))) / load_dur

        return RunMetrics(
            params=self.p,
            t0=self.t0,
            t_end=self.t_end,
            load_start=load_start,
            load_end=load_end,
            series=Series(
                t=self.edges[:-1], input=self.inp, outputs=self.outr, output_ids=self.out_ids, reliable=self.reliable,
                reliable_smoothed=self.smooth, latency_p50=bl[0], latency_p95=bl[1], latency_p99=bl[2],
                latency_max=bl[4], backlog=self.backlog, in_band=self.ok,
            ),
            latency=LatencySummary(o50, o95, o99, peak_all, self.b50, self.b95, self.b99, self.bound,
                                   int(lat_fin.size)),
            baseline=Baseline(load_start, self.base_end, self.base_tp, self.b50, self.bound, self.gap0,
                              self.downtime_gap),
            faults=faults,
            downtime=downtime_run,
            recovery_time=recovery_run,
            failure_cost=cost_run,
            reliable_throughput=rt_mean,
            batches=micro_batches(self.trace.batches),
            stability=stability([f.recovery_time for f in faults]),
            output_latency=self.lat_all,
            unavailable=self.unavailable,
            cycle=self.cycle,
        )


def _run_totals(faults: list[FaultMetrics], ab_start: np.ndarray, ab_len: np.ndarray,
                load_start: float) -> tuple[float | None, RecoveryTime | None, float | None]:
    """The run's downtime, recovery time and failure cost: the worst over its faults (without a
    fault, the longest abnormal gap, ``ab_start`` / ``ab_len``, during the load phase); None when a
    fault's is not measurable (a worse one may hide there)."""
    recovery_run: RecoveryTime | None
    cost_run: float | None
    downtime_run: float | None
    if faults:
        downs = [f.downtime for f in faults]
        downtime_run = None if any(d is None for d in downs) else max(downs)  # type: ignore[type-var]
        rts = [f.recovery_time for f in faults]
        costs = [f.failure_cost for f in faults]
        if any(isinstance(r, NotRecovered) for r in rts):
            recovery_run = NOT_RECOVERED  # known not to recover, even if another fault is unmeasurable
        elif any(r is None for r in rts):
            recovery_run = None
        else:
            recovery_run = max(rts)  # type: ignore[type-var]
        cost_run = None if any(c is None for c in costs) else max(costs)  # type: ignore[type-var]
    else:
        # no fault: the longest abnormal gap during the load phase still counts as downtime
        sel = ab_start >= load_start
        downtime_run = float(ab_len[sel].max()) if sel.any() else 0.0
        recovery_run, cost_run = 0.0, 0.0
    return downtime_run, recovery_run, cost_run


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


def recovery_phases(timeline: list[TimelineEvent], f: float, until: float) -> list[dict[str, Any]]:
    """The first event of each :data:`PHASE_KINDS` kind in ``[f, until]``, in time order: how the system
    went from the fault to recovery (a leader elected, the broker back, the NameNode out of safe mode)."""
    seen: dict[str, TimelineEvent] = {}
    for e in sorted(timeline, key=lambda e: e.t):
        if e.kind in PHASE_KINDS and f <= e.t <= until and e.kind not in seen:
            if e.kind == Kind.DRIVER_LAUNCHED and int(e.detail.get("launch", 2)) <= 1:
                continue
            seen[e.kind] = e
    return [{"at": round(e.t - f, 3), "kind": e.kind, "target": e.target} for e in seen.values()]


def _first_system_event(timeline: list[TimelineEvent], kinds: tuple[str, ...], f: float,
                        horizon: float) -> TimelineEvent | None:
    """The first event of ``kinds`` in ``[f, horizon]``; a ``driver_launched`` counts only as a
    relaunch (its first launch is the job's start, not a reaction)."""
    best: TimelineEvent | None = None
    for e in timeline:
        if e.kind not in kinds or not f <= e.t <= horizon:
            continue
        if e.kind == Kind.DRIVER_LAUNCHED and int(e.detail.get("launch", 2)) <= 1:
            continue
        if best is None or e.t < best.t:
            best = e
    return best


def _fault_kind(ev: TimelineEvent) -> str:
    """The fault's own kind (``kill_worker``) from its injection event, for reports."""
    return str(ev.detail.get("fault") or ev.kind)
