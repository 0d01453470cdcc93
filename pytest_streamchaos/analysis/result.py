"""``ChaosRun``: the verdict on one run, what a chaos test asserts on -- the run's history and what
its checkers found.

Stable API for the ``chaos`` fixture::

    run = ChaosRun.from_trace(trace, oracle=IdentityOracle(), guarantee="exactly-once",
                              params=MetricParams())
    assert run.lost == 0 and run.downtime < 15
    run.assert_sla(max_recovery=30)     # also checks the declared guarantee by default
    assert run.check(MyChecker()).ok    # a checker of the test's own over the same history
    run.to_json()                       # complete record: counts, metrics, series, timeline, checks

A run is judged by the default checkers (:func:`~pytest_streamchaos.analysis.checkers.default_checkers`)
over its :class:`~pytest_streamchaos.history.History`; every number below reads their results.

Run-level choices (documented here because tests assert on them):

- ``downtime``: the largest per-fault downtime; with no fault, the longest abnormal output gap during
  the load phase (so control runs also catch stalls); 0.0 if none.
- ``recovery_time``: the largest per-fault recovery time, :data:`NOT_RECOVERED` if any fault did not
  recover (it compares greater than every number); 0.0 with no fault. Faults whose recoveries overlap (one
  struck by the next before it recovered) count as one, from the first one's injection to the last one's
  recovery (:mod:`~pytest_streamchaos.analysis.groups`).
- ``failure_cost``: the largest per-fault failure cost; 0.0 with no fault.
- Degraded verdicts: a metric that cannot be computed (the first fault came before there was a
  baseline; a trigger slower than the run's phases, so the baseline never saw the job's normal output)
  is a :class:`~pytest_streamchaos.analysis.metrics.NotMeasured`: it prints ``not measurable``, and
  comparing it (``assert run.downtime < 10``) raises :class:`~pytest_streamchaos.analysis.metrics.NotMeasurable`
  (an ``AssertionError``) naming why -- never a silent pass, as None or NaN would give in ``not run.downtime
  > 10``. :attr:`ChaosRun.unavailable` maps its name to the reason, which ``describe()``, ``to_json()`` (null
  there, with ``"measurable": false``) and a violated SLA bound on it all show; ``run.metrics`` holds None.
  ``lost``, ``duplicates``, ``incorrect`` and the guarantee never depend on a baseline and are always reported.
- ``reliable_throughput``: mean distinct ids newly processed per second over the load phase
  (``throughput`` holds the per-second series).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar, cast

from .. import deprecation
from ..facts import RunFacts
from ..history import FaultRecord, History
from ..records import TimelineEvent, Trace
from . import describe as _text
from .checker import Checker, CheckResult, run_all, run_checker
from .checkers import (
    NO_VERDICT,
    DelayResult,
    ObserverResult,
    RecoveryResult,
    TransactionsResult,
    ValidationResult,
    WindowsResult,
    comparison_of,
    default_checkers,
    fault_errors,
    no_verdict,
    reference_unavailable,
)
from .delay_class import DelayOutcome
from .guarantee import GuaranteeReport
from .harness_facts import HarnessFacts
from .metrics import (
    NOT_RECOVERED,
    FaultMetrics,
    LatencySummary,
    MetricParams,
    NotMeasured,
    RecoveryTime,
    RunMetrics,
    Series,
)
from .oracle import Oracle
from .reference import Comparison
from .sla import SLA, SLAViolation, Violation, check_over, check_sla
from .versus import OneRun, Overhead, Runs, Versus
from .windows import WindowVerdict, sent_in

__all__ = ["NO_VERDICT", "NOT_RECOVERED", "SCHEMA_VERSION", "ChaosRun"]

#: version of the JSON of :meth:`ChaosRun.to_dict` (docs/report-schema.md); bumped when a key changes
#: meaning or goes away, not when one is added
SCHEMA_VERSION = 2

C = TypeVar("C", bound=CheckResult)
T = TypeVar("T")


class RecoveryNumbers:
    """What a run measured of its recovery (docs/metrics.md), read from its ``recovery`` check's metrics: the
    numbers a test bounds (``downtime``, ``recovery_time``, ``failure_cost``; a :class:`NotMeasured` when the
    run could not measure one), the latency and throughput series, the per-fault metrics."""

    recovery: RecoveryResult

    @property
    def metrics(self) -> RunMetrics:
        assert self.recovery.metrics is not None
        return self.recovery.metrics

    def _measured(self, name: str, value: T | None) -> T | NotMeasured:
        return NotMeasured(name, self.metrics.unavailable.get(name, "not measured")) if value is None else value

    @property
    def downtime(self) -> float | NotMeasured:
        """The largest output gap a fault caused; :class:`NotMeasured` when it could not be measured (see
        :attr:`unavailable`): comparing it raises, naming why."""
        return self._measured("downtime", self.metrics.downtime)

    @property
    def recovery_time(self) -> RecoveryTime | NotMeasured:
        """:class:`NotMeasured` when it could not be measured (see :attr:`unavailable`)."""
        return self._measured("recovery_time", self.metrics.recovery_time)

    @property
    def failure_cost(self) -> float | NotMeasured:
        """:class:`NotMeasured` when it could not be measured (see :attr:`unavailable`)."""
        return self._measured("failure_cost", self.metrics.failure_cost)

    @property
    def measurable(self) -> bool:
        """Whether the run could measure what its faults did to the output (downtime and recovery): False
        with a trigger slower than the run's phases or a fault before the baseline (:attr:`unavailable`)."""
        return not any(k in self.metrics.unavailable for k in ("downtime", "recovery_time"))

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


