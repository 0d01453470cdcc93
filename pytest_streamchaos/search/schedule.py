"""Schedules and what running one gives back: the search's vocabulary.

A :class:`Step` is one fault aimed at a moment: a fault kind, its target, a micro-batch phase
(:data:`PHASES`) and a batch anchor. The anchor counts micro-batches, never seconds: anchor ``k`` is
the first batch, ``k`` batches after the batch that was planned when the schedule armed, in which
the phase comes (a step fires only after the step before it fired, so two steps with the same
anchor and phase on the driver mean "and again during its replay"). A :class:`Schedule` is a tuple
of steps in firing order. Running one gives an :class:`Outcome`: whether the test's property failed,
and for each step where its fault landed (:class:`Landed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar


@dataclass(frozen=True)
class Phase:
    """A moment in the micro-batch cycle a fault can be aimed at. ``priority``: the search tries
    low numbers first (the phases where crash-recovery bugs live); ``simplicity``: shrinking moves a
    step toward low numbers (the phase a reader grasps soonest); ``in_tasks``: a moment inside the batch's
    tasks, which a job may not have at all (a stateless Kafka-to-Kafka job's tasks write no file: nothing
    of theirs can be held), where the driver's phases come in every batch of every job."""

    name: str
    words: str
    priority: int
    simplicity: int
    in_tasks: bool = False


#: the phases, by name. Broker faults use the same phases: their targets say which partition's
#: leader (the job's input or output), the phase when ("tasks_running": while the job reads or writes it)
PHASES: dict[str, Phase] = {p.name: p for p in (
    Phase("between_batches", "between batches (commits/N written, N+1 not planned)", 4, 0),
    Phase("offsets_logged", "offsets logged (offsets/N written, no task yet)", 3, 1),
    Phase("tasks_running", "tasks running (batch N's tasks in flight)", 2, 2, in_tasks=True),
    Phase("output_visible_uncommitted", "output visible, not committed (batch N's sink done, commits/N "
          "not written)", 0, 3),
    Phase("state_commit", "state store commit (a task renaming its store's next version: N.delta, N.changelog, N.zip)",
          1, 4, in_tasks=True),
)}


def phase(name: str) -> Phase:
    """The phase called ``name``; ``ValueError`` naming the known ones."""
    try:
        return PHASES[name]
    except KeyError:
        raise ValueError(f"unknown phase {name!r}; the phases are {', '.join(PHASES)}") from None


@dataclass(frozen=True, order=True)
class Step:
    """One fault of a schedule: ``kind`` (``kill_driver``), ``target`` (``driver``, ``worker-0``,
    ``input_leader``), ``phase`` (a :data:`PHASES` name) and ``batch`` (the anchor, >= 0)."""

    kind: str
    target: str
    phase: str
    batch: int = 0

    def __post_init__(self) -> None:
        phase(self.phase)
        if self.batch < 0:
            raise ValueError(f"a batch anchor counts batches after arming, >= 0 (got {self.batch})")

    @property
    def cell(self) -> tuple[str, str]:
        """The (fault kind, phase) cell coverage counts."""
        return self.kind, self.phase

    def words(self, landed: Landed | None = None) -> str:
        """``kill_driver at batch +0, phase output_visible_uncommitted``; with where it landed:
        ``kill_driver at batch 7 (+0), phase output_visible_uncommitted (hit)``."""
        target = "" if self.target == self.kind.removeprefix("kill_") else f" on {self.target}"
        if landed is None or landed.batch is None:
            at = f"batch +{self.batch}"
        else:
            at = f"batch {landed.batch} (+{self.batch})"
        said = "" if landed is None else (" (hit)" if landed.hit else f" (missed: landed in {landed.phase or '?'})")
        return f"{self.kind}{target} at {at}, phase {self.phase}{said}"


@dataclass(frozen=True)
class Schedule:
    """The steps of one run, in firing order (anchors never decrease)."""

    steps: tuple[Step, ...]

    def __post_init__(self) -> None:
        if not self.steps:
            raise ValueError("a schedule has at least one step (the fault-free run is not a schedule)")
        anchors = [s.batch for s in self.steps]
        if anchors != sorted(anchors):
            raise ValueError(f"a schedule's batch anchors never decrease (got {anchors})")

    @classmethod
    def of(cls, *steps: Step) -> Schedule:
        return cls(tuple(steps))

    def __len__(self) -> int:
        return len(self.steps)

    def words(self, landed: tuple[Landed, ...] = ()) -> str:
        """The schedule in words, one step after the other (with where each landed, if given)."""
        marks = list(landed) + [None] * (len(self.steps) - len(landed))
        return "; then ".join(s.words(m) for s, m in zip(self.steps, marks, strict=False))


@dataclass(frozen=True)
class Landed:
    """Where one step's fault landed: ``hit`` when it fired in the phase it was aimed at; ``batch``
    the batch id it fired in; ``phase`` the phase it found (None: it never fired)."""

    hit: bool
    batch: int | None = None
    phase: str | None = None


#: what a run of a schedule made, for whoever ran it (the exploration: a ``ChaosRun``); the search never reads it
R = TypeVar("R")


@dataclass(frozen=True)
class Outcome(Generic[R]):
    """What one run of a schedule gave. ``falsified``: the test's property failed (its first line in
    ``message``). ``error``: the run could not give a verdict (the stack broke): neither a pass nor a
    failure. ``landed``: one :class:`Landed` per step. ``seconds``: the run's wall time. ``run``: what
    the run made (None: nothing), carried for the caller's reports. ``history``: the one history it shared
    (None: a fresh job)."""

    falsified: bool
    landed: tuple[Landed, ...] = ()
    message: str = ""
    error: str | None = None
    seconds: float = 0.0
    run: R | None = field(default=None, compare=False)
    #: the one history the run was a schedule of (runs with the same number shared one running job); None: a
    #: job of its own
    history: int | None = None

    @property
    def fired(self) -> bool:
        """Whether any step's fault fired (landed somewhere, in its phase or not)."""
        return any(x.phase is not None for x in self.landed)

    def all_hit(self, schedule: Schedule) -> bool:
        """Whether every step of ``schedule`` landed in its phase (a run with a missed aim counts as
        not run: it did not test the schedule it was given)."""
        return len(self.landed) == len(schedule.steps) and all(x.hit for x in self.landed)
