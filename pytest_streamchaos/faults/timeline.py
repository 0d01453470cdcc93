"""The fault timeline: when each fault fires and heals, and what actually happened.

:func:`plan` turns validated :class:`FaultSpec` objects into concrete occurrences on the run's clock
(offsets from steady state). It is pure so that schedules are unit-tested without a stack.
:class:`Recorder` keeps what actually happened, as timeline events.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pytest_streamchaos.events import Kind, StrEnum, TimelineEvent
from pytest_streamchaos.faults.spec import FaultSpec


@dataclass(frozen=True)
class PlannedFault:
    """One occurrence of a fault. ``at`` is seconds after steady state (None: aimed at a moment,
    fired when the moment is detected); ``heal_after`` is seconds after injection (None: not healed
    by the plugin during the run)."""

    spec: FaultSpec
    occurrence: int
    at: float | None
    heal_after: float | None

    @property
    def label(self) -> str:
        n = f"#{self.occurrence + 1}" if self.spec.times > 1 else ""
        return self.spec.label + n


class Recorder:
    """Thread-safe list of timeline events on the run clock (``time.time``): what the faults did, and
    what the system did in reaction."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._events: list[TimelineEvent] = []
        self._lock = threading.Lock()

    def record(self, kind: Kind | StrEnum, target: str = "", t: float | None = None, **detail: object) -> TimelineEvent:
        ev = TimelineEvent(self.clock() if t is None else t, kind, target, detail)
        with self._lock:
            self._events.append(ev)
        return ev

    def events(self) -> list[TimelineEvent]:
        with self._lock:
            return sorted(self._events, key=lambda e: e.t)


def plan(specs: list[FaultSpec]) -> list[PlannedFault]:
    """Expand recurrent faults and order all occurrences by time (aimed faults first: they arm at
    steady state + ``after`` and fire when their moment comes)."""
    out: list[PlannedFault] = []
    for spec in specs:
        heal = spec.duration if spec.duration is not None else spec.restart_after
        for k in range(spec.times):
            at = spec.after + (spec.every or 0.0) * k
            out.append(PlannedFault(spec, k, None if spec.when else at, heal))
    return sorted(out, key=lambda p: (p.at is not None, p.at if p.at is not None else p.spec.after))


def horizon(planned: list[PlannedFault]) -> float:
    """Seconds after steady state until the last planned fault has fired and healed."""
    end = 0.0
    for p in planned:
        # an aimed fault arms at ``after`` and fires when its moment comes (usually within a
        # micro-batch or two, sometimes 15 s later); the plan counts it from ``after``, and a run
        # without a duration extends its load once it knows the actual firing (:func:`load_end`)
        start = p.at if p.at is not None else p.spec.after
        end = max(end, start + (p.heal_after or 0.0))
    return end


#: load without faults when the test gives no ``duration``
DEFAULT_LOAD_S = 30.0
#: the most load after the last fault healed when the test gives no ``duration`` (the load ends sooner
#: once every fault's recovery is settled): Spark's recovery from a lost worker or driver (relaunch,
#: reschedule, catch-up) takes 10-20 s on a quiet machine and the recovery metric needs a 5 s hold in
#: band after it; on a busy CI machine a killed worker re-registered 11 s after its restart and its new
#: executor came 21 s after the kill, and 30 s was not enough to see the job back in band
RECOVERY_WINDOW_S = 60.0


def recovery_window(trigger_seconds: float = 1.0, least: float = 0.0) -> float:
    """The load a run without a ``duration`` keeps on after its last fault healed:
    ``max(RECOVERY_WINDOW_S, 10 triggers, least)`` (a slow trigger makes every phase of recovery slower;
    ``least``: what the run's fault kinds need, :attr:`FaultKind.least_recovery_window
    <pytest_streamchaos.faults.kind.FaultKind.least_recovery_window>`)."""
    return max(RECOVERY_WINDOW_S, 10 * trigger_seconds, least)


