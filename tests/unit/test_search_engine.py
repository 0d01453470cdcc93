"""The schedule search on synthetic systems with planted bugs (issue 33): it finds them within the
budget, shrinks to the minimal schedule, reports flakiness, counts a missed aim as not run, and never
runs what a pruning rule left out."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from search_catalogue import CATALOGUE

from pytest_streamchaos.search.engine import explore, replay
from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.schedule import Landed, Outcome, Schedule, Step
from pytest_streamchaos.search.space import Space as _Space


def Space(kinds, **kw):  # noqa: N802  (the synthetic catalogue's Space)
    return _Space(kinds, catalogue=CATALOGUE, **kw)

ALL = ["kill_driver", "kill_executor", "kill_worker", "kill_broker"]
DOV = Step("kill_driver", "driver", "output_visible_uncommitted")
EXEC_RUNNING = Step("kill_executor", "executor@worker-0", "tasks_running")


class System:
    """A synthetic system under test: ``fails(schedule, call)`` is its property's violation; ``misses(step)``
    says which aims never land (they land ``between_batches`` instead, and the property sees that)."""

    def __init__(self, fails: Callable[[Schedule, int], bool],
                 misses: Callable[[Step], bool] = lambda step: False) -> None:
        self.fails = fails
        self.misses = misses
        self.calls: list[Schedule] = []

    def __call__(self, schedule: Schedule) -> Outcome:
        n = len(self.calls)
        self.calls.append(schedule)
        landed = tuple(Landed(not self.misses(s), 7 + s.batch, "between_batches" if self.misses(s) else s.phase)
                       for s in schedule.steps)
        as_landed = Schedule(tuple(Step(s.kind, s.target, x.phase or s.phase, s.batch)
                                   for s, x in zip(schedule.steps, landed, strict=True)))
        failed = self.fails(as_landed, n)
        return Outcome(failed, landed, message="assert run.duplicates == 0" if failed else "", seconds=40.0)


def has(*wanted: tuple[str, str]) -> Callable[[Schedule, int], bool]:
    """Fails when the schedule has every (kind, phase) of ``wanted``, in that order."""
    def fails(schedule: Schedule, call: int) -> bool:
        cells = [s.cell for s in schedule.steps]
        pos = 0
        for w in wanted:
            try:
                pos = cells.index(w, pos) + 1
            except ValueError:
                return False
        return True
    return fails


def test_finds_a_driver_kill_between_output_and_commit_first_whatever_the_kinds_order():
    system = System(has(("kill_driver", "output_visible_uncommitted")))
    report = explore(Space(list(reversed(ALL))), system, budget=10)
    assert report.found is not None and report.found.schedule == Schedule.of(DOV)
    # output_visible_uncommitted is the likeliest phase: every kind's cell of it comes before the others
    assert report.first_violation_at is not None and report.first_violation_at <= 3
    assert report.runs_for("confirm") == 1 and report.flaky == []
    assert "kill_driver at batch 7 (+0), phase output_visible_uncommitted (hit)" in report.summary()[0]


def test_a_pair_that_fails_only_together_is_found_and_not_shrunk_below_two_faults():
    system = System(has(("kill_executor", "tasks_running"), ("kill_driver", "output_visible_uncommitted")))
    space = Space(["kill_driver", "kill_executor"], stateful=False)
    report = explore(space, system, budget=20)
    assert report.found is not None, [r.schedule.words() for r in report.runs]
    assert report.found.schedule == Schedule.of(EXEC_RUNNING, DOV)
    # every single fault ran first, and none of them failed
    singles = [r for r in report.runs if len(r.schedule) == 1 and r.purpose == "explore"]
    assert len(singles) == len(space.singles()) and not any(r.outcome.falsified for r in singles)
    assert report.first_violation_at is not None and report.first_violation_at <= 20


def test_a_triple_shrinks_to_the_one_fault_that_matters_at_the_earliest_batch():
    big = Schedule.of(Step("kill_worker", "worker-0", "tasks_running", 0), Step("kill_driver", "driver",
                      "output_visible_uncommitted", 1), Step("kill_driver", "driver", "output_visible_uncommitted", 2))
    system = System(has(("kill_driver", "output_visible_uncommitted")))
    report = explore(Space(ALL), system, budget=1, schedules=[big], shrink_budget=40)
    assert report.found is not None
    assert report.found.original == big
    assert report.found.schedule == Schedule.of(DOV)  # one fault, batch anchor 0
    sizes = [len(s) for s in report.found.path]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 1


def test_shrinking_takes_the_simplest_target_and_phase_that_still_fail():
    worker = KindInfo("kill_worker", "executor", ("busiest", "worker-1"),
                      ("between_batches", "tasks_running", "output_visible_uncommitted"))
    space = Space([worker])
    # fails whenever a worker dies once its batch's tasks started (tasks_running or later)
    system = System(lambda s, n: any(x.phase in ("tasks_running", "output_visible_uncommitted") for x in s.steps))
    start = Schedule.of(Step("kill_worker", "worker-1", "output_visible_uncommitted", 3))
    report = explore(space, system, budget=1, schedules=[start], shrink_budget=40)
    assert report.found is not None
    assert report.found.schedule == Schedule.of(Step("kill_worker", "busiest", "tasks_running", 0))


def test_each_accepted_shrink_failed_twice():
    system = System(has(("kill_driver", "output_visible_uncommitted")))
    big = Schedule.of(Step("kill_executor", "executor@worker-0", "tasks_running"), DOV)
    report = explore(Space(ALL), system, budget=1, schedules=[big])
    assert report.found is not None
    for accepted in report.found.path:
        runs = [r for r in report.runs if r.schedule == accepted]
        assert [r.purpose for r in runs] == ["shrink", "confirm"] and all(r.outcome.falsified for r in runs)


def test_a_violation_that_does_not_come_back_is_flaky_and_fails_the_search():
    # the property fails once, on the third run, whatever its schedule: a bug that depends on timing
    system = System(lambda s, n: n == 2)
    report = explore(Space(ALL, stateful=False), system, budget=6)
    assert report.found is None and not report.passed and report.verdict == "falsified"
    assert len(report.flaky) == 1 and report.stop == "flaky"
    flaky = report.flaky[0]
    assert flaky.schedule == system.calls[2] and flaky.passed is not None
    assert "failed once, passed when re-run (flaky)" in report.summary()[0]
    assert report.runs_for("explore") == 3  # it stopped there


def test_with_flaky_fails_off_a_flaky_violation_is_reported_and_the_search_goes_on():
    system = System(lambda s, n: n == 2)
    report = explore(Space(ALL, stateful=False), system, budget=6, flaky_fails=False)
    assert report.passed and len(report.flaky) == 1
    assert report.runs_for("explore") == 6


def test_a_missed_aim_counts_as_not_run_and_is_tried_once_more():
    # the state-commit moment never comes (the aim always lands elsewhere): even a property that would fail
    # there is not falsified, and the hit rate says so
    system = System(has(("kill_executor", "state_commit")), misses=lambda s: s.phase == "state_commit")
    report = explore(Space(["kill_executor"]), system, budget=8)
    assert report.found is None
    single = Schedule.of(Step("kill_executor", "executor@worker-0", "state_commit"))
    assert [r.purpose for r in report.runs if r.schedule == single] == ["explore", "retry"]
    missed = [r for r in report.runs if not r.outcome.all_hit(r.schedule)]
    assert missed and all(any(s.phase == "state_commit" for s in r.schedule.steps) for r in missed)
    cov = report.coverage
    assert ("kill_executor", "state_commit") not in cov.cells_covered
    assert cov.by_phase["state_commit"][0] == 0 and cov.by_phase["state_commit"][1] >= 2
    assert cov.hit_rate is not None and cov.hit_rate < 1.0
    assert cov.schedules_run == cov.attempts - len(missed)


def test_a_failure_under_a_missed_aim_is_not_a_finding():
    system = System(lambda s, n: True, misses=lambda s: True)
    report = explore(Space(["kill_driver"]), system, budget=4)
    assert report.found is None and report.first_violation_at is None
    assert report.coverage.hits == 0 and report.coverage.schedules_run == 0


def test_a_run_that_errors_before_its_first_fault_ends_the_search_as_inconclusive():
    def broken(schedule: Schedule) -> Outcome:
        return Outcome(True, (), error="the job exited (code 1) before its streaming query started: NameError")

    report = explore(Space(["kill_driver"]), broken, budget=3)
    assert report.found is None and report.coverage.errors == 1 and report.stop == "no_start"
    assert report.verdict == "inconclusive" and not report.passed
    assert report.first_error() == "the job exited (code 1) before its streaming query started: NameError"
    assert "1 without a verdict" in report.coverage.summary()


def test_an_error_after_a_fault_fired_is_a_run_without_a_verdict_and_the_search_goes_on():
    def broken(schedule: Schedule) -> Outcome:
        return Outcome(False, (Landed(True, 7, schedule.steps[0].phase),), error="the driver never came back")

    report = explore(Space(["kill_driver"]), broken, budget=3)
    assert report.coverage.errors == 3 and report.stop in ("budget", "space")
    assert report.verdict == "inconclusive" and report.verdicts == 0


def test_too_few_verdicts_is_inconclusive_not_a_pass():
    system = System(lambda s, n: False, misses=lambda s: s.phase != "between_batches")
    report = explore(Space(["kill_driver"], stateful=False), system, budget=6, min_verdicts=2)
    assert report.verdicts == 1 and report.verdict == "inconclusive"
    assert "1 schedules gave a verdict (needed 2)" in report.coverage_line()
    enough = explore(Space(["kill_driver"], stateful=False), System(lambda s, n: False), budget=6)
    assert enough.passed and enough.limits.verdicts_needed == 3


def test_a_correct_system_passes_within_the_budget_and_says_what_was_covered():
    system = System(lambda s, n: False)
    space = Space(ALL, stateful=False)
    report = explore(space, system, budget=25)
    assert report.passed and report.flaky == []
    assert len(system.calls) == 25 == report.runs_for("explore")
    cov = report.coverage
    assert cov.cells_covered == space.cells()  # 25 runs cover every single-fault cell
    assert set(cov.pruned) == {"no_state_store", "clean_restart", "idle_executor", "idle_broker",
                               "interchangeable_targets"}
    assert cov.hit_rate == 1.0
    line = report.coverage_line()
    singles = len(space.singles())
    assert line.startswith(f"25 schedules gave a verdict (needed 12): singles {singles}/{singles}, pairs "
                           f"{25 - singles}/{2 * singles * singles}, triples 0/"), line
    aims = singles + 2 * (25 - singles)
    assert f"aims hit {aims}/{aims}" in line and "runs: explore 25" in line
    assert line.endswith("stopped: the budget was spent")


def test_pruned_steps_are_never_run():
    system = System(lambda s, n: False)
    space = Space(ALL, stateful=False)
    explore(space, system, budget=200)
    ran = {s for sched in system.calls for s in sched.steps}
    assert not any(space.pruned(Step(s.kind, s.target, s.phase)) for s in ran)
    assert not any(s.phase == "state_commit" for s in ran)
    assert not any(s.kind == "kill_driver" and s.phase == "offsets_logged" for s in ran)


def test_shrinking_stops_at_its_budget():
    system = System(has(("kill_driver", "output_visible_uncommitted")))
    big = Schedule.of(Step("kill_worker", "worker-0", "tasks_running"), DOV, Step("kill_driver", "driver",
                      "output_visible_uncommitted", 2))
    report = explore(Space(ALL), system, budget=1, schedules=[big], shrink_budget=3)
    assert report.runs_for("shrink") + report.runs_for("confirm") <= 3 + 1
    assert report.found is not None


@pytest.mark.parametrize("budget", [0, -1, 2.5, "10"])
def test_a_budget_below_one_is_refused_naming_the_fix(budget):
    with pytest.raises(ValueError, match=r"budget=.*an int >= 1"):
        explore(Space(ALL), System(lambda s, n: False), budget=budget)


def test_an_unknown_fault_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown fault 'kill_drvier'; the search can aim kill_driver, "):
        Space(["kill_drvier"])


def test_replay_runs_exactly_the_schedule_until_it_lands():
    misses = iter([True, False])
    system = System(has(("kill_driver", "output_visible_uncommitted")))

    def run(schedule: Schedule) -> Outcome:
        out = system(schedule)
        return Outcome(out.falsified, (Landed(False),)) if next(misses) else out

    report = replay(Schedule.of(DOV), run)
    assert [r.purpose for r in report.runs] == ["replay", "replay"]
    assert report.found is not None and report.found.schedule == Schedule.of(DOV)


def test_a_missed_schedule_is_not_retried_once_a_run_showed_its_moment_never_comes():
    """The output leader's step misses on a job whose output is not a Kafka topic; the run shows it, and
    the retry the miss earned is dropped (``no_kafka_output``), as are the output leader's other cells."""
    space = Space(["kill_broker"], stateful=False)

    def run(schedule: Schedule) -> Outcome:
        space.kafka_output = False  # what the body learns from the run
        return system(schedule)

    system = System(lambda s, n: False, misses=lambda step: step.target == "output_leader")
    report = explore(space, run, budget=10)
    targets = [s.target for sched in system.calls for s in sched.steps]
    assert targets[0] == "output_leader"  # the likeliest phase first: the output's, before the commit
    assert set(targets[1:]) == {"input_leader"}  # no retry of it, no other output leader cell
    assert report.runs_for("retry") == 0 and report.passed
    assert "no_kafka_output" in space.pruned_cells()


