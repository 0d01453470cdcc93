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


@dataclass(frozen=True)
class Traits:
    """What the search knows of the job (None: not known yet, the rule keeps its cells): whether it
    keeps state, whether its output is a Kafka topic of the run; ``never_comes``: the phases inside the
    tasks that a run showed this job does not have."""

    stateful: bool | None = None
    kafka_output: bool | None = None
    never_comes: frozenset[str] = frozenset()


Fold = Callable[[KindInfo, Step, Traits], "Step | Never | None"]


@dataclass(frozen=True)
class Rule:
    """A pruning rule: ``name``, ``why`` (one sentence for the report) and ``fold(kind, step, traits)``."""

    name: str
    why: str
    fold: Fold


def _as(step: Step, phase: str) -> Step:
    return Step(step.kind, step.target, phase, step.batch)


def _no_state_store(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    return NEVER if step.phase == "state_commit" and traits.stateful is False else None


def _no_kafka_output(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    return NEVER if kind.served_by(step.target) == "output" and traits.kafka_output is False else None


def _never_came(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    return NEVER if step.phase in traits.never_comes else None


def _clean_restart(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    if kind.takes_down == "driver" and step.phase == "offsets_logged":
        return _as(step, "between_batches")
    return None


def _idle_executor(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    if kind.takes_down == "executor" and step.phase in ("offsets_logged", "output_visible_uncommitted"):
        return _as(step, "between_batches")
    return None


#: the phases where a partition leader serves nothing of the job in flight, by what the job does through
#: it (docs/explore.md, "The broker phases"); a leader the kind says nothing of: both
IDLE_LEADER = {"input": ("output_visible_uncommitted",), "output": ("offsets_logged",),
               None: ("offsets_logged", "output_visible_uncommitted")}


def _idle_broker(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    if kind.takes_down == "broker" and step.phase in IDLE_LEADER[kind.served_by(step.target)]:
        return _as(step, "between_batches")
    return None


def _interchangeable(kind: KindInfo, step: Step, traits: Traits) -> Step | Never | None:
    for group in kind.interchangeable:
        if step.target in group and step.target != group[0]:
            return Step(step.kind, group[0], step.phase, step.batch)
    return None


RULES: tuple[Rule, ...] = (
    Rule("no_state_store", "the job keeps no state (no stateful operator in its progress): a state store "
         "commit never happens, so a fault aimed at it could only miss", _no_state_store),
    Rule("no_kafka_output", "the job's output is not a Kafka topic of the run: there is no output partition "
         "whose leader a fault could aim at", _no_kafka_output),
    Rule("moment_never_came", "a run showed the job has no such moment: the step aimed there never fired "
         "while the job ran batch after batch (a stateless Kafka-to-Kafka job's tasks write no file, so none "
         "of them can be held while it runs), so a fault aimed at it could only miss", _never_came),
    Rule("clean_restart", "a driver killed after offsets/N and before any task ran is a clean restart, as one "
         "killed between batches: batch N's output does not exist yet, so re-running it from its logged "
         "offsets is its first run", _clean_restart),
    Rule("idle_executor", "an executor killed before the batch's tasks start, or after they all finished "
         "(output visible, commit pending: the commit is the driver's), has no task in flight: a task retry on "
         "its replacement, as when it is killed between batches", _idle_executor),
    Rule("idle_broker", "a partition leader with nothing of the job in flight -- the input's once the batch "
         "has read everything (output visible), the output's before the batch sends (offsets logged: planning "
         "a batch never touches the output) -- is a leader election before the next fetch or send, as between "
         "batches", _idle_broker),
    Rule("interchangeable_targets", "instances that are the same by symmetry (workers with one executor "
         "each): hitting the second is the schedule of hitting the first", _interchangeable),
)
