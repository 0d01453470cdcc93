"""Verdicts: checkers over a run's history -- guarantee validation, recovery metrics, the checks of the
run's facts -- and SLA checks. Pure: data in, numbers out.

Entry points: :meth:`ChaosRun.judge` (the default checkers over a :class:`History`),
:meth:`ChaosRun.from_trace` (the same for one recorded :class:`Trace`), :class:`Checker` /
:class:`CheckResult` / :func:`compose` for checkers of one's own.
"""

from ..history import History
from ..records import OutputRecords, SentRecords, TimelineEvent, Trace
from .aggregate import AggregateOracle
from .checker import Checker, CheckFailed, CheckResult, compose
from .metrics import NOT_RECOVERED, MetricParams, RunMetrics, compute_metrics
from .oracle import CustomOracle, IdentityOracle, Oracle, TumblingWindowOracle
from .result import ChaosRun
from .sla import SLA, SLAViolation, Violation, check_sla
from .validate import GuaranteeReport, validate

__all__ = [
    "NOT_RECOVERED",
    "SLA",
    "AggregateOracle",
    "ChaosRun",
    "CheckFailed",
    "CheckResult",
    "Checker",
    "CustomOracle",
    "GuaranteeReport",
    "History",
    "IdentityOracle",
    "MetricParams",
    "Oracle",
    "OutputRecords",
    "RunMetrics",
    "SLAViolation",
    "SentRecords",
    "TimelineEvent",
    "Trace",
    "TumblingWindowOracle",
    "Violation",
    "check_sla",
    "compose",
    "compute_metrics",
    "validate",
]