def test_a_moment_a_run_showed_never_comes_is_neither_retried_nor_searched_again():
    """A Kafka-to-Kafka job's tasks write no file: the first step aimed at ``tasks_running`` never fires;
    the run shows it (the body learns ``never_comes``), its retry is dropped and no later schedule aims
    there, so the budget goes to schedules that can land."""
    space = Space(["kill_driver", "kill_executor"], stateful=False)

    def run(schedule: Schedule) -> Outcome:
        if schedule.steps[0].phase == "tasks_running":
            space.never_comes.add("tasks_running")  # what the body learns from such a run
        return system(schedule)

    system = System(lambda s, n: False, misses=lambda step: step.phase == "tasks_running")
    report = explore(space, run, budget=12)
    phases = [[s.phase for s in sched.steps] for sched in system.calls]
    assert sum("tasks_running" in p for p in phases) == 1 and report.runs_for("retry") == 0
    assert len(system.calls) == 12 and report.coverage.schedules_run == 11
    assert "moment_never_came" in space.pruned_cells()


# -- a search you can trust: the control run, the time budget, memory, the random order (issue 37) ------

def test_the_control_run_comes_first_and_a_property_that_fails_without_faults_fails_as_such():
    system = System(lambda s, n: False)
    control = Outcome(True, (), message="assert run.lost == 0")
    report = explore(Space(["kill_driver"]), system, budget=5, control=lambda: control)
    assert report.verdict == "fails_without_faults" and report.stop == "control"
    assert system.calls == [] and [r.purpose for r in report.runs] == ["control"]
    passing = explore(Space(["kill_driver"]), system, budget=2, control=lambda: Outcome(False))
    assert [r.purpose for r in passing.runs] == ["control", "explore", "explore"] and passing.passed


