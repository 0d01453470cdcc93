"""One explored test: the search over its body (or the replay of one token), and what it says.

:func:`explore_item` runs in the plugin's ``pytest_pyfunc_call`` instead of the single call of the test
function. It returns an :class:`Explored`: the search's report, the runs to keep for the session's
reports (the falsifying run of the minimal schedule, else the last run that landed), the lines of the
terminal summary, the JSON of the report's ``explore`` key, and -- when a violation was confirmed --
the failure text with the ``replay:`` line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.exploration.body import Body, NoChaosRun, phases_never_came
from pytest_streamchaos.exploration.mark import ExploreSpec
from pytest_streamchaos.search.engine import Explorer, Report, replay
from pytest_streamchaos.search.schedule import Outcome, Schedule
from pytest_streamchaos.search.space import Space
from pytest_streamchaos.search.token import encode, plugin_version


class ExploreUsageError(Exception):
    """The explored test cannot be explored as written (no ``chaos`` fixture, no ``chaos.run``)."""


@dataclass
class Explored:
    """What exploring one test gave (see the module docstring)."""

    nodeid: str
    spec: ExploreSpec
    report: Report
    keep: list[Any] = field(default_factory=list)
    token: str | None = None

    @property
    def failed(self) -> bool:
        return self.report.found is not None

    def replay_line(self) -> str | None:
        return None if self.token is None else f"replay: pytest {self.nodeid} --chaos-replay={self.token}"

    def failure_text(self) -> str:
        """The failed test's message: the minimal schedule in words, its failure, how it was confirmed and
        shrunk, that run's verdict, the coverage, and the replay line last."""
        found = self.report.found
        assert found is not None
        what = "replayed" if self.spec.replay is not None else "falsified by"
        lines = [f"{self.spec.source}: {what} {found.words()}", f"  {found.outcome.message}".rstrip()]
        if self.spec.replay is None:
            shrinks = self.report.runs_for("shrink")
            lines.append(f"  confirmed by a re-run; shrunk in {shrinks} run(s)"
                         + (f" from: {found.original.words()}" if found.original != found.schedule else
                            " (nothing smaller fails)"))
            lines.append(f"  first violation at exploring run {self.report.first_violation_at} of "
                         f"budget {self.spec.budget}")
        run: Any = found.outcome.detail.get("run")
        if run is not None:
            lines += ["", "the falsifying run:", *run.describe().splitlines()]
        lines += ["", f"search: {self.report.coverage.summary()}"]
        lines += [f"flaky: {f.words()}" for f in self.report.flaky]
        lines += ["", str(self.replay_line())]
        return "\n".join(lines)

    def summary(self) -> list[str]:
        """The terminal summary's lines for this test."""
        head = "FALSIFIED" if self.failed else "passed"
        lines = [f"{self.nodeid}: {head} ({self.spec.source}: {', '.join(self.spec.faults)}, "
                 f"budget {self.spec.budget})"]
        lines += [f"  {line}" for line in self.report.summary()]
        by_phase = self.report.coverage.by_phase
        if by_phase:
            lines.append("  aims by phase: " + ", ".join(f"{p} {h}/{a}" for p, (h, a) in sorted(by_phase.items())))
        for rule, cells in self.report.coverage.pruned.items():
            lines.append(f"  pruned by {rule}: {', '.join(cells)} -- {self.report.coverage.why.get(rule, '')}")
        if self.token is not None:
            lines.append(f"  {self.replay_line()}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The report's ``explore`` key (docs/report-schema.md)."""
        return {"source": self.spec.source, "faults": list(self.spec.faults), "max_faults": self.spec.max_faults,
                "replayed": self.spec.replay is not None, "token": self.token, "replay": self.replay_line(),
                **self.report.to_dict()}


def stateful(run: Any) -> bool | None:
    """Whether a run's job keeps state (a stateful operator in its progress); None when it cannot tell."""
    batches = getattr(run.history.trace, "batches", None) or []
    if not batches:
        return None
    return any(b.get("stateOperators") for b in batches if isinstance(b, dict))


def kafka_output(run: Any) -> bool | None:
    """Whether a run's job writes to a Kafka topic of the run; None when it cannot tell."""
    topics = getattr(run.history, "topics", None)
    return None if topics is None else topics.output is not None


class _Search:
    """The search's order with the job's traits learnt from its runs: once a run shows a job without
    state, schedules aimed at a state store commit are left out (the ``no_state_store`` rule); once it
    shows an output that is not a Kafka topic, the output leader's (``no_kafka_output``); once it shows a
    moment inside the tasks never comes (``tasks_running`` on a job whose tasks write no file), every
    step aimed there (``moment_never_came``)."""

    def __init__(self, space: Space, max_faults: int) -> None:
        self.space = space
        self.max_faults = max_faults

    def learn(self, schedule: Schedule, outcome: Outcome) -> None:
        run: Any = outcome.detail.get("run")
        if run is None:
            return
        if self.space.stateful is None:
            self.space.stateful = stateful(run)
        if self.space.kafka_output is None:
            self.space.kafka_output = kafka_output(run)
        self.space.never_comes |= phases_never_came(run, schedule)

    def order(self) -> Iterator[Schedule]:
        for schedule in self.space.schedules(self.max_faults):
            if all(self.space.canonical(s) is not None for s in schedule.steps):
                yield schedule


def explore_item(nodeid: str, spec: ExploreSpec, func: Callable[..., Any], funcargs: dict[str, Any],
                 check: Callable[[list[Any]], None]) -> Explored:
    """Explore one test (or replay its token): ``func`` the test function, ``funcargs`` its fixture
    values (``chaos`` among them), ``check`` the plugin's after-body checks of a run."""
    harness = funcargs.get("chaos")
    if harness is None:
        raise ExploreUsageError(f"{spec.source}: {nodeid} does not take the chaos fixture: its body must call "
                                "chaos.run(...) -- add the chaos argument")
    body = Body(func, funcargs, harness, check)
    space = Space(spec.kinds())
    search = _Search(space, spec.max_faults)

    def run_schedule(schedule: Schedule) -> Outcome:
        try:
            out = body.run(schedule)
        except NoChaosRun:
            raise ExploreUsageError(f"{spec.source}: {nodeid} never called chaos.run: the body is the property "
                                    "the search runs under each schedule, and a run of the job is what it "
                                    "breaks -- call chaos.run(...) in it") from None
        search.learn(schedule, out)
        return out

    if spec.replay is not None:
        report = replay(spec.replay, run_schedule)
    else:
        explorer = Explorer(space, run_schedule, budget=spec.budget, max_faults=spec.max_faults,
                            schedules=search.order())
        report = explorer.search()
        report.coverage.cells, report.coverage.pruned = space.cells(), space.pruned_cells()
        report.coverage.why = {r.name: r.why for r in space.rules}
    explored = Explored(nodeid, spec, report)
    if report.found is not None:
        explored.token = encode(report.found.schedule, nodeid, plugin_version())
        explored.keep = [report.found.outcome.detail["run"]] if "run" in report.found.outcome.detail else []
    else:
        landed = [r.outcome for r in report.runs if r.outcome.error is None and r.outcome.all_hit(r.schedule)]
        explored.keep = [landed[-1].detail["run"]] if landed and "run" in landed[-1].detail else []
    return explored
