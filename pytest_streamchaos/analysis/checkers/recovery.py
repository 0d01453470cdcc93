"""The recovery checks: one computation of the run's metrics (docs/metrics.md), read by the checks of
downtime, recovery time and failure cost.

:class:`Recovery` computes the metrics once per history (``compute_metrics``, over the validation of
its :class:`~.guarantee.Validation`); :class:`Downtime`, :class:`RecoveryTime` and
:class:`FailureCost` each judge one number of it, against a bound when given one. A metric that
cannot be measured (no baseline before the first fault) is not judged (``ok`` None) and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_streamchaos.history import History

from ..checker import CheckResult, Memo
from ..metrics import NOT_RECOVERED, MetricParams, RunMetrics, compute_metrics
from .guarantee import Validation


@dataclass
class RecoveryResult(CheckResult):
    """The run's metrics (:class:`~pytest_streamchaos.analysis.metrics.RunMetrics`)."""

    metrics: RunMetrics | None = None


class Recovery:
    """The run's recovery metrics with ``params``, once per history; ``ok``: every fault recovered, a fault the
    next one struck before it recovered through that one (None when recovery could not be measured)."""

    name = "recovery"

    def __init__(self, validation: Validation, params: MetricParams | None = None) -> None:
        self.validation = validation
        self.params = params
        self._memo = Memo()

    def check(self, history: History) -> RecoveryResult:
        return self._memo.get(history, lambda: self._measure(history))

    def _measure(self, history: History) -> RecoveryResult:
        v = self.validation.check(history)
        m = compute_metrics(history, v.run_report, v.oracle, self.params)
        rec = m.recovery_time
        numbers: dict[str, Any] = {"faults": len(m.faults), "downtime": m.downtime, "recovered": m.recovered,
                                   "recovery_time": None if rec is None or rec is NOT_RECOVERED else float(rec),
                                   "failure_cost": m.failure_cost}
        reason = "; ".join(f"{k}: {why}" for k, why in m.unavailable.items())
        lines = [f"fault {i} ({f.kind} {f.target}): {f.verdict}, downtime {seconds(f.downtime)}" for i, f in
                 enumerate(m.faults)]
        return RecoveryResult(self.name, m.recovered, lines, numbers, reason=reason, metrics=m)


def seconds(value: float | None) -> str:
    """A duration for a report line: ``1.2s``, or ``not measurable`` (None)."""
    return "not measurable" if value is None else f"{value:.1f}s"


class _Number:
    """A check of one metric of the one :class:`Recovery` it is given, at most ``maximum`` seconds
    (None: a measurement, no bound)."""

    name = "number"

    def __init__(self, recovery: Recovery, maximum: float | None = None) -> None:
        self.recovery = recovery
        self.maximum = maximum

    def check(self, history: History) -> CheckResult:
        r = self.recovery.check(history)
        assert r.metrics is not None
        return self.judge(r.metrics)

    def judge(self, m: RunMetrics) -> CheckResult:
        raise NotImplementedError

    def bounded(self, value: float, what: str) -> CheckResult:
        bound = "" if self.maximum is None else f" (at most {self.maximum:g}s)"
        ok = self.maximum is None or value <= self.maximum
        return CheckResult(self.name, ok, [f"{what} {value:.2f}s{bound}"], {self.name: value})


class Downtime(_Number):
    """The largest output gap a fault caused (without a fault: the longest abnormal gap of the load)."""

    name = "downtime"

    def judge(self, m: RunMetrics) -> CheckResult:
        if m.downtime is None:
            return CheckResult(self.name, None, reason=m.unavailable.get(self.name, "not measured"),
                               numbers={self.name: None})
        return self.bounded(m.downtime, "downtime")


class RecoveryTime(_Number):
    """The largest recovery time over the faults (faults whose recoveries overlap as one); violated when a
    fault did not recover."""

    name = "recovery_time"

    def judge(self, m: RunMetrics) -> CheckResult:
        rt = m.recovery_time
        if rt is None:
            return CheckResult(self.name, None, reason=m.unavailable.get(self.name, "not measured"),
                               numbers={self.name: None})
        if rt is NOT_RECOVERED:
            last = max((f.horizon for f in m.faults if f.recovered is False), default=m.t_end)
            return CheckResult(self.name, False, [f"not recovered by +{last - m.t0:.1f}s"],
                               {self.name: None, "recovered": False})
        return self.bounded(float(rt), "recovery time")


class FailureCost(_Number):
    """The largest latency increase a fault caused over the baseline's p99 (PGVal §3.4.4)."""

    name = "failure_cost"

    def judge(self, m: RunMetrics) -> CheckResult:
        if m.failure_cost is None:
            return CheckResult(self.name, None, reason=m.unavailable.get(self.name, "not measured"),
                               numbers={self.name: None})
        return self.bounded(m.failure_cost, "failure cost")
