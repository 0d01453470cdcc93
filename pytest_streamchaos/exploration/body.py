"""The test body under one schedule: what ``@explore``'s search calls for every run.

:class:`Body` holds the test function, its fixture values and the ``chaos`` fixture's harness (one warm
stack for every run). :meth:`Body.run` sets the harness's faults to the schedule's steps (the test's own
fault marks play no part), calls the body, applies the plugin's after-body checks (SLA marks, the
declared guarantee), and says what happened as an :class:`~pytest_streamchaos.search.schedule.Outcome`:

- an ``AssertionError`` (the body's own, a failed check or SLA) is a falsifying run, its first line
  the message -- unless an aim missed: then the run tested another schedule and counts as not run;
- a run that could not give a verdict (the stack or the job broke: a ``RuntimeError`` of the harness,
  a fault that did not happen as planned) is an ``error``;
- anything else (a ``TypeError`` in the test, a failing record factory) is the test's own bug and goes
  up as it is: a search over a broken test would only hide it.

Between runs the body's leftovers on this host are removed: the job's hard-coded absolute checkpoint
and the ``file:`` outputs it declared absolute (a next run would resume from them or read them).

With ``share`` (``@explore(history="shared")``, the default) the body's ``chaos.run`` plays its schedule on
the job already running, as the next window of one history (docs/explore.md#one-history), and returns that
window's view; a run whose view falsified the property, erred, or left the job unable to take another
schedule ends the history (the next run starts a fresh one). :meth:`Body.alone` runs a schedule on a job of
its own, as every run did before (a violation's confirmation, shrinking, a replay).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.exploration.catalogue import schedule_specs
from pytest_streamchaos.runner.leftovers import clear_leftovers
from pytest_streamchaos.search.schedule import PHASES, Landed, Outcome, Schedule
from pytest_streamchaos.usercode import UserCodeError

if TYPE_CHECKING:
    from pytest_streamchaos.analysis.repeat import RepeatedRun
    from pytest_streamchaos.analysis.result import ChaosRun
    from pytest_streamchaos.harness import ChaosFixture


#: why a history ended when a schedule's window falsified the property
FALSIFIED = "its window falsified the property"


class NoChaosRun(Exception):
    """The body ran without calling ``chaos.run``: there is nothing to explore."""


class Body:
    """One explored test's body (see the module docstring). ``check(runs)`` is the plugin's after-body
    check of the runs' SLA marks and declared guarantee (raises ``AssertionError``)."""

    def __init__(self, func: Callable[..., Any], funcargs: Mapping[str, Any], harness: ChaosFixture,
                 check: Callable[[list[ChaosRun | RepeatedRun]], None], share: bool = False) -> None:
        self.func = func
        self.funcargs = dict(funcargs)
        self.harness = harness
        self.check = check
        self.share = share
        #: each run's schedule (None: the control run), outcome and the ChaosRun(s) it made, in order
        self.history: list[tuple[Schedule | None, Outcome[ChaosRun], list[ChaosRun]]] = []
        #: why each one history ended, by its number
        self.ended: dict[int, str] = {}

    def control(self) -> Outcome[ChaosRun]:
        """Run the body once without any fault: the search's control run."""
        return self.run(None)

    def alone(self, schedule: Schedule) -> Outcome[ChaosRun]:
        """Run the body once under ``schedule`` on a job of its own (the one history running ends first)."""
        return self.run(schedule, alone=True)

    def finish(self) -> None:
        """End the one history still running (the search is over)."""
        live = self.harness.runner.history
        if live is not None:
            self.ended.setdefault(live.number, "the search ended")
            self.harness.close_history()

    def run(self, schedule: Schedule | None, alone: bool = False) -> Outcome[ChaosRun]:
        """Run the body once under ``schedule`` (None: no fault at all; see the module docstring)."""
        h, runner = self.harness, self.harness.runner
        runner.faults = schedule_specs(schedule) if schedule is not None else []
        runner.explored = True
        runner.share_history = self.share and not alone and runner.unshared is None
        runner.body_calls = 0
        h.results.clear()
        before = len(h.runs)
        t0 = time.time()
        failure: BaseException | None = None
        try:
            self.func(**self.funcargs)
            self.check(list(h.results))
        except AssertionError as exc:
            failure = exc
        except UserCodeError:
            raise
        except RuntimeError as exc:  # the stack, the job or the harness broke: no verdict
            failure = exc
        finally:
            runs = list(h.runs[before:])
            # a window's view: its job still runs, and what it writes is the history's to clear when it ends
            clear_leftovers([r.history for r in runs if r.history.focus is None], Path(runner.workdir))
        seconds = time.time() - t0
        live = runner.history if runner.share_history else None
        if not runs:
            if failure is not None and not isinstance(failure, AssertionError):
                out: Outcome[ChaosRun] = Outcome(False, error=first_line(failure), seconds=seconds)
                self.history.append((schedule, out, runs))
                self._end_broken(first_line(failure))
                return out
            raise NoChaosRun()
        shared = live is not None and runs[0].history.focus is not None
        out = outcome(schedule, runs[0], failure, seconds, history=live.number if shared and live else None)
        self.history.append((schedule, out, runs))
        if shared:
            self._end_broken(FALSIFIED if out.falsified
                             else f"its run erred: {out.error}" if out.error else None)
        return out

    def _end_broken(self, why: str | None) -> None:
        """End the one history running now when its last schedule left it unable to take another (``why``,
        else its own account), so that the next schedule starts a fresh one."""
        live = self.harness.runner.history
        if live is None or (why is None and live.broken is None):
            return
        self.ended[live.number] = why or str(live.broken)
        self.harness.close_history()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