class ABMethods:
    """A run set against another run: the A/B comparisons of :class:`ChaosRun`."""

    def versus(self: Runs, baseline: Runs, slo_latency: float | None = None, factor: float = 1.0) -> Versus:
        """This run against ``baseline`` (the same scenario under another configuration, or without
        its faults): per-metric deltas and, per fault of this run, a masking verdict (masked: p99 within
        ``factor`` x the baseline's band). See :func:`pytest_streamchaos.analysis.versus.versus`."""
        from .versus import versus

        return versus(self, baseline, slo_latency=slo_latency, factor=factor)

    def overhead(self: OneRun, reference: OneRun) -> Overhead:
        """This run's steady-state cost against ``reference`` (the same job and load in another
        setting), and its time back to normal after its fault. See
        :func:`pytest_streamchaos.analysis.versus.overhead`."""
        from .versus import overhead

        return overhead(self, reference)


class OldForms:
    """:class:`ChaosRun`'s old public forms, each through the deprecation helper (docs/deprecations.md)."""

    @property
    def exactly_once_verified(self) -> bool | None:
        """Deprecated (goes in 0.3.0): whether the broker could show which outputs were committed."""
        deprecation.use("run.exactly_once_verified", error=AttributeError)
        check = cast(Any, self).exactly_once_check
        return None if check is None else check["status"] != "unverified"

    @property
    def observer_lines(self) -> NoReturn:
        """Removed in 0.2.0: accessing it says what replaced it."""
        raise AttributeError(deprecation.MOVED["run.observer_lines()"].refusal())


