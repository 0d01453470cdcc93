"""The guarantee checks: one validation of the outputs against the oracle (PGVal), read by the checks
of lost, duplicated and incorrect records, the guarantee delivered against the declared one, and the
reliability.

:class:`Validation` validates once per history (``validate``, with the test's oracle bound to the
run's topics); :class:`Lost`, :class:`Duplicates`, :class:`Incorrect`, :class:`GuaranteeDelivered`
and :class:`Reliability` each judge one side of it. A history whose outputs were estimated from
Spark's progress (``per_record`` False) has no per-record verdict: each says so (``ok`` None).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.facts import RunFacts
from pytest_streamchaos.history import History

from ..checker import CheckResult, Memo
from ..guarantee import SATISFIES, GuaranteeReport, _check_guarantee
from ..oracle import IdentityOracle, Oracle
from ..validate import validate
from ..windows import restrict

#: what a run built from Spark's progress alone measures instead of a per-record verdict
_FROM_PROGRESS = ("downtime, recovery and throughput come from Spark's query progress (latency is estimated from "
                  "micro-batch end times)")
#: why a run built from Spark's progress alone has no per-record verdict, when the run tells no more
NO_VERDICT = ("the job's output is not readable (outputs={}: console, noop, an external system), so no input "
              f"record is tracked to an output; {_FROM_PROGRESS}")
_NO_VERDICT_SHORT = "no per-record verdict: the job's output is not readable"
#: why a window of one history has no verdict of its own where the run has one
NO_WINDOW_VERDICT = ("no verdict of the window's own: its outputs carry no input ids (an aggregate checked per "
                     "(key, window)), so its records cannot be told from the rest of the history's")


def no_verdict(facts: RunFacts | None) -> str:
    """Why a run has no per-record verdict, as the run was asked for and what it found: outputs the test named as
    rows without ids (``outputs=[...]``), sinks the run found unreadable, or ``outputs={}``."""
    if facts is None:
        return NO_VERDICT
    if facts.outputs_without_ids:
        named = ", ".join(repr(o) for o in facts.outputs_without_ids)
        rows = ("their rows are compared with the reference run (run.reference)" if facts.output_rows is not None
                else "pass reference=True to compare their rows with a run of the same input without faults")
        return (f"outputs=[{named}] names outputs whose rows carry no input ids, so no input record is tracked to "
                f"an output: {rows}; {_FROM_PROGRESS}")
    if facts.sink_note:
        return f"{facts.sink_note.rstrip('.')}; {_FROM_PROGRESS}"
    return NO_VERDICT


@dataclass
class ValidationResult(CheckResult):
    """The validation of a history: the :class:`~pytest_streamchaos.analysis.guarantee.GuaranteeReport`,
    the declared guarantee, and the oracle as bound to the run's topics (what the metrics measure
    latency with)."""

    report: GuaranteeReport | None = None
    declared: str = "exactly-once"
    oracle: Oracle | None = field(default=None, repr=False)
    #: the validation of the whole history when ``report`` is a window's (a view of one history); else None
    whole: GuaranteeReport | None = field(default=None, repr=False)

    @property
    def run_report(self) -> GuaranteeReport | None:
        """The validation of the whole history (what the run-wide metrics are computed from)."""
        return self.whole if self.whole is not None else self.report

    @property
    def per_record(self) -> bool:
        """Whether the run has a per-record verdict (its outputs were read)."""
        return self.report is not None and self.report.resolution != "none"

    @property
    def delivered(self) -> str:
        """The strongest guarantee the counts support; ``unknown`` without a per-record verdict."""
        return self.report.guarantee_delivered if self.report is not None and self.per_record else "unknown"


class Validation:
    """The outputs validated against ``oracle`` (default :class:`IdentityOracle`), once per history;
    ``ok``: the delivered guarantee satisfies the declared ``guarantee``."""

    name = "validation"

    def __init__(self, oracle: Oracle | None = None, guarantee: str = "exactly-once") -> None:
        _check_guarantee(guarantee)
        self.oracle = oracle or IdentityOracle()
        self.guarantee = guarantee
        self._memo = Memo()

    def bound_oracle(self, history: History) -> Oracle:
        """The test's oracle bound to the run's topics (a copy; the test's own is never changed)."""
        t = history.topics
        return self.oracle if t is None else self.oracle.bound(topic=t.main_output, side_topic=t.side)

    def check(self, history: History) -> ValidationResult:
        return self._memo.get(history, lambda: self._validate(history))

    def _validate(self, history: History) -> ValidationResult:
        oracle = self.bound_oracle(history)
        report = validate(history.trace, oracle)
        if not history.per_record:
            report.resolution = "none"
            return ValidationResult(self.name, None, reason=_NO_VERDICT_SHORT, report=report,
                                    declared=self.guarantee, oracle=oracle)
        whole = None
        if history.focus is not None:  # a window's view: the records sent in it, judged against the whole
            part = restrict(report, history, history.focus)
            if part is None:
                return ValidationResult(self.name, None, reason=NO_WINDOW_VERDICT, report=report,
                                        declared=self.guarantee, oracle=oracle)
            whole, report = report, part
        ok = self.guarantee in SATISFIES[report.guarantee_delivered]
        return ValidationResult(self.name, ok, [f"guarantee: declared {self.guarantee}; {report.describe()}"],
                                report.counts(), report=report, declared=self.guarantee, oracle=oracle, whole=whole)


class _Part:
    """A check that reads the one :class:`Validation` it is given."""

    name = "part"

    def __init__(self, validation: Validation) -> None:
        self.validation = validation

    def check(self, history: History) -> CheckResult:
        v = self.validation.check(history)
        if not v.per_record or v.report is None:
            return CheckResult(self.name, None, reason=_NO_VERDICT_SHORT)
        return self.judge(v.report, v.declared)

    def judge(self, report: GuaranteeReport, declared: str) -> CheckResult:
        raise NotImplementedError


def _count(name: str, n: int, ids: Any, what: str, permitted_by: str, declared: str) -> CheckResult:
    """A count of wrong records: violated when there are some, unless ``declared`` is the guarantee
    that permits them (``permitted_by``)."""
    permitted = declared == permitted_by
    line = f"{n} {what}" + (f", e.g. ids {ids[:5].tolist()}" if n else "")
    if n and permitted:
        line += f"; {declared} permits them"
    return CheckResult(name, n == 0 or permitted, [line], {name: n})


class Lost(_Part):
    """Expected input records never seen in their output; violated unless the declared guarantee
    permits loss (at-most-once)."""

    name = "lost"

    def judge(self, report: GuaranteeReport, declared: str) -> CheckResult:
        return _count(self.name, report.lost, report.lost_ids, "input record(s) lost", "at-most-once", declared)


class Duplicates(_Part):
    """Appearances beyond the expected ones; violated unless the declared guarantee permits them
    (at-least-once)."""

    name = "duplicates"

    def judge(self, report: GuaranteeReport, declared: str) -> CheckResult:
        return _count(self.name, report.duplicates, report.duplicate_ids, "duplicate appearance(s)", "at-least-once",
                      declared)


class Incorrect(_Part):
    """Appearances in an output they do not belong to (a wrong window, an id the job should have
    dropped, one never sent): never permitted."""

    name = "incorrect"

    def judge(self, report: GuaranteeReport, declared: str) -> CheckResult:
        n = report.incorrect
        shown = "; ".join(f"id {i} in {a}, expected {b}" for i, a, b in report.misplaced[:3])
        line = f"{n} incorrect appearance(s)" + (f", e.g. {shown}" if shown else "")
        return CheckResult(self.name, n == 0, [line], {"incorrect": n})


class GuaranteeDelivered(_Part):
    """The strongest guarantee the counts support (PGVal §3.4.1) against the declared one."""

    name = "guarantee"

    def judge(self, report: GuaranteeReport, declared: str) -> CheckResult:
        delivered = report.guarantee_delivered
        return CheckResult(self.name, declared in SATISFIES[delivered],
                           [f"declared {declared}, delivered {delivered}"],
                           {"declared": declared, "delivered": delivered})


class Reliability(_Part):
    """The share of expected records processed correctly under the declared guarantee (PGVal);
    violated below ``minimum`` (None: a measurement, no bound)."""

    name = "reliability"

    def __init__(self, validation: Validation, minimum: float | None = None) -> None:
        super().__init__(validation)
        self.minimum = minimum

    def judge(self, report: GuaranteeReport, declared: str) -> CheckResult:
        r = report.reliability(declared)
        numbers: dict[str, Any] = {"reliability": r, "declared": declared}
        bound = "" if self.minimum is None else f" (at least {self.minimum:g} required)"
        return CheckResult(self.name, self.minimum is None or r >= self.minimum,
                           [f"reliability {r:.6f} under {declared}{bound}"], numbers)
