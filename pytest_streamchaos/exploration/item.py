"""One explored test: the search over its body (or the replay of one token), and what it says.

:func:`explore_item` runs in the explore plugin's ``pytest_pyfunc_call`` instead of the single call of the
test function. It returns an :class:`Explored`: the search's report, the runs to keep for the session's
reports (the falsifying run of the minimal schedule, else the last run that landed), the lines of the
terminal summary, the JSON of the report's ``explore`` key and -- unless the search passed on evidence --
the failure text: the minimal schedule with its ``replay:`` line, a flaky violation with both runs, a
property that fails with no fault, or an inconclusive search with its first error.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.analysis.trigger import observed_trigger, trigger_words
from pytest_streamchaos.events import Phase
from pytest_streamchaos.exploration.body import Body, NoChaosRun, phases_never_came
from pytest_streamchaos.exploration.histories import HistoryAccount, cost_line, histories_of, schedule_cost
from pytest_streamchaos.exploration.mark import ExploreSpec
from pytest_streamchaos.exploration.memory import Entry, Memory
from pytest_streamchaos.search.engine import Explorer, Recall, Report, replay
from pytest_streamchaos.search.schedule import Outcome, Schedule
from pytest_streamchaos.search.space import Space
from pytest_streamchaos.search.token import Setting, encode, plugin_version

if TYPE_CHECKING:
    from pytest_streamchaos.analysis.result import ChaosRun

#: how to turn a flaky finding into a warning, named where one fails a test
FLAKY_OPTION = "@explore(..., flaky='warn') (or flaky=warn in the explore profile)"


class ExploreUsageError(Exception):
    """The explored test cannot be explored as written (no ``chaos`` fixture, no ``chaos.run``)."""


@dataclass
class Explored:
    """What exploring one test gave (see the module docstring)."""

    nodeid: str
    spec: ExploreSpec
    report: Report
    keep: list[ChaosRun] = field(default_factory=list)
    token: str | None = None
    #: the replay ran under another setting than its token's (the job's trigger): why it says nothing
    replay_differs: str | None = None
    memory: str = ""  #: where the memory is, in words
    flaky_tokens: list[str] = field(default_factory=list)  #: a replay token per flaky schedule
    #: the one histories the schedules shared (docs/explore.md#one-history), in order
    histories: list[HistoryAccount] = field(default_factory=list)
    #: why the body's runs could not share one history (each schedule then ran on a job of its own), or None
    unshared: str | None = None

    @property
    def verdict(self) -> str:
        if self.replay_differs:
            return "inconclusive"
        if self.report.verdict == "passed" and self.whole_violated:
            return "falsified"  # every window held, the whole history did not
        return self.report.verdict

    @property
    def whole_violated(self) -> list[HistoryAccount]:
        """The histories on whose whole the test's checks failed."""
        return [h for h in self.histories if h.violation]

    @property
    def failed(self) -> bool:
        return self.verdict != "passed"

    def replay_line(self, token: str | None = None) -> str | None:
        token = token or self.token
        return None if token is None else f"replay: pytest {self.nodeid} --chaos-replay={token}"

    def failure_text(self) -> str:
        """The failed test's message (see the module docstring); the falsifying run's account is here,
        once (the ``chaos run`` report section refers to it)."""
        lines = {"falsified": self._falsified, "fails_without_faults": self._fails_without_faults,
                 "inconclusive": self._inconclusive}[self.verdict]()
        return "\n".join([*lines, "", f"search: {self.report.coverage_line()}"]
                         + ([] if self.token is None else ["", str(self.replay_line())]))

    def _falsified(self) -> list[str]:
        found = self.report.found
        if found is None and not self.report.flaky:
            return self._whole()
        if found is None:
            return self._flaky()
        what = "replayed" if self.spec.replay is not None else "falsified by"
        lines = [f"{self.spec.source}: {what} {found.words()}", f"  {found.outcome.message}".rstrip()]
        if self.spec.replay is None and not found.confirmed:
            lines.append("  not confirmed: max_seconds left no time to run it again (it failed once, every aim "
                         "landed)")
        elif self.spec.replay is None:
            shrinks = self.report.runs_for("shrink")
            lines.append(f"  confirmed by a re-run; shrunk in {shrinks} run(s)"
                         + (f" from: {found.original.words()}" if found.original != found.schedule else
                            " (nothing smaller fails)"))
            lines.append(f"  first violation at exploring run {self.report.first_violation_at} of "
                         f"budget {self.spec.budget}")
        return lines + _described("the falsifying run", found.outcome)

    def _flaky(self) -> list[str]:
        flaky = self.report.flaky[0]
        again = ("  the re-run: passed, every aim landed" if flaky.passed is not None
                 else "  the re-runs: their aims never landed again")
        lines = [f"{self.spec.source}: flaky: {flaky.words()}",
                 "  a violation that shows in one run of a schedule and not in the next is a bug that depends on "
                 f"timing; to report it as a warning instead: {FLAKY_OPTION}",
                 f"  the failing run: {flaky.failed.message}", again]
        lines += [f"  {self.replay_line(t)}" for t in self.flaky_tokens[:1]]
        return lines + _described("the failing run", flaky.failed) + _described("the re-run", flaky.passed)

    def _whole(self) -> list[str]:
        """Every schedule's window held, and the test's checks failed on a whole history: records no schedule's
        window holds (sent after the last one, read in the final drain) broke it."""
        lines = [f"{self.spec.source}: every schedule's window held, but the whole history did not (the records "
                 "sent after the last schedule, read in the final drain, are in no schedule's window)"]
        for h in self.whole_violated:
            lines += [f"  {h.line()}", *(f"    {w.describe()}" for w in (h.whole.windows if h.whole else []))]
        return lines

    def _fails_without_faults(self) -> list[str]:
        control = self.report.control
        assert control is not None
        return [f"{self.spec.source}: the property fails with no fault at all (the control run, before any "
                f"schedule): {control.message}",
                "  fix the job or the assertion first: every schedule would fail it"] + _described("the control run",
                                                                                                  control)

    def _inconclusive(self) -> list[str]:
        r = self.report
        if self.replay_differs:
            return [f"{self.spec.source}: inconclusive: {self.replay_differs}"]
        counts = r.coverage
        missed = sum(1 for x in r.runs if x.schedule is not None and x.outcome.error is None
                     and not x.outcome.all_hit(x.schedule))
        line = (f"{self.spec.source}: inconclusive: {r.verdicts} of {r.budget} schedules gave a verdict "
                f"(needed {r.limits.verdicts_needed}): {counts.errors} run(s) without a verdict, {missed} missed "
                "their aims")
        if r.stop == "no_start":
            which = "the control run" if r.control is not None and r.control.error else "a run"
            line = f"{self.spec.source}: inconclusive: {which} failed before its first fault, so no schedule was tried"
        first = r.first_error()
        lines = [line]
        if first:
            lines.append(f"  first error: {first}")
        if r.stop == "time":
            lines.append(f"  max_seconds={r.limits.max_seconds:g} ended the search: give it more time or a smaller "
                         "min_verdicts")
        return lines

    def summary(self) -> list[str]:
        """The terminal summary's lines for this test."""
        head = {"passed": "passed", "falsified": "FALSIFIED", "fails_without_faults": "FAILS WITHOUT FAULTS",
                "inconclusive": "INCONCLUSIVE"}[self.verdict]
        knobs = f"budget {self.spec.budget}" + (f", max {self.spec.max_seconds:g} s" if self.spec.max_seconds else "")
        lines = [f"{self.nodeid}: {head} ({self.spec.source}: {', '.join(self.spec.faults)}, {knobs})"]
        lines += [f"  {line}" for line in self.report.summary()]
        by_phase = self.report.coverage.by_phase
        if by_phase:
            lines.append("  aims by phase: " + ", ".join(f"{p} {h}/{a}" for p, (h, a) in sorted(by_phase.items())))
        for rule, cells in self.report.coverage.pruned.items():
            lines.append(f"  pruned by {rule}: {', '.join(cells)} -- {self.report.coverage.why.get(rule, '')}")
        lines += [f"  {line}" for line in self.history_lines()]
        if self.memory:
            lines.append(f"  memory: {self.memory}")
        if self.token is not None:
            lines.append(f"  {self.replay_line()}")
        return lines

    def history_lines(self) -> list[str]:
        """How the schedules ran: in how many one histories (why each ended), or each on a job of its own and
        why; what a schedule cost."""
        explored = [r.outcome for r in self.report.runs if r.schedule is not None and r.purpose != "confirm"
                    and r.purpose != "shrink"]
        shared = [o for o in explored if o.history is not None]
        histories = [h for h in self.histories if h.runs]
        if self.unshared or (not histories and self.spec.history == "shared" and self.spec.replay is None):
            lines = [f"one history: not used ({self.unshared or 'no run shared a job'}): each schedule ran on a job of "
                     "its own"]
        elif histories:
            lines = [f"one history: {len(shared)} of {len(explored)} schedule run(s) shared a running job, in "
                     f"{len(histories)} history(ies); confirming and shrinking ran alone"]
            lines += [f"  {h.line()}" for h in histories]
        else:
            lines = []
        cost = cost_line(shared or explored)
        return lines + ([cost] if cost else [])

    def to_dict(self) -> dict[str, object]:
        """The report's ``explore`` key (docs/report-schema.md)."""
        out = {"source": self.spec.source, "faults": list(self.spec.faults), "max_faults": self.spec.max_faults,
               "replayed": self.spec.replay is not None, "token": self.token, "replay": self.replay_line(),
               "memory": self.memory, "flaky_tokens": self.flaky_tokens, **self.report.to_dict(),
               "verdict": self.verdict, "passed": not self.failed, "history": self.spec.history,
               "unshared": self.unshared, "histories": [h.to_dict() for h in self.histories]}
        for record, d in zip(self.report.runs, out["runs"], strict=True):
            d["phases"] = run_phases(record.outcome.run)
            d["cost"] = schedule_cost(record.outcome)
        return out