#: a polled moment's phases (``faults.moments.PHASES``) as the search's: a polled ``tasks_running`` aim
#: counts a batch whose output is already visible (``sink_written``) as its own, which for the search is
#: another phase -- the step missed
POLLED_PHASES = {"running": "tasks_running", "sink_written": "output_visible_uncommitted",
                 "committed": "between_batches", "idle": "between_batches"}


def landed_of(run: ChaosRun, schedule: Schedule | None) -> tuple[Landed, ...]:
    """Where each step of ``schedule`` landed in ``run`` (its fault occurrences -- a window's view: the
    window's --, in plan order; a step whose moment never came, or that was not injected, did not land; one
    that fired in another phase than its own missed)."""
    faults = list(run.fault_records)
    out: list[Landed] = []
    for i, step in enumerate(schedule.steps if schedule is not None else ()):
        f = faults[i] if i < len(faults) else None
        if f is None or f.aim is None or not f.injected:
            out.append(Landed(False))
            continue
        phase = f.aim.phase if f.aim.phase in PHASES else POLLED_PHASES.get(f.aim.phase, f.aim.phase)
        out.append(Landed(f.aim.hit and phase == step.phase, f.aim.batch, phase))
    return tuple(out)


#: the batches with input a run must start after a step armed, its moment not coming, before that says the
#: job has no such moment (one batch could be a slow one; a job that has the moment has it in every batch)
NEVER_CAME_AFTER = 3


def phases_never_came(run: ChaosRun, schedule: Schedule) -> set[str]:
    """The phases inside the tasks (``Phase.in_tasks``) that ``run`` showed its job does not have: the
    schedule's first step aimed there never fired while the job ran :data:`NEVER_CAME_AFTER` batches with
    input after it armed. Only the first step is evidence: a later one arms after a fault, whose
    recovery may take the rest of the run."""
    first = next(iter(run.fault_records), None)
    step = schedule.steps[0]
    if first is None or first.skipped is None or first.planned_at is None or not PHASES[step.phase].in_tasks:
        return set()  # it fired, or failed to be injected (its moment came): nothing learnt
    after = [b for b in run.history.micro_batches if b.start >= first.planned_at and b.input_rows > 0]
    return {step.phase} if len(after) >= NEVER_CAME_AFTER else set()


def outcome(schedule: Schedule | None, run: ChaosRun, failure: BaseException | None,
            seconds: float, history: int | None = None) -> Outcome[ChaosRun]:
    """The :class:`Outcome` of one run of ``schedule`` (None: the control run): ``run`` its (first)
    ChaosRun, ``failure`` what the body raised (None: it passed), ``history`` the one history it shared."""
    landed = landed_of(run, schedule)
    # a step whose moment never came is a miss (retried), not an error; with every step landed, any fault
    # error says the faults did not happen as planned
    errors = run.fault_errors if all(x.hit for x in landed) else []
    said: dict[str, Any] = {"seconds": seconds, "run": run, "history": history}
    if errors:  # the run's verdict means nothing
        return Outcome(False, landed, error=f"faults did not happen as planned: {errors[0]}", **said)
    if failure is None:
        return Outcome(False, landed, **said)
    if isinstance(failure, AssertionError):
        return Outcome(True, landed, message=first_line(failure), **said)
    return Outcome(False, landed, error=first_line(failure), **said)
