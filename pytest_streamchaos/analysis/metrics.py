"""Recovery and performance metrics of one run (docs/metrics.md), pure and vectorised.

:func:`compute_metrics` measures a run's :class:`~pytest_streamchaos.history.History`; the work is split by
concern and every name is re-exported here: :mod:`.sentinels` (``NOT_RECOVERED``, ``NotMeasured``),
:mod:`.params` (``MetricParams``, the kinds it reacts to), :mod:`.run_metrics` (what the metrics are, their
JSON), :mod:`.series` (the per-bucket building blocks), :mod:`.frame` (the run-wide steps),
:mod:`.per_fault` (each fault) and :mod:`.totals` (the run's totals).

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
  ``T`` whose hold ends by the horizon: :data:`NOT_RECOVERED`. A fault whose horizon is the next fault is
  judged as the run showed it then: the smoothing and its hold end a normal gap before that fault.
- **group recovery** (:mod:`.groups`): faults whose recoveries overlap -- each struck by the next before it
  recovered, a chain of cut-offs, or injected less than a bucket apart -- recover as one: from the first one's
  injection to the last one's recovery point ``T``; :data:`NOT_RECOVERED` when the last did not recover, None
  when it was not measured. The run's and a window's ``recovery_time`` are the worst over these groups.
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
  masked fault, to the end of the run when not recovered, to the next fault when it cut it off) minus the
  baseline p99 latency, at least 0 (PGVal §3.4.4: the largest latency increase a failure causes; measured
  against the baseline's p99 rather than its median so that the normal micro-batch sawtooth is not counted as
  cost). When not recovered, inputs never processed count with their age at the end of the run (at the next
  fault, for one it cut off).
- **masking verdict** (docs/metrics.md#masking-verdict): *masked* (no sign), *degraded* (a sign, no
  downtime above ``outage_seconds``, recovered, peak latency within ``slo_latency_seconds`` if
  given) or *outage*.
- **stability** across repeated faults: the spread of per-fault recovery times (docs/metrics.md#stability).
"""

from __future__ import annotations

from ..history import History
from ..records import Trace
from .frame import RunFrame, baseline_measurable, unmeasurable_baseline
from .oracle import IdentityOracle, Oracle
from .params import BASELINE_CYCLES, SYSTEM_DETECTION_KINDS, MetricParams, phase_kinds, reaction_kinds
from .per_fault import (
    measure_fault,
    occurrence_window,
    peak_latency,
    recovery_phases,
    short_window,
    unmeasured_fault,
)
from .run_metrics import (
    Baseline,
    FaultMetrics,
    LatencySummary,
    MicroBatches,
    RunMetrics,
    Series,
    Stability,
    recovery_settled,
)
from .sentinels import NOT_RECOVERED, NotMeasurable, NotMeasured, NotRecovered, RecoveryTime
from .series import micro_batches, normal_gap, stability
from .totals import run_metrics
from .validate import GuaranteeReport, validate


def compute_metrics(
    history: History | Trace,
    report: GuaranteeReport | None = None,
    oracle: Oracle | None = None,
    params: MetricParams | None = None,
) -> RunMetrics:
    """All metrics of a run (its :class:`~pytest_streamchaos.history.History`, or a bare trace). ``report``
    defaults to ``validate(trace, oracle)`` (identity oracle)."""
    history = History.of(history)
    p = params or MetricParams()
    oracle = oracle or IdentityOracle()
    if report is None:
        report = validate(history.trace, oracle)
    m = RunFrame(history, report, oracle, p).build()
    faults = [measure_fault(m, i, fault) for i, fault in enumerate(m.faults)]
    focus = history.focus
    if focus is None:
        return run_metrics(m, faults)
    # a window's view: every fault is measured against the whole history (its baseline, the next fault's
    # horizon); the window's own ones are its faults and make its totals
    return run_metrics(m, [f for f in faults if f.label in set(focus.faults)], span=(focus.start, focus.end))


__all__ = [
    "BASELINE_CYCLES", "NOT_RECOVERED", "SYSTEM_DETECTION_KINDS", "Baseline",
    "FaultMetrics", "LatencySummary", "MetricParams", "MicroBatches", "NotMeasurable", "NotMeasured",
    "NotRecovered", "RecoveryTime", "RunMetrics", "Series", "Stability", "baseline_measurable", "compute_metrics",
    "micro_batches", "normal_gap", "occurrence_window", "peak_latency", "phase_kinds", "reaction_kinds",
    "recovery_phases", "recovery_settled", "short_window", "stability", "unmeasurable_baseline", "unmeasured_fault",
]