@dataclass(eq=False)
class ChaosRun(RecoveryNumbers, HarnessFacts, ABMethods, OldForms):
    """Verdict of one run: its history, the default checkers' results (``checks``, by name; the
    validation and the recovery metrics the others read) and the timeline with the events the
    analysis derived; ``user_checks`` holds what :meth:`check` found. What the harness knows about the
    run (``driver_launches``, ``checkpoint``, ``spark_conf``, ``load``, ...) are typed attributes too
    (:class:`~pytest_streamchaos.analysis.harness_facts.HarnessFacts`)."""

    history: History
    guarantee: str
    validation: ValidationResult
    recovery: RecoveryResult
    checks: dict[str, CheckResult]
    timeline: list[TimelineEvent]
    user_checks: dict[str, CheckResult] = field(default_factory=dict)

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def judge(cls, history: History, oracle: Oracle | None = None, guarantee: str = "exactly-once",
              params: MetricParams | None = None) -> ChaosRun:
        """Judge ``history`` with the default checkers: the outputs against ``oracle`` (default
        :class:`~pytest_streamchaos.analysis.oracle.IdentityOracle`, bound to the run's topics, never
        changed), the declared ``guarantee``, the recovery metrics with ``params``. What a run's plan adds
        (a reference, a real-time mode) is the one judge's: :func:`~pytest_streamchaos.analysis.judge.judge`."""
        d = default_checkers(oracle, guarantee, params)
        checks = run_all(d.all, history)
        validation, recovery = d.validation.check(history), d.recovery.check(history)
        assert recovery.metrics is not None
        timeline = sorted([*history.timeline, *recovery.metrics.derived_events()], key=lambda e: e.t)
        return cls(history, guarantee, validation, recovery, checks, timeline)

    @classmethod
    def from_trace(
        cls,
        trace: Trace | History,
        oracle: Oracle | None = None,
        guarantee: str = "exactly-once",
        params: MetricParams | None = None,
        keep_trace: bool = False,
        per_record: bool = True,
        facts: RunFacts | None = None,
    ) -> ChaosRun:
        """Judge a bare ``trace`` (or a history): validate it against ``oracle`` and compute the
        metrics with ``params``. ``guarantee`` is the declared one (checked by :meth:`assert_sla`).
        ``per_record=False``: the outputs are estimates (:mod:`pytest_streamchaos.observe.from_progress`), so the run
        reports recovery metrics but no per-record verdict (``resolution == "none"``). ``facts``: what is known
        about the run besides its records (none for a synthetic trace). ``keep_trace`` is ignored: the
        run keeps its history (``run.history``), which checkers of the test's own read."""
        history = trace if isinstance(trace, History) else History(trace, facts=facts or RunFacts(),
                                                                   per_record=per_record)
        return cls.judge(history, oracle, guarantee, params)

    # -- as an outcome of n runs ---------------------------------------------------------------
    @property
    def runs(self) -> list[ChaosRun]:
        """The runs this outcome is over: this one (a repeated scenario's :class:`~.repeat.RepeatedRun` has
        several)."""
        return [self]

    @property
    def worst_run(self) -> ChaosRun:
        """The run whose timeline explains a violated bound: this one."""
        return self

    # -- the test's own checkers ---------------------------------------------------------------
    def check(self, checker: Checker, must_pass: bool = False) -> CheckResult:
        """Run ``checker`` (anything with a ``name`` and ``check(history)``) over this run's history and
        return its result, which the run's report (``describe()``, JSON ``checks``) then shows.
        ``must_pass=True`` raises :class:`~pytest_streamchaos.analysis.checker.CheckFailed` (an
        ``AssertionError``, with the check's lines) unless it held (an unknown is not a pass)."""
        result = run_checker(checker, self.history)
        # checked again under the same name: the new result replaces the old; a default's name is kept
        self.user_checks[result.name if result.name not in self.checks else f"test:{result.name}"] = result
        return result.assert_ok() if must_pass else result

    def result_of(self, kind: type[C]) -> C | None:
        """The first default check result of type ``kind`` (e.g. ``DelayResult``), None if none."""
        return next((r for r in self.checks.values() if isinstance(r, kind)), None)

    # -- guarantee -----------------------------------------------------------------------------
    @property
    def report(self) -> GuaranteeReport:
        assert self.validation.report is not None
        return self.validation.report

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
    def expected(self) -> int:
        return self.report.expected

    @property
    def guarantee_delivered(self) -> str:
        """From the per-record verdict, else (no input ids in the output) from the reference comparison."""
        cmp = self.reference
        return (cmp.guarantee() or "unknown") if self.resolution == "none" and cmp is not None else \
            self.validation.delivered

    @property
    def reference(self) -> Comparison | None:
        """The comparison with the reference run (``reference=True``: ``.lines()``, ``.to_dict()``), or None."""
        return comparison_of([*self.checks.values(), *self.user_checks.values()])

    @property
    def diverged(self) -> int | None:
        """Rows or keys that differ from the reference run's output; None without one, or none comparable."""
        return None if self.reference is None else self.reference.diverged

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

    @property
    def exactly_once_check(self) -> dict[str, Any] | None:
        """How the duplicate / exactly-once verdict was reached: ``method`` (``"collector:
        read_committed"``), ``status``, ``reason``, ``transaction_markers`` (None for a bare trace)."""
        r = self.result_of(TransactionsResult)
        return None if r is None else r.as_report()

    @property
    def unavailable(self) -> dict[str, str]:
        """Metric name -> why it could not be computed (empty when every metric was)."""
        if self.resolution != "none":
            return self.metrics.unavailable
        why = no_verdict(self.facts)
        return {**dict.fromkeys(("lost", "duplicates", "incorrect", "reliability"), why),
                **reference_unavailable(self.reference, self.facts), **self.metrics.unavailable}

    # -- windows -------------------------------------------------------------------------------
    @property
    def windows(self) -> list[WindowVerdict]:
        """Each window of the run judged on its own (docs/metrics.md#one-run-many-faults-windows): one per fault
        (faults whose effects overlap share one), or the schedules of one history; each with the records sent in it
        ``lost`` / ``duplicates`` / ``incorrect``, its ``downtime`` and ``recovery_time``, ``ok`` under the
        declared guarantee and ``describe()``. Empty without a fault. A view of one window: that window."""
        r = self.result_of(WindowsResult)
        return [] if r is None else list(r.verdicts)

    @property
    def window(self) -> WindowVerdict | None:
        """The window this run is a view of (a schedule of ``@explore``'s one history), None for a whole run."""
        return self.windows[0] if self.history.focus is not None and self.windows else None

    # -- the run's facts -----------------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        return self.history.trace

    @property
    def sent(self) -> int:
        """Input records sent (a view of one window: sent in that window)."""
        if self.history.focus is not None:
            return int(sent_in(self.history, self.history.focus).sum())
        return len(self.history.sent)

    @property
    def outputs(self) -> int:
        return len(self.history.outputs)

    @property
    def fault_records(self) -> list[FaultRecord]:
        """The run's fault occurrences as they happened (kind, target, times, aim, errors); a view of one
        window: that window's."""
        return self.history.focused_faults

    @property
    def fault_errors(self) -> list[str]:
        """Faults that did not happen as planned (each: its label and why); empty when all did."""
        return fault_errors(self.history)

    @property
    def warnings(self) -> list[str]:
        """The run's warnings: the harness's, then those of its checks (a disturbed observer)."""
        return [*self.facts.warnings, *(w for r in self.checks.values() for w in r.warnings)]

    @property
    def delay_outcomes(self) -> list[DelayOutcome]:
        """What each network delay did against its stated class (``delay_classes`` check)."""
        r = self.result_of(DelayResult)
        return [] if r is None else list(r.outcomes)

    @property
    def observer(self) -> dict[str, Any] | None:
        """Whether the network faults spared the harness (``scope``: ``job`` = only the job's
        connections were faulted) and the harness clients' broker round trips before and during the
        network faults (``generator``, ``collector``; ``disturbed`` names a client that was hit)."""
        r = self.result_of(ObserverResult)
        return None if r is None else r.as_report()

    @property
    def meta(self) -> dict[str, Any]:
        """The JSON of what the harness knows about the run (the report's ``meta``, written from
        :attr:`facts` and the checks; a new dict each time, empty for a bare trace). A test reads the typed
        attributes instead (:attr:`driver_launches`, :attr:`checkpoint`, :attr:`load`, ...)."""
        return _text.meta(self)

    # -- SLA -----------------------------------------------------------------------------------
    def check_sla(self, sla: SLA | None = None, check_guarantee: bool = True, over: str = "worst",
                  **bounds: object) -> list[Violation]:
        """Violated bounds; the declared guarantee is checked unless ``check_guarantee=False`` or
        a ``guarantee=`` bound is given. ``over`` (``"worst"`` or ``"median"``) is a repeated run's: one run's
        worst and median are the run itself."""
        check_over(over)
        # a run without a per-record verdict (and without a reference run's) cannot check the declared
        # guarantee: unless the test asks for it explicitly (then the bound fails, saying why), it is not part
        # of the SLA
        judged = self.resolution != "none" or self.reference is not None
        if check_guarantee and "guarantee" not in bounds and (sla is None or sla.guarantee is None) and judged:
            bounds["guarantee"] = self.guarantee
        return check_sla(self, sla, **bounds)

    def assert_sla(self, sla: SLA | None = None, check_guarantee: bool = True, over: str = "worst",
                   **bounds: object) -> None:
        """Raise :class:`SLAViolation` listing every violated bound, with the timeline."""
        violations = self.check_sla(sla, check_guarantee, over, **bounds)
        if violations:
            raise SLAViolation(violations, self.timeline, self.metrics.t0, context=self.context())

    # -- report --------------------------------------------------------------------------------
    def context(self) -> str:
        """Short multi-line account of guarantee counts and per-fault recovery, for messages."""
        return _text.context(self)

    def describe(self) -> str:
        """The human report of the run: headline numbers, per-fault recovery, the checks, the timeline."""
        return _text.describe(self)

    def setup_lines(self) -> list[str]:
        """How long the load ran and why, the sinks, the timeouts the run set for a delay class, and what
        the run's other checks found (empty for a run built from a bare trace)."""
        return _text.setup_lines(self)

    def timeline_lines(self) -> list[str]:
        return _text.timeline_lines(self)

    # -- export --------------------------------------------------------------------------------
    def summary_row(self) -> dict[str, object]:
        """One row of the terminal summary table (short, human values)."""
        return _text.summary_row(self)

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
            "diverged": self.diverged,
            **{k: m[k] for k in ("downtime", "recovery_time", "recovered", "failure_cost", "reliable_throughput",
                                 "unavailable", "measurable")},
            "metrics": m,
            "timeline": [_text.event_dict(e) for e in self.timeline],
            "checks": {name: r.to_dict() for name, r in {**self.checks, **self.user_checks}.items()},
            "meta": self.meta,
        }

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    def __repr__(self) -> str:
        """One short line (pytest shows it in a failed ``assert run.lost == 0``; the dataclass's own
        repr would dump the whole report, cut after 240 characters)."""
        rt, down = self.metrics.recovery_time, self.metrics.downtime
        rec = ("no fault" if not self.faults else "recovery not measured" if rt is None
               else "not recovered" if rt is NOT_RECOVERED else f"recovered in {float(rt):.1f}s")
        downtime = "not measurable" if down is None else f"{down:.1f}s"
        return (f"ChaosRun(sent {self.sent}, lost {self.lost}, duplicates {self.duplicates}, incorrect "
                f"{self.incorrect}, {self.guarantee} declared, {self.guarantee_delivered} delivered, "
                f"{len(self.faults)} fault{'s' if len(self.faults) != 1 else ''} {rec}, downtime {downtime})")
