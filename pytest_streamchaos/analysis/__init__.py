"""Verdicts: guarantee validation, recovery metrics and SLA checks. Pure: data in, numbers out.

Entry point: :meth:`ChaosRun.from_trace` (validation + metrics of one recorded :class:`Trace`).
"""

from ..records import OutputRecords, SentRecords, TimelineEvent, Trace
from .aggregate import AggregateOracle
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
    "CustomOracle",
    "GuaranteeReport",
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
    "compute_metrics",
    "validate",
]
