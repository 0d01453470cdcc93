"""``ChaosRun``: the verdict on one run, what a chaos test asserts on.

Stable API for the ``chaos`` fixture::

    run = ChaosRun.from_trace(trace, oracle=IdentityOracle(), guarantee="exactly-once",
                              params=MetricParams())
    assert run.lost == 0 and run.downtime < 15
    run.assert_sla(max_recovery=30)     # also checks the declared guarantee by default
    run.to_json()                       # complete record: counts, metrics, series, timeline

Run-level choices (documented here because tests assert on them):

- ``downtime``: the largest per-fault downtime; with no fault, the longest abnormal output gap during
  the load phase (so control runs also catch stalls); 0.0 if none.
- ``recovery_time``: the largest per-fault recovery time, :data:`NOT_RECOVERED` if any fault did not
  recover (it compares greater than every number); 0.0 with no fault.
- ``failure_cost``: the largest per-fault failure cost; 0.0 with no fault.
- Degraded verdicts: a metric that cannot be computed (e.g. the first fault came before there was
  a baseline) is ``None``; :attr:`ChaosRun.unavailable` maps its name to the reason, which
  ``describe()``, ``to_json()`` and a violated SLA bound on it all show. ``lost``, ``duplicates``,
  ``incorrect`` and the guarantee never depend on a baseline and are always reported.
- ``reliable_throughput``: mean distinct ids newly processed per second over the load phase
  (``throughput`` holds the per-second series).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.analysis.delay_class import describe_outcome

from ..records import TimelineEvent, Trace
from .guarantee import GuaranteeReport, _check_guarantee
from .metrics import (
    NOT_RECOVERED,
    FaultMetrics,
    LatencySummary,
    MetricParams,
    RecoveryTime,
    RunMetrics,
    Series,
    compute_metrics,
)
from .oracle import IdentityOracle, Oracle
from .sla import SLA, SLAViolation, Violation, check_sla, render_timeline
from .validate import validate

__all__ = ["ChaosRun", "NOT_RECOVERED", "SCHEMA_VERSION"]

#: version of the JSON of :meth:`ChaosRun.to_dict` (docs/report-schema.md); bumped when a key changes
#: meaning or goes away, not when one is added
SCHEMA_VERSION = 2


@dataclass
class ChaosRun:
    """Verdict of one run: guarantee validation + recovery metrics + timeline."""

    guarantee: str
    report: GuaranteeReport
    metrics: RunMetrics
    timeline: list[TimelineEvent]
    sent: int
    outputs: int
    trace: Trace | None = field(default=None, repr=False)
    #: what the harness knows about the run: parameters, effective settings, generator/collector
    #: statistics, warnings (JSON-ready; empty for a run built from a bare trace)
    meta: dict[str, Any] = field(default_factory=dict)

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def from_trace(
        cls,
        trace: Trace,
        oracle: Oracle | None = None,
        guarantee: str = "exactly-once",
        params: MetricParams | None = None,
        keep_trace: bool = False,
        per_record: bool = True,
    ) -> ChaosRun:
        """Validate ``trace`` against ``oracle`` (default :class:`IdentityOracle`) and compute the
        metrics with ``params``. ``guarantee`` is the declared one (checked by :meth:`assert_sla`).
        ``per_record=False``: the outputs are estimates (:mod:`.from_progress`), so the run reports
        recovery metrics but no per-record verdict (``resolution == "none"``)."""
        _check_guarantee(guarantee)
        oracle = oracle or IdentityOracle()
        report = validate(trace, oracle)
        if not per_record:
            report.resolution = "none"
        metrics = compute_metrics(trace, report, oracle, params)
        timeline = sorted([*trace.timeline, *metrics.derived_events()], key=lambda e: e.t)
        return cls(guarantee, report, metrics, timeline, len(trace.sent), len(trace.outputs),
                   trace if keep_trace else None)

    # -- guarantee -----------------------------------------------------------------------------
    @property
    def lost(self) -> int | None:
        """Lost input records; None when the run has no per-record verdict (``resolution == "none"``)."""
        return None if self.resolution == "none" else self.report.lost

    @property
    def duplicates(self) -> int | None:
        return None if self.resolution == "none" else self.report.duplicates

    @property
    def incorrect(self) -> int | None:
        return None if self.resolution == "none" else self.report.incorrect

    @property
    def exactly_once_check(self) -> dict[str, Any] | None:
        """How the duplicate / exactly-once verdict was reached: ``method`` (``"collector:
        read_committed"``), ``status``, ``reason``, ``transaction_markers`` (None for a bare trace)."""
        return self.meta.get("exactly_once")

    @property
    def expected(self) -> int:
        return self.report.expected

    @property
    def guarantee_delivered(self) -> str:
        return "unknown" if self.resolution == "none" else self.report.guarantee_delivered

    @property
    def resolution(self) -> str:
        """``"record"`` (every input id tracked), ``"aggregate"`` (lost / duplicates inferred from
        per-(key, window) aggregate values, :class:`~pytest_streamchaos.analysis.aggregate.AggregateOracle`)
        or ``"none"`` (the job's output is not readable: recovery metrics from Spark's progress only)."""
        return self.report.resolution

    @property
    def reliability(self) -> float | None:
        """Reliability under the declared guarantee (see ``GuaranteeReport.reliability``)."""
        return None if self.resolution == "none" else self.report.reliability(self.guarantee)

    # -- metrics -------------------------------------------------------------------------------
    @property
    def downtime(self) -> float:
        return self.metrics.downtime

    @property
    def recovery_time(self) -> RecoveryTime | None:
        """None when it could not be measured (see :attr:`unavailable`)."""
        return self.metrics.recovery_time

    @property
    def failure_cost(self) -> float | None:
        """None when it could not be measured (see :attr:`unavailable`)."""
        return self.metrics.failure_cost

    @property
    def unavailable(self) -> dict[str, str]:
        """Metric name -> why it could not be computed (empty when every metric was)."""
        if self.resolution != "none":
            return self.metrics.unavailable
        return {**dict.fromkeys(("lost", "duplicates", "incorrect", "reliability", "guarantee"), NO_VERDICT),
                **self.metrics.unavailable}

    @property
    def latency(self) -> LatencySummary:
        return self.metrics.latency

    @property
    def reliable_throughput(self) -> float:
        return self.metrics.reliable_throughput

    @property
    def throughput(self) -> Series:
        return self.metrics.series

    @property
    def faults(self) -> list[FaultMetrics]:
        return self.metrics.faults

    # -- SLA -----------------------------------------------------------------------------------
    def check_sla(self, sla: SLA | None = None, check_guarantee: bool = True, **bounds: Any) -> list[Violation]:
        """Violated bounds; the declared guarantee is checked unless ``check_guarantee=False`` or
        a ``guarantee=`` bound is given."""
        # a run without a per-record verdict cannot check the declared guarantee: unless the test asks
        # for it explicitly (then the bound fails, saying why), it is not part of the SLA
        if (check_guarantee and "guarantee" not in bounds and (sla is None or sla.guarantee is None)
                and self.resolution != "none"):
            bounds["guarantee"] = self.guarantee
        return check_sla(self, sla, **bounds)

    def assert_sla(self, sla: SLA | None = None, check_guarantee: bool = True, **bounds: Any) -> None:
        """Raise :class:`SLAViolation` listing every violated bound, with the timeline."""
        violations = self.check_sla(sla, check_guarantee, **bounds)
        if violations:
            raise SLAViolation(violations, self.timeline, self.metrics.t0, context=self.context())

    def context(self) -> str:
        """Short multi-line account of guarantee counts and per-fault recovery, for messages."""
        lines = [f"guarantee: declared {self.guarantee}; {self.report.describe()}"]
        for i, f in enumerate(self.faults):
            lines += _fault_lines(i, f, self.metrics.t0)
        return "\n".join(lines)

    def describe(self) -> str:
        """The human report of the run: headline numbers, per-fault recovery, and the timeline."""
        lat, rt, fc = self.latency, self.recovery_time, self.failure_cost
        rec = "not measured" if rt is None else "not recovered" if rt is NOT_RECOVERED else f"{float(rt):.2f}s"
        cost = "not measured" if fc is None else f"{fc:.2f}s"
        lines = [
            f"sent {self.sent} records, read {self.outputs} outputs; lost {self.lost}, duplicates "
            f"{self.duplicates}, incorrect {self.incorrect}",
            f"guarantee declared {self.guarantee}, delivered {self.guarantee_delivered}; reliability "
            f"{_num(self.reliability, '.6f')}; reliable throughput {self.reliable_throughput:.1f} ids/s",
            f"latency p50 {lat.p50:.2f}s p95 {lat.p95:.2f}s p99 {lat.p99:.2f}s peak {lat.peak:.2f}s "
            f"(baseline {lat.baseline:.2f}s)",
            f"downtime {self.downtime:.2f}s, recovery time {rec}, failure cost {cost}",
            *(f"{name} not measured: {why}" for name, why in self.metrics.unavailable.items()),
            *([f"no per-record verdict: {NO_VERDICT}"] if self.resolution == "none" else
              [] if self.resolution == "record" else
              [f"resolution: per {self.resolution}, not per record (lost / duplicates are input records "
               "inferred from aggregate values; no ids known)",
               *(f"  {line}" for line in self.report.wrong_group_lines())]),
            *self.context().splitlines()[1:],
            *self.setup_lines(),
            "timeline:",
            *("  " + line for line in self.timeline_lines()),
        ]
        for w in self.meta.get("warnings", []):
            lines.append(f"warning: {w}")
        return "\n".join(lines)

    def setup_lines(self) -> list[str]:
        """How long the load ran and why, and the timeouts the run set for a delay class (from
        :attr:`meta`; empty for a run built from a bare trace)."""
        load = self.meta.get("load") or {}
        lines = [f"load ran {load.get('ran_s', 0):.1f}s (planned {load.get('planned_s', 0):g}s: {load.get('why')}"
                 + (f"; {load['ended']})" if load.get("ended") else ")")] if load else []
        lines += self.sink_lines()
        lines += [f"timeout: {c['note']}" for c in self.meta.get("delay_class", [])]
        lines += [f"delay: {describe_outcome(o)}" for o in self.meta.get("delay_outcomes", [])]
        lines += self.observer_lines()
        check = self.exactly_once_check
        if check:
            lines.append(f"exactly-once check: {check['method']} ({check['status']}): {check['reason']}"
                         + (f"; to verify: {check['verify_with']}" if check.get("verify_with") else ""))
        return lines

    def sink_lines(self) -> list[str]:
        """Where each streaming query of the job wrote (from its progress), and, when the run found the
        output unreadable, what it did instead (from :attr:`meta`)."""
        sinks = self.meta.get("sinks") or []
        lines = ["sinks: " + "; ".join(f"query {repr(q['query']) if q['query'] else q['id'][:8]}: {q['kind']}"
                                       + (f" {q['path']}" if q.get("path") else "")
                                       + (f" (files to {', '.join(q['writes'])})" if q.get("writes") else "")
                                       for q in sinks)] if sinks else []
        if self.meta.get("sink_note"):
            lines.append(f"outputs: {self.meta['sink_note']}")
        return lines

    @property
    def observer(self) -> dict[str, Any] | None:
        """Whether the network faults spared the harness (``scope``: ``job`` = only the job's
        connections were faulted) and the harness clients' broker round trips before and during the
        network faults (``generator``, ``collector``; ``disturbed`` names a client that was hit)."""
        return self.meta.get("observer")

    def observer_lines(self) -> list[str]:
        """One line on the observer when the run had network faults."""
        obs = self.observer
        if not obs or not obs.get("network_fault_windows"):
            return []
        scope = ("network faults hit the job's connections only" if obs["scope"] == "job" else
                 f"network faults hit every connection on the faulted ports ({obs.get('scope_reason')})")
        parts = []
        for name in sorted(k for k, v in obs.items() if isinstance(v, dict) and "during_faults" in v):
            b, d = obs[name]["baseline"]["rtt_p50_ms"], obs[name]["during_faults"]["rtt_p50_ms"]
            parts.append(f"{name} round trip {_num(b, '.1f')} ms before, {_num(d, '.1f')} ms during")
        return [f"observer: {scope}; " + "; ".join(parts)]

    def timeline_lines(self) -> list[str]:
        return render_timeline(self.timeline, self.metrics.t0)

    # -- export --------------------------------------------------------------------------------
    def summary_row(self) -> dict[str, Any]:
        """One row of the terminal summary table (short, human values)."""
        rt = self.recovery_time
        return {
            "guarantee": self.guarantee,
            "delivered": self.guarantee_delivered,
            "sent": self.sent,
            "lost": self.lost,
            "dup": self.duplicates,
            "incorrect": self.incorrect,
            "reliability": None if self.reliability is None else round(self.reliability, 6),
            "downtime_s": round(self.downtime, 2),
            "recovery_s": rt if rt is NOT_RECOVERED or rt is None else round(float(rt), 2),
            "failure_cost_s": None if self.failure_cost is None else round(self.failure_cost, 2),
            "p99_latency_s": round(self.latency.p99, 3),
            "reliable_tput": round(self.reliable_throughput, 1),
            "faults": len(self.faults),
        }

    def to_dict(self) -> dict[str, Any]:
        """Complete JSON-ready record (NaN -> null, NOT_RECOVERED -> null with ``recovered: false``)."""
        m = self.metrics.to_dict()
        return {
            "schema_version": SCHEMA_VERSION,
            "guarantee": self.guarantee,
            "guarantee_delivered": self.guarantee_delivered,
            "reliability": self.reliability,
            "sent": self.sent,
            "outputs": self.outputs,
            # top-level copies of the headline counts and percentiles, so that a regression gate
            # names them as ``lost`` or ``latency.p99`` (docs/report-schema.md)
            "lost": self.lost,
            "duplicates": self.duplicates,
            "incorrect": self.incorrect,
            "latency": m["latency"],
            "validation": self.report.to_dict(),
            "exactly_once_check": self.exactly_once_check,
            **{k: m[k] for k in ("downtime", "recovery_time", "recovered", "failure_cost", "reliable_throughput",
                                 "unavailable")},
            "metrics": m,
            "timeline": [_event_dict(e) for e in self.timeline],
            "meta": self.meta,
        }

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    def __repr__(self) -> str:
        """One short line (pytest shows it in a failed ``assert run.lost == 0``; the dataclass's own
        repr would dump the whole report, cut after 240 characters)."""
        rt = self.recovery_time
        rec = ("no fault" if not self.faults else "recovery not measured" if rt is None
               else "not recovered" if rt is NOT_RECOVERED else f"recovered in {float(rt):.1f}s")
        return (f"ChaosRun(sent {self.sent}, lost {self.lost}, duplicates {self.duplicates}, incorrect "
                f"{self.incorrect}, {self.guarantee} declared, {self.guarantee_delivered} delivered, "
                f"{len(self.faults)} fault{'s' if len(self.faults) != 1 else ''} {rec}, downtime {self.downtime:.1f}s)")

    # -- A/B -----------------------------------------------------------------------------------
    def versus(self, baseline: Any, slo_latency: float | None = None, factor: float = 1.0) -> Any:
        """This run against ``baseline`` (the same scenario under another configuration, or without
        its faults): per-metric deltas and, per fault of this run, a masking verdict (masked: p99 within
        ``factor`` x the baseline's band). See :func:`pytest_streamchaos.analysis.versus.versus`."""
        from .versus import versus

        return versus(self, baseline, slo_latency=slo_latency, factor=factor)

    def overhead(self, reference: Any) -> Any:
        """This run's steady-state cost against ``reference`` (the same job and load in another
        setting), and its time back to normal after its fault. See
        :func:`pytest_streamchaos.analysis.versus.overhead`."""
        from .versus import overhead

        return overhead(self, reference)


#: why a run built from Spark's progress alone has no per-record verdict
NO_VERDICT = ("the job's output is not readable (outputs={}: console, noop, an external system), so no input "
              "record is tracked to an output; downtime, recovery and throughput come from Spark's query progress "
              "(latency is estimated from micro-batch end times)")


def _fault_lines(i: int, f: FaultMetrics, t0: float) -> list[str]:
    """The account of fault ``i`` in :meth:`ChaosRun.context` (times relative to ``t0``)."""
    head = (f"fault {i} ({f.kind} {f.target} at +{f.t - t0:.1f}s): {f.verdict}, "
            f"downtime {f.downtime:.1f}s")
    sysd = ("system detection -" if f.system_detection is None
            else f"system detection {f.system_detection:.1f}s ({f.system_detection_event})")
    sym = "-" if f.output_symptom is None else f"{f.output_symptom:.1f}s"
    if f.recovered is None:
        lines = [f"{head}, recovery not measured ({sysd}, output symptom {sym}, output gap {f.output_gap:.1f}s)"]
    elif f.recovered:
        lines = [f"{head}, recovery {f.recovery_time:.1f}s ({sysd}, output symptom {sym}, output gap "
                 f"{f.output_gap:.1f}s), failure cost {f.failure_cost:.1f}s"]
    else:
        lines = [f"{head}, not recovered by +{f.horizon - t0:.1f}s ({sysd})"]
    if f.aim is not None:
        a = f.aim
        lines.append(f"  aimed at {a['moment']}: {'hit' if a['hit'] else 'MISSED'} (batch {a['batch']} "
                     f"{a['phase']}, {a['attempts']} batch{'es' if a['attempts'] != 1 else ''} tried)")
    if f.phases:
        lines.append("  phases: " + "; ".join(f"+{ph['at']:.1f}s {ph['kind']} {ph['target']}".rstrip()
                                              for ph in f.phases))
    return lines


def _num(v: float | None, fmt: str) -> str:
    return "unknown" if v is None else format(v, fmt)


def _event_dict(e: TimelineEvent) -> dict[str, Any]:
    d = e.to_dict()
    if "detail" in d:
        d["detail"] = {k: (None if v is NOT_RECOVERED else v) for k, v in d["detail"].items()}
    return d
