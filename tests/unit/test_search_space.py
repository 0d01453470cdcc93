"""The search's space, order, pruning rules, shrink neighbours and replay tokens (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from search_catalogue import CATALOGUE

from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.schedule import PHASES, Schedule, Step
from pytest_streamchaos.search.shrink import candidates, size
from pytest_streamchaos.search.space import Space as _Space
from pytest_streamchaos.search.token import Replay, ReplayTokenError, Setting, decode, encode


def Space(kinds, **kw):  # noqa: N802  (the synthetic catalogue's Space)
    return _Space(kinds, catalogue=CATALOGUE, **kw)

ALL = list(CATALOGUE)
NODE = "tests/chaos/test_orders.py::test_orders_job_is_exactly_once"


def test_single_faults_come_first_likeliest_phase_first_then_pairs_then_triples():
    space = Space(ALL, stateful=True)
    order = list(space.schedules())
    sizes = [len(s) for s in order]
    assert sizes == sorted(sizes) and set(sizes) == {1, 2, 3}
    singles = [s.steps[0] for s in order if len(s) == 1]
    prios = [PHASES[s.phase].priority for s in singles]
    assert prios == sorted(prios)
    assert singles[0] == Step("kill_driver", "driver", "output_visible_uncommitted")
    assert len(set(order)) == len(order)  # no schedule twice


@pytest.mark.parametrize("step, rule, instead", [
    (Step("kill_driver", "driver", "offsets_logged"), "clean_restart", "between_batches"),
    (Step("kill_executor", "executor@worker-0", "offsets_logged"), "idle_executor", "between_batches"),
    (Step("kill_worker", "worker-0", "output_visible_uncommitted"), "idle_executor", "between_batches"),
    (Step("kill_broker", "input_leader", "output_visible_uncommitted"), "idle_broker", "between_batches"),
    (Step("kill_broker", "output_leader", "offsets_logged"), "idle_broker", "between_batches"),
    (Step("kill_worker", "worker-1", "tasks_running"), "interchangeable_targets", "tasks_running"),
    (Step("kill_executor", "executor@worker-0", "state_commit"), "no_state_store", None),
])
def test_each_rule_folds_the_cells_it_says(step, rule, instead):
    why = Space(ALL, stateful=False).pruned(step)
    assert why is not None and why.rule.name == rule
    assert (why.instead.phase if why.instead else None) == instead
    assert why.rule.why  # every rule says why, for the report


def test_what_the_rules_leave_searched():
    space = Space(ALL, stateful=True)
    assert space.pruned(Step("kill_driver", "driver", "tasks_running")) is None  # a Kafka sink writes in tasks
    assert space.pruned(Step("kill_executor", "executor@worker-0", "tasks_running")) is None
    assert space.pruned(Step("kill_executor", "executor@worker-0", "state_commit")) is None  # stateful here
    cells = space.cells()
    assert ("kill_driver", "offsets_logged") not in cells and ("kill_driver", "between_batches") in cells
    assert sum(len(v) for v in space.pruned_cells().values()) + len(space.singles()) == len(space.all_steps())


def test_a_leader_is_searched_where_the_job_reads_or_writes_through_it():
    """The input's leader while a batch is planned (its end offsets fixed by that leader) and while its
    tasks fetch; the output's while the tasks send and once they sent, before the commit; both between
    batches, which stands for the phases where nothing of the job is in flight on them."""
    space = Space(["kill_broker"], stateful=False)
    searched = {(s.target, s.phase) for s in space.singles()}
    assert searched == {("input_leader", "between_batches"), ("input_leader", "offsets_logged"),
                        ("input_leader", "tasks_running"), ("output_leader", "between_batches"),
                        ("output_leader", "tasks_running"), ("output_leader", "output_visible_uncommitted")}
    assert space.pruned_cells() == {"idle_broker": ["kill_broker input_leader output_visible_uncommitted",
                                                    "kill_broker output_leader offsets_logged"]}
    # a leader the kind says nothing of (which topic it serves): idle at both, as before
    plain = KindInfo("kill_broker", "broker", ("leader",), ("offsets_logged", "output_visible_uncommitted",
                                                              "between_batches"))
    assert [s.phase for s in _Space([plain]).singles()] == ["between_batches"]


def test_an_output_leader_is_left_out_once_the_job_shows_no_kafka_output():
    space = Space(["kill_broker"], stateful=False)
    assert space.kafka_output is None and any(s.target == "output_leader" for s in space.singles())
    space.kafka_output = False
    assert {s.target for s in space.singles()} == {"input_leader"}
    pruned = space.pruned_cells()
    assert sorted(pruned["no_kafka_output"]) == sorted(
        f"kill_broker output_leader {p}" for p in ("between_batches", "offsets_logged", "tasks_running",
                                                    "output_visible_uncommitted"))
    assert space.canonical(Step("kill_broker", "output_leader", "tasks_running")) is None
    assert Space(["kill_broker"], kafka_output=True).singles() == Space(["kill_broker"]).singles()


def test_what_a_kind_serves_must_be_one_of_its_targets_and_input_or_output():
    with pytest.raises(ValueError, match=r"serves \('leader', 'both'\): a target of \('leader',\) and one of "
                                         "input, output"):
        KindInfo("kill_broker", "broker", ("leader",), ("tasks_running",), serves=(("leader", "both"),))
    with pytest.raises(ValueError, match="serves"):
        KindInfo("kill_broker", "broker", ("leader",), ("tasks_running",), serves=(("follower", "input"),))


def test_a_kind_must_say_what_it_takes_down_and_name_real_phases():
    with pytest.raises(ValueError, match="takes_down='network'; one of driver, executor, broker, other"):
        KindInfo("network_partition", "network", ("kafka",), ("tasks_running",))
    with pytest.raises(ValueError, match="unknown phase 'sink_written'; the phases are between_batches, "):
        KindInfo("kill_driver", "driver", ("driver",), ("sink_written",))


def test_a_schedule_is_never_empty_and_its_anchors_never_decrease():
    with pytest.raises(ValueError, match="at least one step"):
        Schedule(())
    with pytest.raises(ValueError, match=r"anchors never decrease \(got \[2, 1\]\)"):
        Schedule.of(Step("kill_driver", "driver", "tasks_running", 2), Step("kill_driver", "driver",
                                                                           "tasks_running", 1))


SPACE = Space(ALL, stateful=True)
steps = st.builds(lambda s, b: Step(s.kind, s.target, s.phase, b), st.sampled_from(SPACE.all_steps()),
                  st.integers(0, 4))
schedules = st.lists(steps, min_size=1, max_size=3).map(lambda xs: Schedule(tuple(sorted(xs, key=lambda s: s.batch))))


@settings(max_examples=200, deadline=None)
@given(schedules)
def test_every_shrink_neighbour_is_strictly_smaller_searched_and_unique(schedule):
    seen = []
    for cand in candidates(schedule, SPACE):
        assert size(cand, SPACE) < size(schedule, SPACE)
        assert all(SPACE.pruned(s) is None for s in cand.steps)
        assert cand not in seen
        seen.append(cand)


@settings(max_examples=200, deadline=None)
@given(schedules, st.builds(Setting, st.none() | st.integers(0, 2**32 - 1),
                            st.sampled_from([None, "5 s", "as fast as possible"]), st.sampled_from([None, "local",
                                                                                                   "hdfs"])))
def test_a_token_gives_back_its_schedule_and_setting(schedule, setting):
    token = encode(schedule, NODE, "0.1.0", setting)
    assert token.startswith("sc2.") and " " not in token
    assert decode(token, NODE, "0.1.0") == Replay(schedule, setting)


def test_a_setting_names_what_a_replay_changed_and_the_fix():
    made = Setting(seed=7, trigger="5 s", checkpoint="local")
    assert made.differs(Setting(seed=7, trigger=None, checkpoint="local")) is None  # unknown agrees
    assert "ran with trigger 5 s, this run's trigger is as fast as possible" in str(
        made.differs(Setting(7, "as fast as possible", "local")))
    assert made.differs(Setting(8, "5 s", "local"), fields=("trigger",)) is None


def test_a_token_of_the_first_version_is_refused_naming_what_it_lacks():
    with pytest.raises(ReplayTokenError, match=r"made by pytest-streamchaos 0.1 \(sc1: without the seed"):
        decode("sc1.eNpNjs0KwjAQhN9lzyGN.0227095d", NODE, "0.2.0")


def test_a_token_of_another_test_is_refused_naming_both():
    token = encode(Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted", 2)), NODE, "0.1.0")
    other = "tests/chaos/test_orders.py::test_orders_job_survives_a_worker"
    with pytest.raises(ReplayTokenError, match=f"replays test {NODE}, not {other}; run `pytest {NODE} "):
        decode(token, other, "0.1.0")


def test_a_token_of_another_version_is_refused_naming_both():
    token = encode(Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted")), NODE, "0.1.0")
    with pytest.raises(ReplayTokenError, match=r"made by pytest-streamchaos 0.1.0, this is 0.2.0"):
        decode(token, NODE, "0.2.0")


@pytest.mark.parametrize("cut", [lambda t: t[:-3], lambda t: t.replace("sc2.", "sc3."), lambda t: "hello",
                                 lambda t: t[:20] + ("B" if t[20] == "A" else "A") + t[21:]])
def test_a_damaged_token_is_refused_in_one_line(cut):
    token = encode(Schedule.of(Step("kill_worker", "worker-0", "tasks_running", 1)), NODE, "0.1.0")
    with pytest.raises(ReplayTokenError, match=r"not a replay token .*copy the whole `replay:` line") as err:
        decode(cut(token), NODE, "0.1.0")
    assert "\n" not in str(err.value)


def test_a_schedule_in_words():
    s = Schedule.of(Step("kill_executor", "executor@worker-0", "tasks_running"),
                    Step("kill_driver", "driver", "output_visible_uncommitted", 1))
    assert s.words() == ("kill_executor on executor@worker-0 at batch +0, phase tasks_running; then "
                         "kill_driver at batch +1, phase output_visible_uncommitted")


def test_a_moment_inside_the_tasks_a_run_showed_never_comes_is_left_out_for_every_kind():
    space = Space(["kill_driver", "kill_executor", "kill_broker"], stateful=False, kafka_output=True)
    assert any(s.phase == "tasks_running" for s in space.singles())
    space.never_comes.add("tasks_running")
    assert all(s.phase != "tasks_running" for sched in space.schedules(2) for s in sched.steps)
    pruned = space.pruned_cells()["moment_never_came"]
    assert {c.split()[0] for c in pruned} == {"kill_driver", "kill_executor", "kill_broker"}
    assert all(c.endswith(" tasks_running") for c in pruned)
    assert space.canonical(Step("kill_driver", "driver", "tasks_running")) is None


def test_only_the_moments_inside_the_tasks_can_be_missing_from_a_job():
    # a job without the driver's phases does not run batches at all: those are never learnt missing
    assert {p.name for p in PHASES.values() if p.in_tasks} == {"tasks_running", "state_commit"}
