"""Pruning rules: schedules equivalent by construction are run once.

A rule looks at one step of a kind (what it takes down, its phase, its target) and says which other
step stands for it (the two would make the system do the same thing), or that its moment never comes
for this job (:class:`Never`), or nothing. A schedule with a folded step is not run: the schedule
with the standing-in step covers it. Each rule names the cells it prunes and why, in the coverage
report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.schedule import Step


class Never:
    """A rule's answer: this step's moment never comes for this job."""


NEVER = Never()

Fold = Callable[[KindInfo, Step, "bool | None"], "Step | Never | None"]


@dataclass(frozen=True)
class Rule:
    """A pruning rule: ``name``, ``why`` (one sentence for the report) and ``fold(kind, step, stateful)``."""

    name: str
    why: str
    fold: Fold


def _as(step: Step, phase: str) -> Step:
    return Step(step.kind, step.target, phase, step.batch)


def _no_state_store(kind: KindInfo, step: Step, stateful: bool | None) -> Step | Never | None:
    return NEVER if step.phase == "state_commit" and stateful is False else None


def _clean_restart(kind: KindInfo, step: Step, stateful: bool | None) -> Step | Never | None:
    if kind.takes_down == "driver" and step.phase == "offsets_logged":
        return _as(step, "between_batches")
    return None


def _idle_executor(kind: KindInfo, step: Step, stateful: bool | None) -> Step | Never | None:
    if kind.takes_down == "executor" and step.phase in ("offsets_logged", "output_visible_uncommitted"):
        return _as(step, "between_batches")
    return None


def _idle_broker(kind: KindInfo, step: Step, stateful: bool | None) -> Step | Never | None:
    if kind.takes_down == "broker" and step.phase in ("offsets_logged", "output_visible_uncommitted"):
        return _as(step, "between_batches")
    return None


def _interchangeable(kind: KindInfo, step: Step, stateful: bool | None) -> Step | Never | None:
    for group in kind.interchangeable:
        if step.target in group and step.target != group[0]:
            return Step(step.kind, group[0], step.phase, step.batch)
    return None


RULES: tuple[Rule, ...] = (
    Rule("no_state_store", "the job keeps no state (no stateful operator in its progress): a state store "
         "commit never happens, so a fault aimed at it could only miss", _no_state_store),
    Rule("clean_restart", "a driver killed after offsets/N and before any task ran is a clean restart, as one "
         "killed between batches: batch N's output does not exist yet, so re-running it from its logged "
         "offsets is its first run", _clean_restart),
    Rule("idle_executor", "an executor killed before the batch's tasks start, or after they all finished "
         "(output visible, commit pending: the commit is the driver's), has no task in flight: a task retry on "
         "its replacement, as when it is killed between batches", _idle_executor),
    Rule("idle_broker", "a partition leader killed before the batch reads (offsets logged) or after it has "
         "read and written (output visible) serves nothing of the job in flight: a leader election before "
         "the next fetch or send, as between batches", _idle_broker),
    Rule("interchangeable_targets", "instances that are the same by symmetry (workers with one executor "
         "each): hitting the second is the schedule of hitting the first", _interchangeable),
)