def load_seconds(planned: list[PlannedFault], duration: float | None,
                 trigger_seconds: float = 1.0, least_window: float = 0.0) -> tuple[float, str]:
    """How long the load lasts, and why (for the report).

    ``duration`` given: that, provided the fault timeline fits (else :class:`ValueError` naming both
    numbers). Not given: the timeline's :func:`horizon` plus a :func:`recovery_window`; without
    faults :data:`DEFAULT_LOAD_S`."""
    need = horizon(planned)
    if duration is not None:
        if need > duration:
            raise ValueError(f"the fault timeline needs {need:g}s after steady state (last fault fired and healed) "
                             f"but duration={duration:g}; raise duration or move the faults earlier")
        return float(duration), f"duration={duration:g}s given by the test"
    if not planned:
        return DEFAULT_LOAD_S, f"no duration given and no faults: the default {DEFAULT_LOAD_S:g}s"
    window = recovery_window(trigger_seconds, least_window)
    return need + window, (f"no duration given: the fault timeline ({need:g}s until the last fault fired and healed) "
                           f"+ a recovery window of {window:g}s")


def load_end(planned_until: float, window: float | None, last_heal_due: float | None, aim_slack: float,
             explored: bool = False) -> float:
    """When the load ends (an absolute time), asked again as the run goes on.

    ``window`` None (the test gave a ``duration``): at ``planned_until`` -- unless the run plays an
    explored schedule (``explored``) whose step still waits to fire: a step arms only once the one before
    it fired, and a driver killed by that one replays its batch only after its restart, which can come
    after the planned end; the load then goes on for at most ``aim_slack`` past the plan, so the schedule
    is tested rather than cut short (a step that never fired counts as a miss). Otherwise the plan counted
    each aimed fault as firing at its ``after``, and its moment can come later: the load lasts at
    least ``window`` after the schedule's actual last heal (``last_heal_due``, the scheduler's), and
    while an occurrence still waits to fire (``last_heal_due`` None) it goes on for at most
    ``aim_slack`` (the aimed faults' longest ``timeout``) past the plan."""
    if window is None:
        return planned_until + aim_slack if explored and last_heal_due is None else planned_until
    if last_heal_due is None:
        return planned_until + aim_slack
    return max(planned_until, last_heal_due + window)


def sequence_conflicts(specs: list[FaultSpec], permanent: Callable[[FaultSpec], bool] = lambda _: False) -> list[str]:
    """Why ``specs`` are not a sequence of faults each judged in its own window
    (``@pytest.mark.chaos(sequence=True)``): one line per fault that would fire before the one before it
    healed, naming both. An aimed fault (``when=``) counts from its ``after`` (it fires then or later); a fault
    never healed during the load (no ``duration`` / ``restart_after``, or ``permanent``) can only be the last."""
    occurrences = sorted(plan(list(specs)), key=lambda p: (p.at if p.at is not None else p.spec.after))
    out = []
    for prev, nxt in zip(occurrences, occurrences[1:], strict=False):
        start = prev.at if prev.at is not None else prev.spec.after
        fires = nxt.at if nxt.at is not None else nxt.spec.after
        if prev.heal_after is None or permanent(prev.spec):
            why = "is never healed during the load" if not permanent(prev.spec) else "is permanent (nothing heals it)"
            out.append(f"{nxt.label} fires at {fires:g}s, after {prev.label}, which {why}: in a sequence each "
                       f"fault fires once the one before it healed -- give {prev.label} a duration= or "
                       "restart_after=, or make it the last")
        elif fires < start + prev.heal_after:
            healed = start + prev.heal_after
            out.append(f"{nxt.label} would fire at {fires:g}s, before {prev.label} healed (at {healed:g}s): in a "
                       f"sequence each fault fires once the one before it healed -- give it after={healed:g} or more")
    return out