def run_phases(run: ChaosRun | None) -> dict[str, object] | None:
    """How long one run's phases took (seconds) and why its load ended when it did (None: no run)."""
    if run is None:
        return None
    p, load = run.history.phases, run.facts.load
    focus = run.history.focus
    if focus is not None:  # a window of one history: its schedule's own load, the history's warm-up is not its
        return {"window": focus.index, "load": None if load is None else load.ran_s,
                "load_ended": None if load is None else load.ended}
    bounds = (("warmup", Phase.START, Phase.WARMUP_END), ("load", Phase.WARMUP_END, Phase.LOAD_END),
              ("drain", Phase.LOAD_END, Phase.DRAIN_END))
    span = {name: round(p[b] - p[a], 1) for name, a, b in bounds if a in p and b in p}
    return {**span, "load_ended": None if load is None else load.ended}


def _described(title: str, outcome: Outcome[ChaosRun] | None) -> list[str]:
    run = None if outcome is None else outcome.run
    return [] if run is None else ["", f"{title}:", *run.describe().splitlines()]


def stateful(run: ChaosRun) -> bool | None:
    """Whether a run's job keeps state (a stateful operator in its progress); None when it cannot tell."""
    batches = getattr(run.history.trace, "batches", None) or []
    if not batches:
        return None
    return any(b.get("stateOperators") for b in batches if isinstance(b, dict))


