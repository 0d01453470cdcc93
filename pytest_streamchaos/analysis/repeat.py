"""``RepeatedRun``: one scenario run N times, so a metric is a median with a spread, not one sample.

``@pytest.mark.chaos(repeat=5)`` (or ``--chaos-repeat=5``) makes ``chaos.run(...)`` run the scenario
five times and return a ``RepeatedRun``::

    runs = chaos.run("pipelines/enrich.py", rate=200, duration=40)
    runs.downtime                   # median over the runs
    runs.spread("downtime")         # (min, max)
    runs.worst("recovery_time")     # the worst value (highest; lowest for reliability / throughput)
    runs.runs[2].timeline_lines()   # every single ChaosRun
    runs.assert_sla(max_downtime=15)            # against the worst run (default)
    runs.assert_sla(max_downtime=15, over="median")

Why the worst run by default for SLAs: an SLA is a promise about every run, and the repeats are
there to show the noise, not to average a bad run away. What is not a metric -- ``timeline``, ``faults``,
``windows``, ``fault_errors``, ``meta``, the harness's facts (``facts``, ``driver_launches``, ``checkpoint``,
...) -- is the worst run's, each a member of its own; any other attribute of one run is read on
``runs.worst_run`` (or ``runs.runs[k]``): read here it still works, deprecated (docs/deprecations.md).
``runs.check(checker)`` runs a checker of the test's own over every run.

A repeated run is an outcome over n >= 1 runs of one scenario (one plan: one declared guarantee); a single
``ChaosRun`` answers the same outcome members (``runs``, ``worst_run``, ``assert_sla(over=...)``) over itself,
so the one judge (:func:`~pytest_streamchaos.analysis.judge.assert_planned`) reads either alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import deprecation
from ..history import FaultRecord, History
from ..records import TimelineEvent
from . import keys
from .checker import Checker, ComposedResult
from .guarantee import GUARANTEES, SATISFIES
from .harness_facts import HarnessFacts
from .metrics import NOT_RECOVERED, FaultMetrics, LatencySummary, RecoveryTime, RunMetrics
from .reference import Comparison
from .result import SCHEMA_VERSION, ChaosRun
from .sla import SLA, SLAViolation, Violation, check_over, check_sla
from .versus import Runs, Versus
from .windows import WindowVerdict

#: metrics a RepeatedRun aggregates (attribute names of ChaosRun); latency is aggregated per field
METRICS: tuple[str, ...] = ("lost", "duplicates", "incorrect", "reliability", "downtime", "recovery_time",
                            "failure_cost", "reliable_throughput", "sent", "outputs")


def weakest_guarantee(delivered: Sequence[str]) -> str:
    """The strongest guarantee every one of ``delivered`` satisfies (what all runs delivered)."""
    common = set.intersection(*(SATISFIES[g] for g in delivered)) if delivered else {"none"}
    for g in GUARANTEES:
        if SATISFIES[g] == common:
            return g
    return "none"


class _Aggregated:
    """The metrics of a repeated run, each aggregated ``_over`` its runs (``"median"``, or ``"worst"``: the SLA's
    view), and what every run delivered."""

    _over: str

    def _outcome(self) -> RepeatedRun:
        raise NotImplementedError

    def _metric(self, name: str) -> float:
        return self._outcome()._agg(name, self._over)

    @property
    def lost(self) -> int | float:
        return self._metric("lost")

    @property
    def duplicates(self) -> int | float:
        return self._metric("duplicates")

    @property
    def incorrect(self) -> int | float:
        return self._metric("incorrect")

    @property
    def reliability(self) -> float:
        return self._metric("reliability")

    @property
    def downtime(self) -> float:
        return self._metric("downtime")

    @property
    def recovery_time(self) -> RecoveryTime:
        """:data:`NOT_RECOVERED` when the runs aggregated to one that did not recover."""
        value = self._metric("recovery_time")
        return NOT_RECOVERED if math.isinf(value) else value

    @property
    def failure_cost(self) -> float:
        return self._metric("failure_cost")

    @property
    def reliable_throughput(self) -> float:
        return self._metric("reliable_throughput")

    @property
    def sent(self) -> int | float:
        return self._metric("sent")

    @property
    def outputs(self) -> int | float:
        return self._metric("outputs")

    @property
    def latency(self) -> LatencySummary:
        return self._outcome()._latency(self._over)

    @property
    def guarantee_delivered(self) -> str:
        """What every run delivered (the weakest of them)."""
        return weakest_guarantee([r.guarantee_delivered for r in self._outcome().runs])

    @property
    def unavailable(self) -> dict[str, str]:
        """Why a metric could not be computed: the worst run's reasons."""
        return self._outcome().worst_run.unavailable


