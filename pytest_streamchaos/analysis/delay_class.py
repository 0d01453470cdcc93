"""What a network delay did to the system, in PGVal's terms ("How Reliable Are Streams?", §4).

A packet delay below the failure-detection timeout of its link (PD<TO) only slows the system; above
it (PD>TO) the system notices: it declares the peer dead, fails a task, moves a leader. Whether it
noticed is read from the run's timeline -- a system reaction (one of the metrics' system detection
kinds: a task failed, an executor removed, a query terminated...) between the delay's injection and
shortly after its heal -- and set beside the class the test stated, so a test can assert the effect it
claims (the ``delay_classes`` check, ``run.delay_outcomes``, one line each in ``describe()``).
Pure: timeline in, verdict out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_streamchaos.analysis.params import system_detection_kinds
from pytest_streamchaos.events import Failure, TimelineEvent
from pytest_streamchaos.facts import DelaySpec
from pytest_streamchaos.history import History, faults_of

__all__ = ["GRACE_S", "DelayOutcome", "DelaySpec", "delay_outcomes", "describe_outcome", "judge_delays"]

#: a reaction this long after the heal still counts (a timeout that expired at the heal is reported late)
GRACE_S = 2.0


@dataclass(frozen=True)
class DelayOutcome:
    """One delay that took effect: the timeout it was compared against, the class the test stated
    (``PD>TO`` / ``PD<TO``, None: not stated) and the one observed (``noticed`` with the first
    reaction as ``evidence``, else ``not noticed``)."""

    fault: str
    delay_ms: float
    timeout: str
    timeout_ms: float
    timeout_where: str
    stated: str | None
    observed: str
    evidence: str | None

    @property
    def as_stated(self) -> bool | None:
        """Whether the system did what the stated class says (None: no class stated)."""
        if self.stated is None:
            return None
        return (self.observed == "noticed") == (self.stated == "PD>TO")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        """One line: the delay against its timeout, what the test stated, what was seen."""
        stated = f"stated {self.stated}, " if self.stated else ""
        seen = f"the system noticed: {self.evidence}" if self.observed == "noticed" else \
            "the system did not notice (no task failure, lost executor or query end during it)"
        where = f" ({self.timeout_where})" if self.timeout_where else ""
        return (f"{self.fault}: {self.delay_ms:g} ms against {self.timeout} = {self.timeout_ms:g} ms{where}; "
                f"{stated}{seen}")


def judge_delays(history: History | Iterable[TimelineEvent], delays: Sequence[DelaySpec]) -> list[DelayOutcome]:
    """Per delay that took effect (its fault occurrence in ``history``, or in a bare timeline), its
    :class:`DelayOutcome`."""
    events = sorted(history.timeline if isinstance(history, History) else history, key=lambda e: e.t)
    faults = {f.label: f for f in (history.faults if isinstance(history, History) else faults_of(events))}
    out = []
    for d in delays:
        fault = faults.get(d.label)
        if fault is None or fault.injected_at is None:
            continue
        injected = fault.injected_at
        end = (fault.healed_at if fault.healed_at is not None else events[-1].t) + GRACE_S
        detected = system_detection_kinds()
        reaction = next((e for e in events if e.kind in detected and injected <= e.t <= end), None)
        out.append(DelayOutcome(
            fault=d.label, delay_ms=d.ms, timeout=d.timeout_setting, timeout_ms=d.timeout_s * 1000.0,
            timeout_where=d.timeout_where,
            stated=None if d.above_timeout is None else ("PD>TO" if d.above_timeout else "PD<TO"),
            observed="noticed" if reaction is not None else "not noticed",
            evidence=None if reaction is None else _evidence(reaction, injected)))
    return out


def delay_outcomes(timeline: Iterable[TimelineEvent], delays: Sequence[DelaySpec]) -> list[dict[str, Any]]:
    """:func:`judge_delays` in its JSON form (one dict per delay that took effect)."""
    return [o.to_dict() for o in judge_delays(timeline, delays)]


def _evidence(e: TimelineEvent, since: float) -> str:
    failure = Failure.of(e)
    what = failure.exception or failure.reason or ""
    return f"{e.kind} {e.target} {f'({what}) ' if what else ''}{e.t - since:+.1f}s after the injection"


def describe_outcome(o: DelayOutcome | Mapping[str, Any]) -> str:
    """One line: the delay against its timeout, what the test stated, what was seen."""
    return (o if isinstance(o, DelayOutcome) else DelayOutcome(**o)).describe()