def kafka_output(run: ChaosRun) -> bool | None:
    """Whether a run's job writes to a Kafka topic of the run; None when it cannot tell."""
    topics = getattr(run.history, "topics", None)
    return None if topics is None else topics.output is not None


def learn(space: Space, schedule: Schedule | None, outcome: Outcome[ChaosRun]) -> None:
    """The job's traits a run shows, into the space's pruning: once a run shows a job without state,
    schedules aimed at a state store commit are left out (``no_state_store``); once it shows an output that
    is not a Kafka topic, the output leader's (``no_kafka_output``); once a run of a schedule shows a
    moment inside the tasks never comes (``tasks_running`` on a job whose tasks write no file), every step
    aimed there (``moment_never_came``). The control run teaches the first two before any schedule runs."""
    run = outcome.run
    if run is None:
        return
    if space.stateful is None:
        space.stateful = stateful(run)
    if space.kafka_output is None:
        space.kafka_output = kafka_output(run)
    if schedule is not None:
        space.never_comes |= phases_never_came(run, schedule)


def setting_of(outcome: Outcome[ChaosRun]) -> Setting:
    """The setting a run of a schedule ran under (its seed, the job's trigger as its batches show it, the
    checkpoint's place), for a replay token."""
    run = outcome.run
    if run is None:
        return Setting()
    facts = run.facts
    starts = [b.start for b in run.history.micro_batches]
    return Setting(facts.setup.seed if facts.setup else None, trigger_words(observed_trigger(starts)),
                   facts.job.checkpoint_storage if facts.job else None)


