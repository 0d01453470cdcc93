"""The search: run schedules in order until one falsifies the property, confirm it, shrink it.

:func:`explore` drives an abstract ``run_schedule(schedule) -> Outcome`` (the plugin's runs the test
body on the warm stack with that schedule; a unit test's is a synthetic system with a planted bug)::

    report = explore(Space(["kill_driver", "kill_executor"]), run_schedule, budget=10)
    if report.found:
        print(report.found.words())        # the minimal schedule, where each fault landed

- ``budget`` bounds the exploring runs; a run whose aim missed uses budget but covers nothing, and
  its schedule is tried again once (``retry_missed``).
- A falsifying run is confirmed by running its schedule again: a violation that does not come back
  is :class:`Flaky`, reported, and the search goes on.
- A confirmed violation is shrunk (:mod:`.shrink`); each smaller schedule is accepted only when it
  fails twice (its run and a re-run), at most ``shrink_budget`` runs in all. Confirming and
  shrinking do not use ``budget``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.search.coverage import Coverage
from pytest_streamchaos.search.schedule import Outcome, Schedule
from pytest_streamchaos.search.shrink import shrink
from pytest_streamchaos.search.space import Space

RunSchedule = Callable[[Schedule], Outcome]


@dataclass(frozen=True)
class RunRecord:
    """One run the search made: its schedule, why (``explore``, ``retry``, ``confirm``, ``shrink``,
    ``replay``) and what it gave."""

    schedule: Schedule
    purpose: str
    outcome: Outcome


@dataclass(frozen=True)
class Finding:
    """A confirmed violation: ``schedule`` the smallest schedule that still fails (confirmed), ``outcome``
    its failing run; ``original`` the first falsifying schedule; ``path`` the accepted shrinks."""

    schedule: Schedule
    outcome: Outcome
    original: Schedule
    path: tuple[Schedule, ...] = ()

    def words(self) -> str:
        return self.schedule.words(self.outcome.landed)


@dataclass(frozen=True)
class Flaky:
    """A falsifying run whose schedule did not fail again (``passed`` the run that did not), or could not
    be landed again to tell (``passed`` None)."""

    schedule: Schedule
    failed: Outcome
    passed: Outcome | None

    def words(self) -> str:
        again = "passed when re-run" if self.passed is not None else "its aims missed on every re-run"
        return f"{self.schedule.words(self.failed.landed)}: failed once, {again} (flaky, not found)"


@dataclass
class Report:
    """What a search found and covered."""

    budget: int
    coverage: Coverage
    found: Finding | None = None
    flaky: list[Flaky] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    #: exploring runs (``explore`` and ``retry``) up to and including the first falsifying one, or None
    first_violation_at: int | None = None

    @property
    def passed(self) -> bool:
        return self.found is None

    def runs_for(self, purpose: str) -> int:
        return sum(r.purpose == purpose for r in self.runs)

    def summary(self) -> list[str]:
        """The lines a terminal summary shows."""
        lines = []
        if self.found is not None:
            lines.append(f"falsified by: {self.found.words()}")
            lines.append(f"  {self.found.outcome.message}".rstrip())
            if self.found.original != self.found.schedule:
                lines.append(f"  shrunk from: {self.found.original.words()}")
        lines += [f"flaky: {f.words()}" for f in self.flaky]
        lines.append(f"coverage: {self.coverage.summary()}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        def sched(s: Schedule) -> list[dict[str, Any]]:
            return [{"kind": x.kind, "target": x.target, "phase": x.phase, "batch": x.batch} for x in s.steps]

        found = None if self.found is None else {
            "schedule": sched(self.found.schedule), "words": self.found.words(),
            "original": sched(self.found.original), "message": self.found.outcome.message}
        return {"budget": self.budget, "passed": self.passed, "found": found,
                "first_violation_at": self.first_violation_at,
                "flaky": [{"schedule": sched(f.schedule), "words": f.words()} for f in self.flaky],
                "coverage": self.coverage.to_dict(),
                "runs": [{"purpose": r.purpose, "schedule": sched(r.schedule), "falsified": r.outcome.falsified,
                          "hit": r.outcome.all_hit(r.schedule), "error": r.outcome.error,
                          "landed": [{"hit": x.hit, "batch": x.batch, "phase": x.phase} for x in r.outcome.landed],
                          "seconds": round(r.outcome.seconds, 3)} for r in self.runs]}


class Explorer:
    """One search over ``space`` with ``run_schedule`` (see the module docstring for the knobs);
    :meth:`search` runs it and returns the :class:`Report`. ``schedules`` replaces the space's own
    order (a replay, a benchmark's baseline)."""

    def __init__(self, space: Space, run_schedule: RunSchedule, *, budget: int, max_faults: int = 3,
                 retry_missed: int = 1, confirm_attempts: int = 3, shrink_budget: int = 12,
                 schedules: Iterable[Schedule] | None = None) -> None:
        if not isinstance(budget, int) or budget < 1:
            raise ValueError(f"explore: budget={budget!r}; give the number of schedules to run, an int >= 1")
        self.space = space
        self.run_schedule = run_schedule
        self.budget = budget
        self.retry_missed = retry_missed
        self.confirm_attempts = confirm_attempts
        self.shrink_left = shrink_budget
        self.order = iter(schedules) if schedules is not None else space.schedules(max_faults)
        why = {r.name: r.why for r in space.rules}
        self.report = Report(budget, Coverage(space.cells(), space.pruned_cells(), why))
        self._failures: dict[Schedule, Outcome] = {}

    def _run(self, schedule: Schedule, purpose: str) -> Outcome:
        out = self.run_schedule(schedule)
        self.report.runs.append(RunRecord(schedule, purpose, out))
        self.report.coverage.record(schedule, out)
        return out

    def search(self) -> Report:
        """Explore until a confirmed violation, the budget's end, or the end of the space."""
        retries: dict[Schedule, int] = {}
        pending: list[Schedule] = []
        explored = 0
        while explored < self.budget:
            if pending:
                schedule, purpose = pending.pop(0), "retry"
            else:
                nxt = next(self.order, None)
                if nxt is None:
                    break
                schedule, purpose = nxt, "explore"
            if any(self.space.canonical(s) is None for s in schedule.steps):
                continue  # its moment never comes for this job, as a run has shown since (no_kafka_output)
            out = self._run(schedule, purpose)
            explored += 1
            if out.error is not None:
                continue
            if not out.all_hit(schedule):  # not run: it tested another schedule than this one
                if retries.get(schedule, 0) < self.retry_missed:
                    retries[schedule] = retries.get(schedule, 0) + 1
                    pending.append(schedule)
                continue
            if out.falsified:
                if self.report.first_violation_at is None:
                    self.report.first_violation_at = explored
                if self._confirm_and_shrink(schedule, out):
                    break
        return self.report

    def _landed_again(self, schedule: Schedule) -> Outcome | None:
        """Re-run ``schedule`` until its aims all land (at most ``confirm_attempts`` runs): that run's
        outcome, or None."""
        for _ in range(self.confirm_attempts):
            out = self._run(schedule, "confirm")
            if out.error is None and out.all_hit(schedule):
                return out
        return None

    def _confirm_and_shrink(self, schedule: Schedule, failed: Outcome) -> bool:
        """Confirm a falsifying run; shrink it when it comes back. Whether the search is over."""
        again = self._landed_again(schedule)
        if again is None or not again.falsified:
            self.report.flaky.append(Flaky(schedule, failed, again))
            return False
        path = shrink(schedule, self.space, self._still_fails)
        minimal = path[-1] if path else schedule
        self.report.found = Finding(minimal, self._failures.get(minimal, again), schedule, tuple(path))
        return True

    def _still_fails(self, candidate: Schedule) -> bool | None:
        """A shrink candidate fails when its run and a re-run both fail with every aim hit; None once
        the shrink budget is spent."""
        for attempt in range(2):
            if self.shrink_left <= 0:
                return None
            self.shrink_left -= 1
            out = self._run(candidate, "shrink" if attempt == 0 else "confirm")
            if out.error is not None or not out.all_hit(candidate) or not out.falsified:
                return False
        self._failures[candidate] = out
        return True


def explore(space: Space, run_schedule: RunSchedule, *, budget: int, **knobs: Any) -> Report:
    """Search ``space`` with ``run_schedule`` for at most ``budget`` exploring runs (:class:`Explorer`'s
    knobs: ``max_faults``, ``retry_missed``, ``confirm_attempts``, ``shrink_budget``, ``schedules``)."""
    return Explorer(space, run_schedule, budget=budget, **knobs).search()


def replay(schedule: Schedule, run_schedule: RunSchedule, *, attempts: int = 3) -> Report:
    """Run one schedule (a replay token's) until its aims land, at most ``attempts`` times; ``found``
    is set when that run falsified the property (no confirmation, no shrinking: the user asked for
    exactly this schedule)."""
    report = Report(attempts, Coverage([], {}, {}))
    for _ in range(attempts):
        out = run_schedule(schedule)
        report.runs.append(RunRecord(schedule, "replay", out))
        report.coverage.record(schedule, out)
        if out.error is None and out.all_hit(schedule):
            if out.falsified:
                report.found = Finding(schedule, out, schedule)
                report.first_violation_at = len(report.runs)
            break
    return report
