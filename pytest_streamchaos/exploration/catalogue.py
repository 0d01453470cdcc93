"""The fault kinds as the schedule search sees them, made from the fault registry, and a schedule's step
as the fault spec the scheduler fires.

A kind is explorable when it can be aimed at one of the search's micro-batch phases
(``FaultKind.moments`` that are :data:`~pytest_streamchaos.search.schedule.PHASES`); its targets are its
``search_targets`` (roles of ``index``, or :class:`~pytest_streamchaos.faults.kind.SearchTarget` entries that
carry an ``index``, params and the topic they serve), else the one target its mark names; what it takes down is its
``takes_down``. Nothing here is a hand list: a new kind that declares those is explorable.
"""

from __future__ import annotations

from pytest_streamchaos.faults.kind import SearchTarget, SomeKind
from pytest_streamchaos.faults.registry import KINDS
from pytest_streamchaos.faults.spec import AIMED_ARM_AFTER, FaultSpec
from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.schedule import PHASES, Schedule, Step

#: how long an explored step waits for its moment before it counts as missed (a phase that never comes
#: for this job -- a state commit in a stateless job -- costs this much of the run)
STEP_TIMEOUT_S = 30.0
#: what a step armed right after a step that stopped the driver waits on top: the restarted driver's
#: query must start again before any batch can come (16 s from the kill to the query's start and 26 s to
#: its first output on a quiet machine, at a 5 s trigger); within 30 s alone the next batch's moment was
#: often missed, and the schedule was retried instead of tested
AFTER_RESTART_S = 60.0


def default_target(kind: type[SomeKind]) -> str:
    """The one target of a kind without search roles: its mark's name without ``kill_`` (``driver``)."""
    return kind.name.removeprefix("kill_")


def info(kind: type[SomeKind]) -> KindInfo | None:
    """``kind`` as the search sees it, or None when it cannot be aimed at any micro-batch phase."""
    phases = tuple(m for m in kind.moments if m in PHASES)
    if not phases:
        return None
    targets = [SearchTarget.of(t) for t in kind.search_targets]
    if not targets:
        return KindInfo(kind.name, kind.takes_down, (default_target(kind),), phases)
    return KindInfo(kind.name, kind.takes_down, tuple(t.name for t in targets), phases,
                    serves=tuple((t.name, t.serves) for t in targets if t.serves is not None))


def search_target(kind: type[SomeKind], name: str) -> SearchTarget | None:
    """The declared search target ``name`` of ``kind`` (None: its one default target)."""
    return next((t for t in map(SearchTarget.of, kind.search_targets) if t.name == name), None)


def catalogue() -> dict[str, KindInfo]:
    """Every explorable fault kind of the registry, by name."""
    return {name: found for name, k in KINDS.items() if (found := info(k)) is not None}


def step_spec(step: Step, position: int, previous: Step | None) -> FaultSpec:
    """The fault spec of ``step``, the ``position``-th (from 0) of its schedule: aimed at its phase,
    its anchor counted from the step before it (which has fired when it arms), a kill healed at once
    (a driver restarted from its checkpoint, a worker or broker started again)."""
    kind = KINDS[step.kind]
    target = search_target(kind, step.target)  # its index, and params such as topic='output'
    index = target.index if target is not None and target.index in kind.roles else None
    restart = kind.default_restart_after
    if restart is None and "restart_after" in kind.args:
        restart = 0.0
    return FaultSpec(kind=step.kind, after=AIMED_ARM_AFTER, index=index, when=step.phase,
                     timeout=step_timeout(previous), restart_after=restart,
                     params={**(target.params if target is not None else {}), "step": position + 1},
                     anchor=step.batch - (previous.batch if previous is not None else 0))


def step_timeout(previous: Step | None) -> float:
    """How long a step waits for its moment: :data:`STEP_TIMEOUT_S`, and :data:`AFTER_RESTART_S` more when
    the step before it stopped the driver (a kill, a Connect server's loss, a checkpoint damage)."""
    if previous is None:
        return STEP_TIMEOUT_S
    kind = KINDS[previous.kind]
    stops = kind.takes_down == "driver" or kind.stops_driver(FaultSpec(kind=previous.kind, when=previous.phase))
    return STEP_TIMEOUT_S + (AFTER_RESTART_S if stops else 0.0)


def schedule_specs(schedule: Schedule) -> list[FaultSpec]:
    """The fault specs of every step of ``schedule``, in firing order."""
    steps = schedule.steps
    return [step_spec(s, i, steps[i - 1] if i else None) for i, s in enumerate(steps)]
