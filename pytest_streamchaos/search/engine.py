"""The search: a control run, then schedules in order until one falsifies the property; confirm it,
shrink it -- and pass only on evidence.

:func:`explore` drives an abstract ``run_schedule(schedule) -> Outcome`` (the plugin's runs the test
body on the warm stack with that schedule; a unit test's is a synthetic system with a planted bug)::

    report = explore(Space(["kill_driver", "kill_executor"]), run_schedule, budget=10)
    if report.found:
        print(report.found.words())        # the minimal schedule, where each fault landed

- A **control run** without faults comes first when ``control`` is given: a property that fails there
  fails with no fault at all, and a job that cannot run fails the search before it burns its budget.
- ``budget`` bounds the exploring runs (the space's own order, schedules remembered from earlier
  sessions, retries); a run whose aim missed uses budget but gives no verdict, and its schedule is tried
  again once (``retry_missed``).
- A falsifying run is confirmed by running its schedule again -- alone (``alone``: on a fresh job, when the
  exploring runs share one running job) --: a violation that does not come back is :class:`Flaky` -- a bug
  that depends on timing or on what ran before it: it ends the search unless ``flaky_fails`` is off.
- A confirmed violation is shrunk (:mod:`.shrink`) with runs alone; each smaller schedule is accepted only
  when it fails twice (its run and a re-run), at most ``shrink_budget`` runs. Confirming and shrinking do
  not use ``budget``.
- ``max_seconds`` bounds the whole search, control, confirmation and shrinking included: no run starts
  that would end past it by the longest of the last runs.
- The search **passes only on evidence** (:attr:`Report.verdict`): at least ``min_verdicts`` distinct
  schedules ran with every aim landed and a verdict; fewer is *inconclusive*.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.search.coverage import Coverage
from pytest_streamchaos.search.schedule import Outcome, Schedule
from pytest_streamchaos.search.shrink import shrink
from pytest_streamchaos.search.space import Space

RunSchedule = Callable[[Schedule], Outcome]

#: why a search stopped (:attr:`Report.stop`), in words for the coverage line
STOPS = {
    "found": "a violation was found",
    "flaky": "a flaky violation",
    "budget": "the budget was spent",
    "time": "max_seconds was reached",
    "space": "every schedule of the space ran",
    "no_start": "a run failed before its first fault",
    "control": "the control run without faults failed",
}


@dataclass(frozen=True)
class RunRecord:
    """One run the search made: its schedule (None: the control run), why (``control``, ``memory``,
    ``explore``, ``retry``, ``confirm``, ``shrink``, ``replay``) and what it gave."""

    schedule: Schedule | None
    purpose: str
    outcome: Outcome


@dataclass(frozen=True)
class Finding:
    """A violation: ``schedule`` the smallest schedule that still fails, ``outcome`` its failing run;
    ``original`` the first falsifying schedule; ``path`` the accepted shrinks; ``confirmed`` False when
    the time ran out before it could be run again (it failed once, with every aim landed)."""

    schedule: Schedule
    outcome: Outcome
    original: Schedule
    path: tuple[Schedule, ...] = ()
    confirmed: bool = True

    def words(self) -> str:
        return self.schedule.words(self.outcome.landed)


@dataclass(frozen=True)
class Flaky:
    """A falsifying run whose schedule did not fail again (``passed`` the run that did not), or could not
    be landed again to tell (``passed`` None): a violation that depends on timing."""

    schedule: Schedule
    failed: Outcome
    passed: Outcome | None

    def words(self) -> str:
        again = "passed when re-run" if self.passed is not None else "its aims missed on every re-run"
        return f"{self.schedule.words(self.failed.landed)}: failed once, {again} (flaky)"


@dataclass(frozen=True)
class Limits:
    """How far a search may go: ``budget`` exploring runs, ``min_verdicts`` schedules that must give a
    verdict for a pass (None: half the budget, at least 1), ``max_seconds`` for the whole search (None: no
    limit), ``flaky_fails`` (a flaky violation ends the search and fails it), the largest schedule
    (``max_faults``), and the retries, confirmations and shrinks it may spend."""

    budget: int
    min_verdicts: int | None = None
    max_seconds: float | None = None
    flaky_fails: bool = True
    max_faults: int = 3
    retry_missed: int = 1
    confirm_attempts: int = 3
    shrink_budget: int = 12

    def __post_init__(self) -> None:
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1:
            raise ValueError(f"explore: budget={self.budget!r}; give the number of schedules to run, an int >= 1")
        if self.min_verdicts is not None and not 1 <= self.min_verdicts <= self.budget:
            raise ValueError(f"explore: min_verdicts={self.min_verdicts!r} must be between 1 and the budget "
                             f"({self.budget}): no search of that budget could give that many verdicts")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError(f"explore: max_seconds={self.max_seconds!r} must be > 0 (leave it out for no limit)")

    @property
    def verdicts_needed(self) -> int:
        return self.min_verdicts if self.min_verdicts is not None else max(1, self.budget // 2)


@dataclass(frozen=True)
class Recall:
    """What earlier sessions left of this test's search: ``first`` the schedules that failed or were
    flaky there (run first), ``tried`` the schedules already given a verdict (the order skips them until
    it has nothing else, then starts over)."""

    first: tuple[Schedule, ...] = ()
    tried: frozenset[Schedule] = frozenset()


@dataclass
class Report:
    """What a search found and covered, and why it stopped."""

    limits: Limits
    coverage: Coverage
    found: Finding | None = None
    flaky: list[Flaky] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    #: exploring runs up to and including the first falsifying one, or None
    first_violation_at: int | None = None
    control: Outcome | None = None  #: the control run's outcome (None: none was made)
    stop: str = "budget"  #: why the search stopped (a key of :data:`STOPS`)
    #: the order ran out of untried schedules and started over (every schedule had been given a verdict)
    cycled: bool = False

    @property
    def budget(self) -> int:
        return self.limits.budget

    @property
    def verdicts(self) -> int:
        """Distinct schedules of exploring runs that gave a verdict (every aim landed, no error)."""
        return self.coverage.schedules_run

    @property
    def from_memory(self) -> int:
        return self.runs_for("memory")

    @property
    def verdict(self) -> str:
        """``falsified`` (a violation found, or flaky with ``flaky_fails``), ``fails_without_faults`` (the
        control run failed), ``inconclusive`` (too few verdicts, or no run could start) or ``passed``."""
        if self.control is not None and self.control.falsified and self.control.error is None:
            return "fails_without_faults"
        if self.found is not None or (self.flaky and self.limits.flaky_fails):
            return "falsified"
        if self.stop == "no_start" or self.verdicts < self.limits.verdicts_needed:
            return "inconclusive"
        return "passed"

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def first_error(self) -> str | None:
        """The first line of the first run without a verdict because of an error (None: no such run)."""
        return next((r.outcome.error for r in self.runs if r.outcome.error is not None), None)

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
        lines.append(f"coverage: {self.coverage_line()}")
        return lines

    def coverage_line(self) -> str:
        """The evidence, the coverage, what came from memory and why the search stopped, in one line."""
        memory = f"; {self.from_memory} from memory" if self.from_memory else ""
        cycled = "; every schedule had been tried in earlier sessions: started over" if self.cycled else ""
        return (f"{self.verdicts} schedules gave a verdict (needed {self.limits.verdicts_needed}): "
                f"{self.coverage.summary()}{memory}{cycled}; stopped: {STOPS.get(self.stop, self.stop)}")

    def to_dict(self) -> dict[str, Any]:
        def sched(s: Schedule | None) -> list[dict[str, Any]]:
            return [] if s is None else [{"kind": x.kind, "target": x.target, "phase": x.phase, "batch": x.batch}
                                         for x in s.steps]

        found = None if self.found is None else {
            "schedule": sched(self.found.schedule), "words": self.found.words(), "confirmed": self.found.confirmed,
            "original": sched(self.found.original), "message": self.found.outcome.message}
        control = None if self.control is None else {"falsified": self.control.falsified,
                                                     "error": self.control.error, "message": self.control.message}
        return {"budget": self.budget, "min_verdicts": self.limits.verdicts_needed,
                "max_seconds": self.limits.max_seconds, "verdict": self.verdict, "passed": self.passed,
                "verdicts": self.verdicts, "stop": self.stop, "from_memory": self.from_memory,
                "cycled": self.cycled, "control": control, "found": found,
                "first_violation_at": self.first_violation_at,
                "flaky": [{"schedule": sched(f.schedule), "words": f.words()} for f in self.flaky],
                "coverage": self.coverage.to_dict(),
                "runs": [{"purpose": r.purpose, "schedule": sched(r.schedule), "falsified": r.outcome.falsified,
                          "hit": r.schedule is not None and r.outcome.all_hit(r.schedule), "error": r.outcome.error,
                          "landed": [{"hit": x.hit, "batch": x.batch, "phase": x.phase} for x in r.outcome.landed],
                          "seconds": round(r.outcome.seconds, 3), "history": r.outcome.history,
                          "message": r.outcome.message} for r in self.runs]}


class _OutOfTime(Exception):
    """The next run would end past ``max_seconds``."""


class Explorer:
    """One search over ``space`` with ``run_schedule`` within ``limits`` (see the module docstring);
    :meth:`search` runs it and returns the :class:`Report`. ``order`` makes the order of schedules
    (default: the space's own; a replay's, a benchmark's random one), ``control`` runs the body without
    faults, ``recall`` is what earlier sessions left, ``clock`` the time in seconds; ``alone`` runs a schedule
    on a job of its own, for confirming and shrinking (default: ``run_schedule``)."""

    def __init__(self, space: Space, run_schedule: RunSchedule, limits: Limits, *,
                 order: Callable[[], Iterable[Schedule]] | None = None,
                 control: Callable[[], Outcome] | None = None, recall: Recall = Recall(),
                 clock: Callable[[], float] = time.monotonic, alone: RunSchedule | None = None) -> None:
        self.space = space
        self.run_schedule = run_schedule
        self.alone = alone or run_schedule
        self.limits = limits
        self.make_order = order or (lambda: space.schedules(limits.max_faults))
        self.control = control
        self.recall = recall
        self.clock = clock
        self.started = clock()
        self.shrink_left = limits.shrink_budget
        why = {r.name: r.why for r in space.rules}
        self.report = Report(limits, Coverage(space.cells(), space.pruned_cells(), why))
        self._failures: dict[Schedule, Outcome] = {}
        self._ran: set[Schedule] = set()

    def search(self) -> Report:
        """Control, then explore until a violation, the budget's or the time's end, or the space's end."""
        try:
            if self.control is None or self._control():
                self.report.stop = self._explore()
        except _OutOfTime:
            self.report.stop = "time"
        # the job's traits learnt from the runs may have pruned more since the search began
        cov, space = self.report.coverage, self.space
        cov.cells, cov.pruned, cov.sizes = space.cells(), space.pruned_cells(), space.count(self.limits.max_faults)
        return self.report

    def _check_time(self) -> None:
        """:class:`_OutOfTime` when a run as long as the longest of the last three would end past the limit."""
        if self.limits.max_seconds is None:
            return
        estimate = max((r.outcome.seconds for r in self.report.runs[-3:]), default=0.0)
        if self.clock() - self.started + estimate > self.limits.max_seconds:
            raise _OutOfTime()

    def _run(self, schedule: Schedule, purpose: str) -> Outcome:
        self._check_time()
        # a violation is confirmed, and shrunk, on a job that ran nothing before the schedule
        out = (self.alone if purpose in ("confirm", "shrink") else self.run_schedule)(schedule)
        self.report.runs.append(RunRecord(schedule, purpose, out))
        self.report.coverage.record(schedule, out, purpose)
        return out

    def _control(self) -> bool:
        """The run without faults; whether the search may go on (it gave a verdict and passed)."""
        assert self.control is not None
        self._check_time()
        out = self.control()
        self.report.control = out
        self.report.runs.append(RunRecord(None, "control", out))
        self.report.coverage.purposes["control"] += 1
        if out.error is not None:
            self.report.stop = "no_start"
            return False
        if out.falsified:
            self.report.stop = "control"
            return False
        return True

    def _order(self) -> Iterator[Schedule]:
        """The space's order, without what ran this session, the schedules earlier sessions tried left for
        last: when nothing else is left, the order starts over."""
        skipped = False
        for schedule in self.make_order():
            if schedule in self.recall.tried:
                skipped = True
            elif schedule not in self._ran:
                yield schedule
        if skipped:
            self.report.cycled = True
            yield from (s for s in self.make_order() if s not in self._ran)

    def _explore(self) -> str:
        """The exploring runs; why they stopped."""
        retries: dict[Schedule, int] = {}
        pending: list[tuple[Schedule, str]] = [(s, "memory") for s in dict.fromkeys(self.recall.first)]
        order = self._order()
        explored = 0
        while explored < self.limits.budget:
            if pending:
                schedule, purpose = pending.pop(0)
            else:
                nxt = next(order, None)
                if nxt is None:
                    return "space"
                schedule, purpose = nxt, "explore"
            if any(not self.space.allowed(s) or self.space.canonical(s) is None for s in schedule.steps):
                continue  # its moment never comes for this job (a run has shown it), or not in this space
            self._ran.add(schedule)
            out = self._run(schedule, purpose)
            explored += 1
            if out.error is not None:
                if not out.fired:
                    return "no_start"
                continue
            if not out.all_hit(schedule):  # not run: it tested another schedule than this one
                if retries.get(schedule, 0) < self.limits.retry_missed:
                    retries[schedule] = retries.get(schedule, 0) + 1
                    pending.append((schedule, "retry"))
                continue
            if out.falsified:
                if self.report.first_violation_at is None:
                    self.report.first_violation_at = explored
                stop = self._confirm_and_shrink(schedule, out)
                if stop is not None:
                    return stop
        return "budget"

    def _landed_again(self, schedule: Schedule) -> Outcome | None:
        """Re-run ``schedule`` until its aims all land (at most ``confirm_attempts`` runs): that run's
        outcome, or None."""
        for _ in range(self.limits.confirm_attempts):
            out = self._run(schedule, "confirm")
            if out.error is None and out.all_hit(schedule):
                return out
        return None

    def _confirm_and_shrink(self, schedule: Schedule, failed: Outcome) -> str | None:
        """Confirm a falsifying run; shrink it when it comes back. Why the search stops (None: it goes on)."""
        try:
            again = self._landed_again(schedule)
        except _OutOfTime:
            self.report.found = Finding(schedule, failed, schedule, confirmed=False)
            return "time"
        if again is None or not again.falsified:
            self.report.flaky.append(Flaky(schedule, failed, again))
            return "flaky" if self.limits.flaky_fails else None
        path = shrink(schedule, self.space, self._still_fails)
        minimal = path[-1] if path else schedule
        self.report.found = Finding(minimal, self._failures.get(minimal, again), schedule, tuple(path))
        return "found"

    def _still_fails(self, candidate: Schedule) -> bool | None:
        """A shrink candidate fails when its run and a re-run both fail with every aim hit; None once
        the shrink budget or the time is spent."""
        for attempt in range(2):
            if self.shrink_left <= 0:
                return None
            self.shrink_left -= 1
            try:
                out = self._run(candidate, "shrink" if attempt == 0 else "confirm")
            except _OutOfTime:
                return None
            if out.error is not None or not out.all_hit(candidate) or not out.falsified:
                return False
        self._failures[candidate] = out
        return True


def explore(space: Space, run_schedule: RunSchedule, *, budget: int,
            schedules: Iterable[Schedule] | None = None, **knobs: Any) -> Report:
    """Search ``space`` with ``run_schedule`` for at most ``budget`` exploring runs (the other
    :class:`Limits` as keywords; ``schedules`` replaces the space's order; ``control``, ``recall``,
    ``clock``, ``alone`` as :class:`Explorer` takes them)."""
    explorer_kw = {k: knobs.pop(k) for k in ("control", "recall", "clock", "alone") if k in knobs}
    order = None
    if schedules is not None:
        fixed = list(schedules)
        order = lambda: iter(fixed)  # noqa: E731
    return Explorer(space, run_schedule, Limits(budget, **knobs), order=order, **explorer_kw).search()


def replay(schedule: Schedule, run_schedule: RunSchedule, *, attempts: int = 3) -> Report:
    """Run one schedule (a replay token's) until its aims land, at most ``attempts`` times; ``found``
    is set when that run falsified the property (no confirmation, no shrinking: the user asked for
    exactly this schedule). It needs one verdict."""
    report = Report(Limits(attempts, min_verdicts=1), Coverage([], {}, {}))
    for _ in range(attempts):
        out = run_schedule(schedule)
        report.runs.append(RunRecord(schedule, "replay", out))
        report.coverage.record(schedule, out, "replay")
        if out.error is None and out.all_hit(schedule):
            report.stop = "found" if out.falsified else "budget"
            if out.falsified:
                report.found = Finding(schedule, out, schedule)
                report.first_violation_at = len(report.runs)
            break
    return report
