"""The one judge: a run's :class:`~pytest_streamchaos.history.History` and its :class:`Plan` in, the verdict
(:class:`~pytest_streamchaos.analysis.result.ChaosRun`) out, with every check the plan asks for.

What a run is judged by is decided here and nowhere else:

- the default checkers (:func:`~pytest_streamchaos.analysis.checkers.default_checkers`): the outputs against the
  plan's oracle, the declared guarantee, the recovery metrics with its parameters, the faults as planned, ...;
- a job in real-time mode (``plan.real_time``): what the mode promises, ``run.user_checks["realtime_latency"]``
  (latency per record before and after the faults) and ``["replay_bound"]`` (duplicates only within the last
  interval: the plan's, else the one read off the batches);
- a run compared with a reference (``plan.compared``): ``run.user_checks["reference"]``, its outputs against the
  two fault-free runs' rows;

and, once the test body has run, over what ``chaos.run`` returned (:func:`assert_planned`): the faults that did
not happen as planned, then the test's ``@pytest.mark.sla`` bounds and each run's declared guarantee
(:class:`Bounds`; a repeated run on its worst run, or its medians).

Pure: data in, verdict out; the runner builds the plan from the run's arguments, the plugin the bounds from the
test's marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..history import History
from .checker import Checker
from .checkers.realtime import RealTimeLatency, ReplayBound, interval_of
from .checkers.reference import ReferenceCheck
from .metrics import MetricParams
from .oracle import Oracle
from .reference import OutputRows, Reference
from .result import ChaosRun

if TYPE_CHECKING:
    from .repeat import RepeatedRun

__all__ = ["Bounds", "Compared", "Plan", "assert_planned", "judge"]


@dataclass(frozen=True)
class Compared:
    """The reference a run is compared with: the two fault-free runs' output rows, how (``Reference``), and the
    line saying where the reference came from."""

    first: Sequence[OutputRows]
    second: Sequence[OutputRows]
    options: Reference
    notes: Sequence[str] = ()

    def checker(self) -> ReferenceCheck:
        return ReferenceCheck(self.first, self.second, self.options, plan_notes=list(self.notes))


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a run is judged by (see the module docstring): ``oracle`` (None: identity), the declared
    ``guarantee``, the metric ``params``, whether the job runs in ``real_time`` mode (and its interval when its
    script says it), the reference it is ``compared`` with."""

    oracle: Oracle | None = None
    guarantee: str = "exactly-once"
    params: MetricParams | None = None
    real_time: bool = False
    real_time_interval: float | None = None
    compared: Compared | None = None

    def checkers(self, history: History) -> list[Checker]:
        """The checks the plan adds to the default ones, in the order the run shows them."""
        out: list[Checker] = []
        if self.real_time:
            out += [RealTimeLatency(), ReplayBound(self.real_time_interval or interval_of(history))]
        if self.compared is not None:
            out.append(self.compared.checker())
        return out


def judge(history: History, plan: Plan | None = None) -> ChaosRun:
    """``history`` judged by every check of ``plan`` (default: the default checkers with the identity oracle
    and ``exactly-once`` declared)."""
    plan = plan or Plan()
    run = ChaosRun.judge(history, plan.oracle, plan.guarantee, plan.params)  # the default checkers
    for checker in plan.checkers(history):
        run.check(checker)
    return run


@dataclass(frozen=True)
class Bounds:
    """The test's ``@pytest.mark.sla`` bounds (``over``: a repeated run is judged on its ``"worst"`` run, or
    on its ``"median"``s) and whether its faults are a ``sequence`` (a violated bound then names the window of
    the fault that broke it first)."""

    bounds: Mapping[str, Any] = field(default_factory=dict)
    over: str = "worst"
    sequence: bool = False

    @classmethod
    def of(cls, marks: Sequence[Mapping[str, Any]], sequence: bool = False) -> Bounds:
        """From the ``sla`` marks' keywords, the closest last (a test's own mark overrides its class's)."""
        bounds: dict[str, Any] = {}
        for kwargs in marks:
            bounds.update(kwargs)
        over = bounds.pop("over", "worst")
        return cls(bounds, over, sequence)


def assert_planned(results: Sequence[ChaosRun | RepeatedRun], bounds: Bounds, *, faults: bool = True) -> None:
    """What ``chaos.run`` returned, judged after the test body: an AssertionError naming the faults of a run that
    did not happen as planned (unless not ``faults``: an explored body's are the search's to judge), then one
    listing every violated SLA bound of a result, with its timeline."""
    if faults:
        for result in results:
            for run in result.runs:
                if run.fault_errors:
                    raise AssertionError("faults of this run did not happen as planned:\n  "
                                         + "\n  ".join(run.fault_errors) + "\n" + "\n".join(run.timeline_lines()))
    for result in results:
        try:
            result.assert_sla(over=bounds.over, **bounds.bounds)
        except AssertionError as exc:
            windows = result.worst_run.windows if bounds.sequence else None
            if not windows:
                raise
            # a sequence: which fault's window broke it, first
            lines = [f"  {w.describe()}" + ("" if w.ok is not False else "  <-- VIOLATED") for w in windows]
            raise AssertionError("\n".join(["each fault's window (sequence=True):", *lines, str(exc)])) from None