class RepeatedRun(_Aggregated, HarnessFacts):
    """N >= 1 runs of one scenario; metric attributes are medians, the rest the worst run's (see the module
    docstring)."""

    def __init__(self, runs: Sequence[ChaosRun]) -> None:
        if not runs:
            raise ValueError("RepeatedRun needs at least one run")
        self.runs: list[ChaosRun] = list(runs)

    _over = "median"  # its metrics: the medians over its runs

    def _outcome(self) -> RepeatedRun:
        return self

    @property
    def guarantee(self) -> str:
        """The declared guarantee (the scenario's: every run's)."""
        return self.runs[0].guarantee

    # -- the worst run's: what explains a violated bound ---------------------------------------------
    @property
    def history(self) -> History:
        """The worst run's history (the harness's facts, ``driver_launches``, ``checkpoint``, ... read it)."""
        return self.worst_run.history

    @property
    def timeline(self) -> list[TimelineEvent]:
        return self.worst_run.timeline

    @property
    def metrics(self) -> RunMetrics:
        return self.worst_run.metrics

    @property
    def faults(self) -> list[FaultMetrics]:
        return self.worst_run.faults

    @property
    def fault_records(self) -> list[FaultRecord]:
        return self.worst_run.fault_records

    @property
    def fault_errors(self) -> list[str]:
        return self.worst_run.fault_errors

    @property
    def windows(self) -> list[WindowVerdict]:
        return self.worst_run.windows

    @property
    def resolution(self) -> str:
        return self.worst_run.resolution

    @property
    def reference(self) -> Comparison | None:
        return self.worst_run.reference

    @property
    def diverged(self) -> int | None:
        return self.worst_run.diverged

    @property
    def warnings(self) -> list[str]:
        return self.worst_run.warnings

    @property
    def meta(self) -> dict[str, Any]:
        return self.worst_run.meta

    def timeline_lines(self) -> list[str]:
        return self.worst_run.timeline_lines()

    def context(self) -> str:
        return self.worst_run.context()

    if not TYPE_CHECKING:  # the old forwarding of any attribute of one run: deprecated; mypy sees none of it

        def __getattr__(self, name: str) -> Any:
            # only called for names not found normally; "runs" missing means a half-built object
            from .result import ChaosRun

            if name.startswith("_") or not (hasattr(ChaosRun, name) or name in ChaosRun.__dataclass_fields__):
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            deprecation.use("RepeatedRun.<an attribute of one run>", error=AttributeError)
            return getattr(self.worst_run, name)

    # -- per metric ----------------------------------------------------------------------------
    def values(self, metric: str) -> list[float]:
        """The metric (dotted for nested: ``latency.p99``) of every run, in run order."""
        return [keys.from_run(r, metric) for r in self.runs]

    def median(self, metric: str) -> float:
        """Median over the runs (NaN values, e.g. no latency measured, are left out)."""
        v = [x for x in self.values(metric) if not math.isnan(x)]
        return float(np.median(v)) if v else math.nan

    def spread(self, metric: str) -> tuple[float, float]:
        """(min, max) over the runs: the noise a comparison must see through."""
        v = [x for x in self.values(metric) if not math.isnan(x)]
        return (min(v), max(v)) if v else (math.nan, math.nan)

    def worst(self, metric: str) -> float:
        """The worst value over the runs: the highest, or the lowest for reliability / throughput."""
        lo, hi = self.spread(metric)
        return lo if keys.higher_is_better(metric) else hi

    @property
    def worst_run(self) -> ChaosRun:
        """The run that recovered last (then: longest downtime, highest failure cost, most records
        wrong): the one whose timeline explains a violated bound."""
        return max(self.runs, key=_badness)

    # -- aggregation ---------------------------------------------------------------------------------
    def _agg(self, metric: str, over: str) -> float:
        """``metric``'s median or worst over the runs (a count's worst: an int; not recovered: inf)."""
        value = self.median(metric) if over == "median" else self.worst(metric)
        if metric in ("lost", "duplicates", "incorrect", "sent", "outputs") and over == "worst":
            return int(value)
        return value

    def _latency(self, over: str) -> LatencySummary:
        def agg(name: str) -> float:
            return self._agg(f"latency.{name}", over)

        return LatencySummary(p50=agg("p50"), p95=agg("p95"), p99=agg("p99"), peak=agg("peak"),
                              baseline=agg("baseline"), baseline_p95=agg("baseline_p95"),
                              baseline_p99=agg("baseline_p99"), bound=agg("bound"), count=int(agg("count")))

    def view(self, over: str = "worst") -> _View:
        """An object with the run attributes SLAs read, each the worst (or median) over the runs."""
        check_over(over)
        return _View(self, over)

    # -- SLA -----------------------------------------------------------------------------------
    def check_sla(self, sla: SLA | None = None, check_guarantee: bool = True, over: str = "worst",
                  **bounds: object) -> list[Violation]:
        """Violated bounds, judged on the worst value of each metric over the runs (``over="median"``:
        on the medians). The guarantee: what every run delivered."""
        if check_guarantee and "guarantee" not in bounds and (sla is None or sla.guarantee is None):
            bounds["guarantee"] = self.guarantee
        return check_sla(self.view(over), sla, **bounds)

    def assert_sla(self, sla: SLA | None = None, check_guarantee: bool = True, over: str = "worst",
                   **bounds: object) -> None:
        """Raise :class:`SLAViolation` listing every violated bound; the timeline is the worst run's."""
        violations = self.check_sla(sla, check_guarantee, over, **bounds)
        if violations:
            w = self.worst_run
            head = f"judged on the {over} of {len(self.runs)} runs; timeline of the worst run"
            raise SLAViolation(violations, w.timeline, w.metrics.t0, context=head + "\n" + self.spread_text())

    def check(self, checker: Checker, must_pass: bool = False) -> ComposedResult:
        """``checker`` over every run's history (each run keeps its own result): ok when it held on
        every run, violated when it failed on one (``results``: ``run<k>`` -> that run's result)."""
        results = {f"run{k}": r.check(checker) for k, r in enumerate(self.runs)}
        oks = [r.ok for r in results.values()]
        ok = False if False in oks else None if None in oks else True
        name = next(iter(results.values())).name
        combined = ComposedResult(name, ok, [f"{k}: {r.headline()}" for k, r in results.items()],
                                  {"runs": len(oks), "held": oks.count(True)}, results=results)
        return combined.assert_ok() if must_pass else combined

    def versus(self, baseline: Runs, slo_latency: float | None = None) -> Versus:
        """These runs (medians; fault verdicts of the worst run) against ``baseline``
        (:func:`pytest_streamchaos.analysis.versus.versus`)."""
        from .versus import versus

        return versus(self, baseline, slo_latency=slo_latency)

    # -- reporting -----------------------------------------------------------------------------
    def spread_text(self) -> str:
        """One line per headline metric: median (min-max) over the runs."""
        lines = []
        for m in keys.HEADLINE:
            lo, hi = self.spread(m)
            lines.append(f"  {m}: median {keys.fmt(self.median(m))} (spread {keys.fmt(lo)} .. {keys.fmt(hi)})")
        return "\n".join(lines)

    def describe(self) -> str:
        """Median and spread of each headline metric, then the worst run's own report."""
        return (f"{len(self.runs)} runs of the same scenario; median (spread):\n{self.spread_text()}\n"
                f"worst run:\n{self.worst_run.describe()}")

    def summary_row(self) -> dict[str, object]:
        """The terminal table's row: each number as ``median (min-max)``."""
        row = self.worst_run.summary_row()
        cols = {"lost": "lost", "dup": "duplicates", "incorrect": "incorrect", "reliability": "reliability",
                "downtime_s": "downtime", "recovery_s": "recovery_time", "failure_cost_s": "failure_cost",
                "p99_latency_s": "latency.p99", "reliable_tput": "reliable_throughput", "sent": "sent"}
        for col, m in cols.items():
            lo, hi = self.spread(m)
            med = self.median(m)
            row[col] = keys.fmt(med) if lo == hi else f"{keys.fmt(med)} ({keys.fmt(lo)}-{keys.fmt(hi)})"
        row["delivered"] = self.guarantee_delivered
        row["repeat"] = len(self.runs)
        return row

    def to_dict(self) -> dict[str, Any]:
        """JSON: the medians at the top level (the same keys as one run's JSON, so a gate reads
        ``latency.p99`` either way), ``spread`` per headline metric, and every run in ``runs``."""
        lat = self._latency("median").to_dict()
        med = {m: keys.json_number(self.median(m)) for m in METRICS}
        rt = self.median("recovery_time")
        return {
            "schema_version": SCHEMA_VERSION,
            "repeat": len(self.runs),
            "guarantee": self.guarantee,
            "guarantee_delivered": self.guarantee_delivered,
            **med,
            "recovery_time": None if math.isinf(rt) else keys.json_number(rt),
            "recovered": not math.isinf(rt),
            "latency": lat,
            "spread": {m: [keys.json_number(v) for v in self.spread(m)] for m in keys.HEADLINE},
            "runs": [r.to_dict() for r in self.runs],
        }

    def __repr__(self) -> str:
        return f"RepeatedRun({len(self.runs)} runs, median downtime {keys.fmt(self.median('downtime'))}s)"


def _badness(r: ChaosRun) -> tuple[float, float, float, int]:
    """How bad a run is, for :attr:`RepeatedRun.worst_run`: its recovery time (not recovered: inf; not
    measured: below every measured one), downtime, failure cost, records wrong (unknown: 0)."""
    rt, cost, down = r.metrics.recovery_time, r.metrics.failure_cost, r.metrics.downtime
    return (-1.0 if rt is None else float(rt), -1.0 if down is None else down, -1.0 if cost is None else cost,
            sum(n or 0 for n in (r.lost, r.duplicates, r.incorrect)))


@dataclass(frozen=True)
class _View(_Aggregated):
    """The attributes ``check_sla`` reads, each the worst (or median) over a RepeatedRun's runs."""

    _rr: RepeatedRun
    _over: str  # a field here; a class attribute of RepeatedRun

    def _outcome(self) -> RepeatedRun:
        return self._rr


def _num(value: float | None) -> float:
    """``value``, or -1 when it is unknown (a run without it ranks below any run with it)."""
    return -1.0 if value is None else float(value)