def test_a_control_run_that_cannot_run_the_job_stops_the_search_before_any_schedule():
    system = System(lambda s, n: False)
    report = explore(Space(["kill_driver"]), system, budget=5,
                     control=lambda: Outcome(False, error="NameError: name 'spark' is not defined"))
    assert report.verdict == "inconclusive" and report.stop == "no_start" and system.calls == []
    assert report.first_error() == "NameError: name 'spark' is not defined"


class Clock:
    """A clock each run advances by its own ``seconds`` (the System's runs take 40 s)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wrap(self, run):
        def timed(schedule: Schedule) -> Outcome:
            out = run(schedule)
            self.now += out.seconds
            return out
        return timed


def test_max_seconds_bounds_the_whole_search_and_says_so():
    clock = Clock()
    system = System(lambda s, n: False)
    report = explore(Space(ALL, stateful=False), clock.wrap(system), budget=20, max_seconds=130, min_verdicts=1,
                     clock=clock)
    # 40 s a run: after three (120 s) a fourth would end at 160 s, past the limit
    assert len(system.calls) == 3 and report.stop == "time" and clock.now <= 130
    assert report.passed and report.coverage_line().endswith("stopped: max_seconds was reached")


def test_a_violation_the_time_left_no_room_to_confirm_still_fails_unconfirmed():
    clock = Clock()
    system = System(has(("kill_driver", "output_visible_uncommitted")))
    report = explore(Space(["kill_driver"]), clock.wrap(system), budget=5, max_seconds=60, clock=clock)
    assert report.found is not None and not report.found.confirmed and report.verdict == "falsified"
    assert report.stop == "time" and len(system.calls) == 1


def test_shrinking_stops_when_the_time_is_spent_and_keeps_the_smallest_so_far():
    clock = Clock()
    system = System(has(("kill_driver", "output_visible_uncommitted")))
    big = Schedule.of(Step("kill_worker", "worker-0", "tasks_running"), DOV)
    report = explore(Space(ALL), clock.wrap(system), budget=1, schedules=[big], max_seconds=100, clock=clock)
    assert report.found is not None and report.found.confirmed and report.found.schedule == big
    assert clock.now <= 100


def test_remembered_schedules_run_first_and_tried_ones_are_left_for_last():
    from pytest_streamchaos.search.engine import Recall

    space = Space(["kill_driver", "kill_executor"], stateful=False)
    order = list(space.schedules())
    remembered = order[7]
    tried = frozenset(order[:3])
    system = System(lambda s, n: False)
    report = explore(space, system, budget=4, recall=Recall(first=(remembered,), tried=tried))
    assert [r.purpose for r in report.runs] == ["memory", "explore", "explore", "explore"]
    assert system.calls == [remembered, order[3], order[4], order[5]]
    assert report.from_memory == 1 and "1 from memory" in report.coverage_line()


def test_when_every_schedule_was_tried_before_the_order_starts_over():
    from pytest_streamchaos.search.engine import Recall

    space = Space(["kill_driver"], stateful=False)
    order = list(space.schedules(max_faults=1))
    system = System(lambda s, n: False)
    report = explore(space, system, budget=len(order), max_faults=1, recall=Recall(tried=frozenset(order)))
    assert system.calls == order and report.cycled and "started over" in report.coverage_line()


def test_a_remembered_failure_is_confirmed_and_shrunk_like_a_new_one():
    from pytest_streamchaos.search.engine import Recall

    system = System(has(("kill_driver", "output_visible_uncommitted")))
    pair = Schedule.of(Step("kill_executor", "executor@worker-0", "tasks_running"), DOV)
    report = explore(Space(["kill_driver", "kill_executor"]), system, budget=5, recall=Recall(first=(pair,)))
    assert report.runs[0].purpose == "memory" and report.first_violation_at == 1
    assert report.found is not None and report.found.schedule == Schedule.of(DOV)


def test_the_random_order_holds_the_same_schedules_and_is_seeded():
    import random

    space = Space(ALL, stateful=False)
    fixed = list(space.schedules())
    a = list(space.schedules(shuffle=random.Random(5)))
    b = list(space.schedules(shuffle=random.Random(5)))
    assert a == b and a != fixed and sorted(map(repr, a)) == sorted(map(repr, fixed))
    assert sum(space.count().values()) == len(fixed)


@pytest.mark.parametrize(("knobs", "says"), [
    ({"budget": 4, "min_verdicts": 5}, r"min_verdicts=5 must be between 1 and the budget \(4\)"),
    ({"budget": 4, "max_seconds": 0}, r"max_seconds=0 must be > 0"),
    ({"budget": 4, "max_seconds": -3.0}, r"max_seconds=-3.0 must be > 0"),
])
def test_limits_that_no_search_could_meet_are_refused_naming_the_fix(knobs, says):
    from pytest_streamchaos.search.engine import Limits

    with pytest.raises(ValueError, match=says):
        Limits(**knobs)


def test_with_one_history_a_violation_is_confirmed_and_shrunk_alone():
    """Exploring runs share one running job (``run_schedule``); a violation seen there is confirmed, and shrunk,
    by runs on a job of their own (``alone``): a violation that only comes with what ran before it in the
    history is flaky, not found."""
    fails = has(("kill_driver", "output_visible_uncommitted"))
    shared, alone = System(fails), System(fails)
    report = explore(Space(["kill_driver", "kill_executor"]), shared, budget=10, alone=alone)
    assert report.found is not None and report.found.schedule == Schedule.of(DOV)
    assert len(shared.calls) == report.runs_for("explore") >= 1
    assert len(alone.calls) == report.runs_for("confirm") + report.runs_for("shrink") >= 1
    # the same bug only in the shared history (it needs what ran before it there): flaky, not found
    history_only = explore(Space(["kill_driver", "kill_executor"]), System(fails), budget=10,
                           alone=System(lambda schedule, call: False))
    assert history_only.found is None and len(history_only.flaky) == 1 and history_only.verdict == "falsified"