@dataclass(frozen=True)
class ExploreContext:
    """What the session gives an explored test besides its spec: the ``memory``, the test's workload
    ``seed`` (the random order's seed too)."""

    memory: Memory
    seed: int | None = None


def explore_item(nodeid: str, spec: ExploreSpec, func: Callable[..., Any], funcargs: dict[str, Any],
                 check: Callable[[list[Any]], None], context: ExploreContext) -> Explored:
    """Explore one test (or replay its token): ``func`` the test function, ``funcargs`` its fixture
    values (``chaos`` among them), ``check`` the plugin's after-body checks of a run."""
    harness = funcargs.get("chaos")
    if harness is None:
        raise ExploreUsageError(f"{spec.source}: {nodeid} does not take the chaos fixture: its body must call "
                                "chaos.run(...) -- add the chaos argument")
    body = Body(func, funcargs, harness, check, share=spec.history == "shared" and spec.replay is None)
    space = Space(spec.kinds())

    def run_schedule(schedule: Schedule | None, alone: bool = False) -> Outcome:
        try:
            out = body.run(schedule, alone=alone)
        except NoChaosRun:
            raise ExploreUsageError(f"{spec.source}: {nodeid} never called chaos.run: the body is the property "
                                    "the search runs under each schedule, and a run of the job is what it "
                                    "breaks -- call chaos.run(...) in it") from None
        learn(space, schedule, out)
        return out

    try:
        if spec.replay is not None:
            return _replayed(nodeid, spec, run_schedule)
        entry = context.memory.load(nodeid)
        report = _search(spec, space, run_schedule, entry, context.seed)
    finally:
        body.finish()
    explored = Explored(nodeid, spec, report, memory=context.memory.where,
                        histories=histories_of(body, check), unshared=harness.runner.unshared)
    context.memory.save(nodeid, entry, explored.report)
    report = explored.report
    if report.found is not None:
        explored.token = encode(report.found.schedule, nodeid, plugin_version(), setting_of(report.found.outcome))
    explored.flaky_tokens = [encode(f.schedule, nodeid, plugin_version(), setting_of(f.failed)) for f in report.flaky]
    explored.keep = _kept(report)
    return explored


def _search(spec: ExploreSpec, space: Space, run_schedule: Callable[..., Outcome],
            entry: Entry | None, seed: int | None) -> Report:
    """The search of ``spec`` over ``space``, after a control run, remembering ``entry``."""
    recall = entry.recall(spec.faults) if entry is not None else Recall()

    def order() -> Iterator[Schedule]:
        shuffle = random.Random(seed) if spec.order == "random" else None
        return space.schedules(spec.max_faults, shuffle=shuffle)

    return Explorer(space, run_schedule, spec.limits(), order=order, control=lambda: run_schedule(None),
                    recall=recall, alone=lambda schedule: run_schedule(schedule, alone=True)).search()


def _replayed(nodeid: str, spec: ExploreSpec, run_schedule: Callable[..., Outcome]) -> Explored:
    """The replay of the spec's token, on a job of its own; refused (inconclusive) when the job's trigger is not
    the token's."""
    assert spec.replay is not None
    token = spec.replay
    report = replay(token.schedule, lambda schedule: run_schedule(schedule, alone=True))
    explored = Explored(nodeid, spec, report)
    last = report.runs[-1].outcome if report.runs else None
    if last is not None:
        explored.replay_differs = token.setting.differs(setting_of(last), fields=("trigger",))
    if report.found is not None and explored.replay_differs is None:
        explored.token = encode(report.found.schedule, nodeid, plugin_version(), token.setting)
    explored.keep = _kept(report)
    return explored


def _kept(report: Report) -> list[ChaosRun]:
    """The run the session's reports show: the falsifying one, else the last that gave a verdict."""
    decided = [report.found.outcome] if report.found is not None else [
        r.outcome for r in report.runs if r.schedule is not None and r.outcome.error is None
        and r.outcome.all_hit(r.schedule)]
    run = decided[-1].run if decided else None
    return [run] if run is not None else []
