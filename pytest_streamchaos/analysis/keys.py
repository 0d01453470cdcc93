"""Headline metrics by name: which ones a report shows, which direction is worse, and how a dotted
name (``latency.p99``) is read from a run's JSON (:meth:`ChaosRun.to_dict`) or from a run object.

Shared by repeated runs (median / spread / worst), A/B comparisons and the baseline gates, so that
they all agree on what "worse" means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .metrics import NotMeasured

#: the metrics reports compare, in display order (dotted: nested keys of the run's JSON)
HEADLINE: tuple[str, ...] = (
    "lost",
    "duplicates",
    "reliability",
    "downtime",
    "recovery_time",
    "failure_cost",
    "latency.p50",
    "latency.p99",
    "reliable_throughput",
)

#: metric names (last dotted component) where a lower value is the worse one
_HIGHER_IS_BETTER = {"reliability", "reliable_throughput", "throughput"}


def higher_is_better(metric: str) -> bool:
    """True for reliability and throughputs; every time and count is better lower."""
    leaf = metric.rsplit(".", 1)[-1]
    return leaf in _HIGHER_IS_BETTER or leaf.endswith("throughput")


def worse(metric: str, before: float, after: float) -> float:
    """How much worse ``after`` is than ``before`` (positive: worse), in the metric's unit."""
    return before - after if higher_is_better(metric) else after - before


def number(value: Any) -> float:
    """A JSON metric value as a float: None (not measured) -> NaN, "inf" -> inf, NOT_RECOVERED -> inf."""
    if value is None:
        return math.nan
    if isinstance(value, str):
        return float(value)  # "inf" / "-inf", as _num in metrics.py writes them
    return float(value)


def from_dict(d: Mapping[str, Any], metric: str) -> float:
    """The value of dotted ``metric`` in a run's JSON; KeyError (naming the known keys) if absent.

    ``recovery_time`` is null in the JSON when the run did not recover: read as inf so that it
    compares worse than every number (as ``NOT_RECOVERED`` does)."""
    cur: Any = d
    path = metric.split(".")
    for i, part in enumerate(path):
        if not isinstance(cur, Mapping) or part not in cur:
            where = ".".join(path[:i]) or "the run's JSON"
            known = sorted(k for k, v in cur.items() if not isinstance(v, list)) if isinstance(cur, Mapping) else []
            raise KeyError(f"no metric {metric!r}: {part!r} is not a key of {where} (keys: {', '.join(known)})")
        cur = cur[part]
    if metric == "recovery_time" and cur is None and d.get("recovered") is False:
        return math.inf
    if isinstance(cur, (Mapping, list)):
        raise KeyError(f"metric {metric!r} is not a number but a {type(cur).__name__}; name a key inside it")
    return number(cur)


def from_run(run: Any, metric: str) -> float:
    """The value of dotted ``metric`` read as attributes of a run object (``latency.p99``)."""
    cur = run
    for part in metric.split("."):
        cur = getattr(cur, part)
    if cur is None or isinstance(cur, NotMeasured):
        return math.nan  # not measured
    return float(cur)  # NOT_RECOVERED -> inf


def fmt(x: float, infinite: str = "not recovered") -> str:
    """A metric value for a report: 4 significant digits, ``n/a`` for NaN, ``infinite`` for +inf
    (a recovery time that never came)."""
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return infinite if x > 0 else "-inf"
    return f"{x:.4g}"


def fmt_signed(x: float) -> str:
    """A change for a report: ``+1.5``, ``-0.2``, ``±0``, ``n/a``, ``+inf``."""
    if math.isnan(x):
        return "n/a"
    if x == 0:
        return "±0"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:+.4g}"


def json_number(x: float) -> Any:
    """A float for JSON: NaN -> None, +-inf -> "inf" / "-inf" (JSON has neither)."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x
