"""Headline metrics by name: which ones a report shows, which direction is worse, and how a dotted
name (``latency.p99``) is read from a run's JSON (:meth:`ChaosRun.to_dict`) or from a run object.

Shared by repeated runs (median / spread / worst), A/B comparisons and the baseline gates, so that
they all agree on what "worse" means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, SupportsFloat, cast

from .metrics import NotMeasured
from .spelling import did_you_mean

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

#: the groups of a run's JSON whose keys differ from run to run (the checks it made, what the harness knew)
OPEN_GROUPS = ("checks", "meta")

#: metric names (last dotted component) where a lower value is the worse one
_HIGHER_IS_BETTER = {"reliability", "reliable_throughput", "throughput"}


def higher_is_better(metric: str) -> bool:
    """True for reliability and throughputs; every time and count is better lower."""
    leaf = metric.rsplit(".", 1)[-1]
    return leaf in _HIGHER_IS_BETTER or leaf.endswith("throughput")


def worse(metric: str, before: float, after: float) -> float:
    """How much worse ``after`` is than ``before`` (positive: worse), in the metric's unit."""
    return before - after if higher_is_better(metric) else after - before


def number(value: SupportsFloat | str | None) -> float:
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
            raise KeyError(f"no metric {metric!r}: {part!r} is not a key of {where}{did_you_mean(part, known)} "
                           f"(keys: {', '.join(known)})")
        cur = cur[part]
    if metric == "recovery_time" and cur is None and d.get("recovered") is False:
        return math.inf
    if isinstance(cur, (Mapping, list)):
        raise KeyError(f"metric {metric!r} is not a number but a {type(cur).__name__}; name a key inside it")
    return number(cur)


def from_run(run: object, metric: str) -> float:
    """The value of dotted ``metric`` read as attributes of a run object (``latency.p99``)."""
    cur = run
    for i, part in enumerate(metric.split(".")):
        try:
            cur = getattr(cur, part)
        except AttributeError:
            where = ".".join(metric.split(".")[:i]) or "a run"
            known = sorted(n for n in dir(cur) if not n.startswith("_"))
            hint = did_you_mean(part, HEADLINE if i == 0 else known)
            raise KeyError(f"no metric {metric!r}: {where} has no {part!r}{hint}; the headline metrics: "
                           f"{', '.join(HEADLINE)}") from None
    if cur is None or isinstance(cur, NotMeasured):
        return math.nan  # not measured
    return float(cast(SupportsFloat, cur))  # NOT_RECOVERED -> inf


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


def json_number(x: float) -> float | str | None:
    """A float for JSON: NaN -> None, +-inf -> "inf" / "-inf" (JSON has neither)."""
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def metric_refusal(metric: str, sample: Mapping[str, Any]) -> str | None:
    """Why dotted ``metric`` cannot name a number of a run's JSON, judged on ``sample`` (one run's JSON), in one
    line with the did-you-mean; None when it names one there, or cannot be judged (a group this sample run does
    not have, such as a reference comparison's)."""
    cur: Any = sample
    parts = metric.split(".")
    for i, part in enumerate(parts):
        where = ".".join(parts[:i]) or "a run's JSON"
        if cur is None:
            return None
        if not isinstance(cur, Mapping):
            return f"no metric {metric!r}: {where} is a value, not a group of metrics"
        if part not in cur:
            if parts[0] in OPEN_GROUPS and i > 0:
                return None  # the checks a run made, its meta: other runs have other keys there
            known = sorted(k for k, v in cur.items() if not isinstance(v, list))
            return (f"no metric {metric!r}: {part!r} is not a key of {where}{did_you_mean(part, known)} "
                    f"(keys: {', '.join(known)})")
        cur = cur[part]
    if isinstance(cur, Mapping | list):
        inside = ", ".join(sorted(cur)) if isinstance(cur, Mapping) else "a list"
        return f"metric {metric!r} is a group, not a number; name a key inside it ({inside})"
    if isinstance(cur, str) and cur not in ("inf", "-inf"):
        return f"metric {metric!r} is not a number (a run says {cur!r} there)"
    return None
