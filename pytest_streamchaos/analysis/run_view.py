"""What the report's text and the SLA check read of a run, as protocols: :class:`Bounded` (the numbers an SLA
bounds, :func:`~pytest_streamchaos.analysis.sla.check_sla`'s) and :class:`RunView` (one judged run, what
:mod:`~pytest_streamchaos.analysis.describe` reads).

:class:`~pytest_streamchaos.analysis.result.ChaosRun` is both; a
:class:`~pytest_streamchaos.analysis.repeat.RepeatedRun` and its SLA view (the worst or median over its runs) are
:class:`Bounded`. They fit by their members, not by inheritance: this module sits below them in the import graph
(it imports no module that imports it back), and mypy holds each class to the protocol where it is passed (and in
tests/unit/result_conformance.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from ..facts import RunFacts
from ..history import History
from ..records import TimelineEvent
from .checker import CheckResult
from .delay_class import DelayOutcome
from .guarantee import GuaranteeReport
from .run_metrics import FaultMetrics, LatencySummary, RunMetrics
from .sentinels import NotMeasured, RecoveryTime
from .windows import WindowVerdict

__all__ = ["Bounded", "RunView"]

C = TypeVar("C", bound=CheckResult)


class Bounded(Protocol):
    """The numbers an SLA bounds and the guarantee delivered (a count is None when the run has no per-record
    verdict; a repeated run's median of counts is a float). ``check_sla`` also reads a run's ``unavailable`` (why a
    metric was not measured) when it has one."""

    @property
    def lost(self) -> float | None: ...

    @property
    def duplicates(self) -> float | None: ...

    @property
    def incorrect(self) -> float | None: ...

    @property
    def reliability(self) -> float | None: ...

    @property
    def downtime(self) -> float | NotMeasured: ...

    @property
    def recovery_time(self) -> RecoveryTime | NotMeasured: ...

    @property
    def failure_cost(self) -> float | NotMeasured: ...

    @property
    def guarantee_delivered(self) -> str: ...


class RunView(Bounded, Protocol):
    """One judged run as its report reads it: the headline numbers, the history and its facts, the checks'
    results and the timeline."""

    @property
    def guarantee(self) -> str: ...

    @property
    def sent(self) -> int: ...

    @property
    def outputs(self) -> int: ...

    @property
    def reliable_throughput(self) -> float: ...

    @property
    def latency(self) -> LatencySummary: ...

    @property
    def metrics(self) -> RunMetrics: ...

    @property
    def faults(self) -> Sequence[FaultMetrics]: ...

    @property
    def timeline(self) -> Sequence[TimelineEvent]: ...

    @property
    def warnings(self) -> Sequence[str]: ...

    @property
    def history(self) -> History: ...

    @property
    def facts(self) -> RunFacts: ...

    @property
    def windows(self) -> Sequence[WindowVerdict]: ...

    @property
    def resolution(self) -> str: ...

    @property
    def report(self) -> GuaranteeReport: ...

    @property
    def checks(self) -> Mapping[str, CheckResult]: ...

    @property
    def user_checks(self) -> Mapping[str, CheckResult]: ...

    def result_of(self, kind: type[C]) -> C | None: ...

    @property
    def delay_outcomes(self) -> Sequence[DelayOutcome]: ...

    @property
    def observer(self) -> Mapping[str, object] | None: ...

    @property
    def exactly_once_check(self) -> Mapping[str, object] | None: ...
