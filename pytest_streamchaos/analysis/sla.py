"""Recovery SLAs: bounds on a run's metrics, checked all at once so a failure lists every violation.

``check_sla(run, max_downtime=15, guarantee="exactly-once")`` returns the violated bounds;
``SLAViolation`` (an ``AssertionError``) renders them with the measured values and the fault
timeline. ``run`` is anything with the attributes of
:class:`~pytest_streamchaos.analysis.run_view.Bounded` (``downtime``, ``recovery_time``, ``failure_cost``,
``reliability``, ``lost``, ``duplicates``, ``incorrect``, ``guarantee_delivered``; ``unavailable`` when it has
one): a ``ChaosRun``, a ``RepeatedRun`` or its view over the worst (or median) of its runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from ..records import TimelineEvent
from .guarantee import GUARANTEES, SATISFIES
from .run_view import Bounded
from .sentinels import NotMeasured, RecoveryTime
from .spelling import did_you_mean

#: what a repeated run's SLA is judged on: its worst run's values, or the medians over its runs
OVER = ("worst", "median")


def check_over(over: str) -> None:
    """Fail now, naming the choices, when ``over`` is not one of :data:`OVER`."""
    if over not in OVER:
        raise ValueError(f"over={over!r}: use one of {OVER}")


@dataclass(frozen=True)
class SLA:
    """Bounds on a run; ``None`` = not checked. Times in seconds."""

    max_downtime: float | None = None
    max_recovery: float | None = None
    max_failure_cost: float | None = None
    min_reliability: float | None = None
    max_lost: int | None = None
    max_duplicates: int | None = None
    max_incorrect: int | None = None
    #: the guarantee the run must deliver (a stronger delivered guarantee satisfies it)
    guarantee: str | None = None

    def __post_init__(self) -> None:
        if self.guarantee is not None and self.guarantee not in GUARANTEES:
            raise ValueError(f"SLA guarantee {self.guarantee!r} unknown{did_you_mean(self.guarantee, GUARANTEES)}; "
                             f"use one of {', '.join(GUARANTEES)}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "guarantee" or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"SLA bound {f.name}={value!r} must be a number >= 0 (or None: not checked)")
            if f.name == "min_reliability" and value > 1:
                raise ValueError(f"SLA bound min_reliability={value!r} is a fraction: 0 to 1 (e.g. 0.999)")

    def merged(self, **bounds: object) -> SLA:
        """A copy with ``bounds`` overriding (an unknown name raises TypeError with the did-you-mean and the
        valid ones)."""
        names = [f.name for f in fields(self)]
        for name in bounds:
            if name not in names:
                raise TypeError(f"unknown SLA bound {name!r}{did_you_mean(name, names)}; valid: {', '.join(names)}")
        return SLA(**{**{n: getattr(self, n) for n in names}, **bounds})



@dataclass(frozen=True)
class Violation:
    """One violated bound: the metric, what was measured, the bound and how they compare."""

    metric: str
    #: a count, a time (``NOT_RECOVERED`` too), a reliability, the guarantee delivered; None: not measured
    measured: float | RecoveryTime | str | None
    #: the bound's number, or the declared guarantee
    bound: float | str
    op: str
    #: why the metric could not be measured (``measured`` is then None)
    reason: str = ""

    def __str__(self) -> str:
        if self.op == "delivers":
            why = f" ({self.reason})" if self.reason else ""
            return f"guarantee: delivered {self.measured}, declared {self.bound}{why}"
        if self.measured is None:
            return (f"{self.metric} not measured, bound {self.metric} {self.op} {_fmt(self.bound)} cannot hold: "
                    f"{self.reason or 'no value'}")
        return f"{self.metric} = {_fmt(self.measured)}, bound {self.metric} {self.op} {_fmt(self.bound)}"


def _fmt(x: object) -> str:
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return f"{x:.3f}".rstrip("0").rstrip(".") if x != int(x) else f"{x:.1f}"
    return str(x)


def _le(measured: RecoveryTime | NotMeasured | None, bound: float) -> bool:
    """Whether ``measured`` is within ``bound`` (not measured, unknown or NaN: not within it)."""
    if measured is None or isinstance(measured, NotMeasured):
        return False
    return bool(measured <= bound) and not (isinstance(measured, float) and math.isnan(measured))


def check_sla(result: Bounded, sla: SLA | None = None, **bounds: object) -> list[Violation]:
    """Every bound of ``sla`` (plus keyword ``bounds``) that ``result`` violates, in a fixed order."""
    s = (sla or SLA()).merged(**bounds)
    out: list[Violation] = []
    uppers: list[tuple[str, float | None, RecoveryTime | NotMeasured | None]] = [
        ("downtime", s.max_downtime, result.downtime),
        ("recovery_time", s.max_recovery, result.recovery_time),
        ("failure_cost", s.max_failure_cost, result.failure_cost),
        ("lost", s.max_lost, result.lost),
        ("duplicates", s.max_duplicates, result.duplicates),
        ("incorrect", s.max_incorrect, result.incorrect),
    ]
    # a metric that could not be measured fails its bound, naming why (an unknown is not a pass)
    reasons: Mapping[str, str] = getattr(result, "unavailable", None) or {}  # a run of the test's own may have none
    for name, bound, value in uppers:
        if bound is not None and not _le(value, bound):
            measured = None if isinstance(value, NotMeasured) else value
            why = reasons.get(name, "") if measured is None else ""
            out.append(Violation(name, measured, bound, "<=", why))
    if s.min_reliability is not None:
        rel = result.reliability
        if rel is None or not (rel >= s.min_reliability):
            out.append(Violation("reliability", rel, s.min_reliability, ">=", reasons.get("reliability", "")))
    if s.guarantee is not None:
        delivered = result.guarantee_delivered
        if s.guarantee not in SATISFIES.get(delivered, set()):
            why = reasons.get("guarantee", "")
            out.append(Violation("guarantee", delivered, s.guarantee, "delivers", why))
    return out


def _detail_value(v: object) -> str:
    """A timeline detail as one line: a float rounded, a multi-line value (a JVM stack trace in a
    ``query_terminated``) cut to its first line (the whole value stays in the JSON report)."""
    if isinstance(v, float):
        return _fmt(v)
    text = str(v)
    first, _, rest = text.partition("\n")
    return f"{first.rstrip()} [...]" if rest.strip() else first


def render_timeline(events: Iterable[TimelineEvent], t0: float | None = None) -> list[str]:
    """One line per event: ``+12.3s  fault_injected  worker-1  {detail}``, relative to ``t0``; events
    before ``t0`` (the warm-up, before steady state) read ``-18.1s``."""
    evs = sorted(events, key=lambda e: e.t)
    if not evs:
        return ["  (no events)"]
    base = evs[0].t if t0 is None else t0
    lines = []
    for e in evs:
        detail = " ".join(f"{k}={_detail_value(v)}" for k, v in e.detail.items())
        when = f"{e.t - base:+.1f}s"  # a sign, not "+-18.126s": tenths are what a reader compares
        lines.append(f"  {when:>8}  {e.kind:<26} {e.target}  {detail}".rstrip())
    return lines


class SLAViolation(AssertionError):
    """Raised by ``ChaosRun.assert_sla``: lists every violated bound and the fault timeline."""

    def __init__(self, violations: list[Violation], timeline: Iterable[TimelineEvent] = (), t0: float | None = None,
                 context: str = "") -> None:
        self.violations = list(violations)
        self.timeline = list(timeline)
        lines = [f"{len(self.violations)} SLA bound(s) violated:"]
        lines += [f"  - {v}" for v in self.violations]
        if context:
            lines.append(context)
        lines.append("timeline (seconds from run start):")
        lines += render_timeline(self.timeline, t0)
        super().__init__("\n".join(lines))
