"""Shrinking a falsifying schedule, Hypothesis' way: try smaller neighbours, keep the first that still
fails, repeat until none does.

Smaller means, in this order of importance (:func:`size`): fewer faults, simpler targets (earlier in
their kind's list), simpler phases (:attr:`Phase.simplicity`), earlier batches. The neighbours of a
schedule (:func:`candidates`) are tried biggest cut first: drop a step; take a simpler target; a
simpler phase; an earlier anchor. A neighbour a pruning rule folds is replaced by the step that
stands for it (the same schedule by construction); one whose moment never comes is skipped. Whether
a neighbour still fails is the caller's to decide (the engine re-runs it to confirm).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pytest_streamchaos.search.schedule import PHASES, Schedule, Step
from pytest_streamchaos.search.space import Space

Size = tuple[int, int, int, int]


def size(schedule: Schedule, space: Space) -> Size:
    """(faults, target ranks, phase simplicity, batch anchors): smaller is simpler."""
    steps = schedule.steps

    def target_rank(s: Step) -> int:
        info = space.kinds.get(s.kind)
        return info.targets.index(s.target) if info is not None and s.target in info.targets else 0

    return (len(steps), sum(target_rank(s) for s in steps), sum(PHASES[s.phase].simplicity for s in steps),
            sum(s.batch for s in steps))


def _with(steps: tuple[Step, ...], i: int, step: Step) -> tuple[Step, ...]:
    return steps[:i] + (step,) + steps[i + 1:]


def _raw_candidates(schedule: Schedule, space: Space) -> Iterator[tuple[Step, ...]]:
    steps = schedule.steps
    if len(steps) > 1:
        for i in range(len(steps)):
            yield steps[:i] + steps[i + 1:]
    for i, s in enumerate(steps):
        info = space.kinds[s.kind]
        for t in info.targets[:info.targets.index(s.target)] if s.target in info.targets else ():
            yield _with(steps, i, Step(s.kind, t, s.phase, s.batch))
    for i, s in enumerate(steps):
        simpler = sorted((p for p in space.kinds[s.kind].phases
                          if PHASES[p].simplicity < PHASES[s.phase].simplicity), key=lambda p: PHASES[p].simplicity)
        for p in simpler:
            yield _with(steps, i, Step(s.kind, s.target, p, s.batch))
    if steps[0].batch > 0:  # the whole schedule earlier, keeping its gaps
        shift = steps[0].batch
        yield tuple(Step(s.kind, s.target, s.phase, s.batch - shift) for s in steps)
    for i, s in enumerate(steps):
        floor = steps[i - 1].batch if i else 0
        for b in sorted({floor, s.batch - 1}):
            if floor <= b < s.batch:
                yield _with(steps, i, Step(s.kind, s.target, s.phase, b))


def candidates(schedule: Schedule, space: Space) -> Iterator[Schedule]:
    """The neighbours of ``schedule`` strictly smaller than it, biggest cut first, each once."""
    seen: set[Schedule] = set()
    limit = size(schedule, space)
    for raw in _raw_candidates(schedule, space):
        canon = [space.canonical(s) if space.allowed(s) else None for s in raw]
        if not raw or any(c is None for c in canon):
            continue
        cand = Schedule(tuple(c for c in canon if c is not None))
        if cand not in seen and cand != schedule and size(cand, space) < limit:
            seen.add(cand)
            yield cand


def shrink(schedule: Schedule, space: Space, still_fails: Callable[[Schedule], bool | None]) -> list[Schedule]:
    """Shrink ``schedule`` to a local minimum. ``still_fails(candidate)``: True (it fails: keep it), False
    (it does not), None (no budget left: stop). Returns the accepted schedules in order, the last the
    smallest (empty when no neighbour failed)."""
    accepted: list[Schedule] = []
    current = schedule
    tried: set[Schedule] = {schedule}
    while True:
        for cand in candidates(current, space):
            if cand in tried:
                continue
            tried.add(cand)
            verdict = still_fails(cand)
            if verdict is None:
                return accepted
            if verdict:
                accepted.append(cand)
                current = cand
                break
        else:
            return accepted
