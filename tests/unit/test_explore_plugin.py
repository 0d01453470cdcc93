"""``@explore``, ``--chaos-explore`` and ``--chaos-replay`` end to end in pytester sessions: the mark's
and the options' refusals (one line, before anything runs), the search over the test body, the failure
with its replay line, the replay, a flaky violation, the summary and the JSON's ``explore`` key.

No stack: the conftest's ``chaos`` fixture is a ``ChaosFixture`` whose ``run`` hands the harness's repeats
(``_repeated``, the test seam) runs that judge a synthetic trace of a system with a planted moment-bug:
records come out twice when the plan has ``BUG`` (``kill_driver`` aimed at ``output_visible_uncommitted``
unless the environment says otherwise; ``always``: with no fault too); each fault lands in its phase, except
the phases in ``MISS`` (their aims miss); with ``FLAKY=1`` the bug shows once, never again; with ``BROKEN=1``
the job never starts. (On real jobs: tests/chaos/test_explore.py.)
"""

import json
import re

import pytest

from pytest_streamchaos.search.schedule import Schedule, Step
from pytest_streamchaos.search.token import Setting, encode, plugin_version
from pytest_streamchaos.workload.seed import workload_seed

CONFTEST = """
import os
import numpy as np
import pytest
from pytest_streamchaos.analysis.result import ChaosRun
from synthetic import stateless_trace
from pytest_streamchaos.facts import RunFacts, RunSetup
from pytest_streamchaos.faults.marks import specs_for_item
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.report.session import COMPARISONS_KEY, RUNS_KEY

BUG = os.environ.get("BUG", "kill_driver:output_visible_uncommitted")
MISS = os.environ.get("MISS", "").split(",")
FLAKY = os.environ.get("FLAKY") == "1"
SHOWN = []  # with FLAKY: the bug shows once, never again

class FakeHarness(ChaosFixture):
    def run(self, job, guarantee="exactly-once", *, repeat=None, faults=True):
        return self._repeated(lambda: self.synthetic(guarantee), repeat=repeat, faults=faults)

    def synthetic(self, guarantee):
        if os.environ.get("BROKEN"):
            raise RuntimeError("the job exited (code 1) before its streaming query started: NameError: name "
                               "'sparkk' is not defined")
        bug = BUG == "always" or any(f"{s.kind}:{s.when}" == BUG and s.when not in MISS for s in self.runner.faults)
        if FLAKY and bug:
            bug = not SHOWN
            SHOWN.append(1)
        trace = stateless_trace(rate=50, duration=30, batch_interval=1.0,
                                faults=[10.0 + i for i in range(len(self.runner.faults))],
                                duplicate=np.arange(100, 150) if bug else None)
        for i, (e, s) in enumerate(zip(trace.timeline, self.runner.faults)):
            aim = {"moment": s.when, "batch": 7 + i, "phase": s.when, "hit": s.when not in MISS, "attempts": 1}
            e.detail.update(fault=s.kind, label=s.label, aim=aim)
        setup = RunSetup(seed=int(os.environ.get("SEED", self.runner.seed)),
                         planned_faults=[s.label for s in self.runner.faults])
        run = ChaosRun.from_trace(trace, guarantee=guarantee, facts=RunFacts(setup=setup))
        self.runs.append(run)
        return run

@pytest.fixture
def chaos(request, tmp_path):
    h = FakeHarness(cluster=None, kafka=None, workdir=tmp_path, faults=specs_for_item(request.node),
                    nodeid=request.node.nodeid)
    request.node.stash[RUNS_KEY] = h.results
    request.node.stash[COMPARISONS_KEY] = h.comparisons
    return h
"""

TESTS = """
import pytest
from pytest_streamchaos import explore, kill_driver

@pytest.mark.chaos
@explore(faults=["kill_executor", "kill_driver"], budget=10)
def test_exactly_once(chaos):
    run = chaos.run("job.py", guarantee="at-least-once")
    assert run.duplicates == 0, f"{run.duplicates} records came out twice"

@pytest.mark.chaos
@kill_driver(after=12)
def test_marked(chaos):
    run = chaos.run("job.py", guarantee="at-least-once")
    assert run.duplicates == 0
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_jobs=TESTS)
    return pytester


def _token(text: str) -> str:
    found = re.search(r"--chaos-replay=(sc2\.\S+)", text)
    assert found, text
    return found.group(1)


def test_the_search_finds_the_planted_moment_and_fails_with_a_replay_line(project: pytest.Pytester) -> None:
    result = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report-dir=out")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*@explore: falsified by kill_driver at batch 7 (+0), phase output_visible_uncommitted (hit)",
        "*50 records came out twice*",
        "*confirmed by a re-run; shrunk in * run(s)*",
        "*search: * gave a verdict*pruned (idle_executor*runs: control 1, explore *, confirm *",
        "replay: pytest test_jobs.py::test_exactly_once --chaos-replay=sc2.*",
    ])
    # the falsifying run's account is in the failure once; the chaos run section refers to it (the short
    # summary is left out: under CI=true pytest prints the whole failure message there again)
    failures = out.split("short test summary info")[0]
    assert failures.count("the falsifying run:") == 1 and failures.count("records came out twice") >= 1
    result.stdout.fnmatch_lines(["*chaos run*", "the run that decided the search is described in the failure above*"])
    # the summary: the same finding, with the aims by phase and the pruning rules' reasons
    result.stdout.fnmatch_lines(["*explored fault schedules*", "*test_exactly_once: FALSIFIED*",
                                 "*pruned by idle_executor: kill_executor busiest offsets_logged*"])
    [doc] = [json.loads(p.read_text()) for p in (project.path / "out").glob("*.json")]
    explored = doc["explore"]
    assert explored["found"]["schedule"] == [{"kind": "kill_driver", "target": "driver",
                                              "phase": "output_visible_uncommitted", "batch": 0}]
    assert explored["token"] == _token(out) and explored["first_violation_at"] >= 1
    assert {r["purpose"] for r in explored["runs"]} >= {"control", "explore", "confirm"}
    assert explored["runs"][0]["purpose"] == "control" and explored["verdict"] == "falsified"
    assert doc["duplicates"] == 50  # the run kept for the report is the falsifying one


def test_the_replay_line_runs_exactly_that_schedule(project: pytest.Pytester) -> None:
    token = _token(project.runpytest("test_jobs.py::test_exactly_once").stdout.str())
    result = project.runpytest("test_jobs.py::test_exactly_once", f"--chaos-replay={token}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*--chaos-replay: replayed kill_driver at batch 7 (+0), phase "
                                 "output_visible_uncommitted (hit)*"])
    assert "shrunk" not in result.stdout.str()


def test_a_token_of_another_test_or_version_is_refused_naming_both(project: pytest.Pytester) -> None:
    token = encode(Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted")),
                   "test_jobs.py::test_exactly_once", plugin_version(), Setting(seed=workload_seed(
                       "test_jobs.py::test_exactly_once"), checkpoint="local"))
    result = project.runpytest("test_jobs.py::test_marked", f"--chaos-replay={token}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*this token replays test test_jobs.py::test_exactly_once, not "
                                 "test_jobs.py::test_marked*"])
    old = encode(Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted")),
                 "test_jobs.py::test_exactly_once", "0.0.1")
    result = project.runpytest("test_jobs.py::test_exactly_once", f"--chaos-replay={old}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*made by pytest-streamchaos 0.0.1, this is*"])
    result = project.runpytest("test_jobs.py::test_exactly_once", f"--chaos-replay={token[:20]}")
    result.stderr.fnmatch_lines(["*not a replay token*copy the whole `replay:` line*"])


def test_a_correct_system_passes_and_the_summary_says_what_was_covered(project: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUG", "none")
    monkeypatch.setenv("MISS", "between_batches")
    result = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report=report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_exactly_once: passed (@explore: kill_executor, kill_driver, budget 10)*",
                                 "*coverage: * schedules gave a verdict (needed 5): singles */*, pairs */*, triples "
                                 "*/* with a verdict; */* fault x phase cells; * pruned*; runs: control 1, explore *"
                                 "stopped: the budget was spent",
                                 "*aims by phase: between_batches 0/*"])
    [doc] = json.loads((project.path / "report.json").read_text())
    coverage = doc["explore"]["coverage"]
    assert coverage["runs"] == {"control": 1, "explore": 10} or coverage["runs"]["explore"] + coverage["runs"].get(
        "retry", 0) == 10
    assert coverage["hits"] < coverage["aims"]  # the missed aims count
    assert coverage["schedules_run"] == sum(r["hit"] for r in doc["explore"]["runs"])
    assert "idle_executor" in coverage["pruned"] and doc["explore"]["found"] is None
    assert doc["explore"]["verdict"] == "passed" and doc["explore"]["stop"] == "budget"


def test_a_violation_that_does_not_come_back_is_flaky_and_fails_the_test(project: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAKY", "1")
    monkeypatch.setenv("BUG", "kill_executor:state_commit")
    result = project.runpytest("test_jobs.py::test_exactly_once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*@explore: flaky: kill_executor on busiest at batch 7 (+0), phase state_commit "
                                 "(hit): failed once, passed when re-run (flaky)*",
                                 "*a bug that depends on timing; to report it as a warning instead: @explore(..., "
                                 "flaky='warn')*",
                                 "*the failing run: 50 records came out twice*", "*the re-run: passed*",
                                 "*replay: pytest test_jobs.py::test_exactly_once --chaos-replay=sc2.*"])
    assert "the failing run:" in result.stdout.str() and "the re-run:" in result.stdout.str()


def test_flaky_warn_turns_a_flaky_finding_into_a_warning(project: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAKY", "1")
    monkeypatch.setenv("BUG", "kill_executor:state_commit")
    project.makeini("[pytest]\nstreamchaos_explore_profiles =\n    lenient: flaky=warn\n")
    result = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-explore-profile=lenient")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*ExploreFlakyWarning: @explore: flaky: kill_executor*"])


def test_chaos_explore_searches_every_chaos_test_with_its_own_fault_marks(project: pytest.Pytester) -> None:
    result = project.runpytest("test_jobs.py::test_marked", "--chaos-explore=4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*--chaos-explore: falsified by kill_driver at batch 7 (+0), phase "
                                 "output_visible_uncommitted (hit)*",
                                 "replay: pytest test_jobs.py::test_marked --chaos-replay=sc2.*"])


@pytest.mark.parametrize(("mark", "says"), [
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_drivr"])',
     "unknown fault 'kill_drivr' (did you mean 'kill_driver'?); the search aims kill_worker"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_driver"], budget=0)',
     "budget=0 must be an int >= 1"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_driver"], budjet=3)',
     "unknown argument 'budjet' (did you mean 'budget'?)"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["pause"])', "'pause' cannot be aimed at a micro-batch phase"),
    ('@pytest.mark.explore(faults=["kill_driver"])', "@explore needs @pytest.mark.chaos on the test"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_namenode"])',
     "kill_namenode: an HDFS fault needs the run's checkpoint on the stack's HDFS"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_driver"], budget=4, min_verdicts=5)',
     "min_verdicts=5 > budget=4: no search of that budget could give that many verdicts"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_driver"], max_seconds=0)',
     "max_seconds=0 must be a number of seconds > 0"),
    ('@pytest.mark.chaos\n@pytest.mark.explore(faults=["kill_driver"], flaky="ignore")',
     "flaky='ignore': use one of 'fail', 'warn'"),
])
def test_bad_input_is_one_line_before_anything_runs(pytester: pytest.Pytester, mark: str, says: str) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(f"import pytest\n\n{mark}\ndef test_it(chaos):\n    raise SystemExit('must not run')\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_it*{says}*"])
    assert "must not run" not in result.stdout.str() + result.stderr.str()


def test_the_decorator_refuses_bad_arguments_when_the_module_is_imported() -> None:
    from pytest_streamchaos import explore

    with pytest.raises(ValueError, match=r"unknown fault 'kill_drvier' \(did you mean 'kill_driver'\?\)"):
        explore(faults=["kill_drvier"])
    with pytest.raises(ValueError, match="budget=-1 must be an int >= 1"):
        explore(faults=["kill_driver"], budget=-1)


def test_a_body_that_never_calls_chaos_run_is_named_after_its_first_run(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("import pytest\nfrom pytest_streamchaos import explore\n\n"
                        "@pytest.mark.chaos\n@explore(faults=['kill_driver'], budget=5)\n"
                        "def test_it(chaos):\n    pass\n\n"
                        "@pytest.mark.chaos\n@explore(faults=['kill_driver'], budget=5)\n"
                        "def test_no_fixture():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*@explore: test_*::test_it never called chaos.run: the body is the property*",
                                 "*@explore: test_*::test_no_fixture does not take the chaos fixture*"])


def test_a_negative_chaos_explore_is_refused(project: pytest.Pytester) -> None:
    result = project.runpytest("--chaos-explore=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-explore / ini streamchaos_explore: -1 must be >= 0*"])


def test_the_catalogue_comes_from_the_fault_registry() -> None:
    from pytest_streamchaos.exploration.catalogue import catalogue, schedule_specs
    from pytest_streamchaos.faults.registry import KINDS

    found = catalogue()
    for name, info in found.items():
        assert set(info.phases) <= set(KINDS[name].moments) and info.takes_down == KINDS[name].takes_down
    assert found["kill_driver"].phases[0] == "output_visible_uncommitted"
    assert "pause" not in found  # nothing to aim it at
    first, second = schedule_specs(Schedule.of(Step("kill_executor", "busiest", "state_commit", 1),
                                               Step("kill_driver", "driver", "output_visible_uncommitted", 1)))
    assert (first.index, first.when, first.anchor, first.restart_after) == ("busiest", "state_commit", 1, 0.0)
    assert (second.index, second.anchor) == (None, 0)  # counted from the step before it


def test_a_broker_targets_index_and_params_come_from_its_kinds_declaration() -> None:
    """``kill_broker``'s search targets are the leaders of the job's input and output: each becomes the
    spec's index and params, and says which topic it serves (what the pruning rules reason about)."""
    from pytest_streamchaos.exploration.catalogue import catalogue, schedule_specs
    from pytest_streamchaos.faults.registry import KINDS, kind_of

    brokers = [info for info in catalogue().values() if info.takes_down == "broker"]
    assert brokers, "a kind that takes a broker down is explorable"
    for info in brokers:
        assert info.targets == ("input_leader", "output_leader")
        assert dict(info.serves) == {"input_leader": "input", "output_leader": "output"}
        into, out = schedule_specs(Schedule.of(Step(info.name, "input_leader", "offsets_logged"),
                                               Step(info.name, "output_leader", "output_visible_uncommitted")))
        assert (into.index, into.params) == ("leader", {"step": 1})
        assert (out.index, out.params) == ("leader", {"topic": "output", "step": 2})
        for spec in (into, out):  # specs the kind's own mark would accept
            kind_of(spec).check_params(dict(spec.params))
            assert kind_of(spec) is KINDS[info.name]


# -- a search you can trust (issue 37) ----------------------------------------------------------------

def test_a_job_that_cannot_start_fails_as_inconclusive_at_once_with_its_error(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROKEN", "1")
    result = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report=report.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*@explore: inconclusive: the control run failed before its first fault, so no "
                                 "schedule was tried*",
                                 "*first error: the job exited (code 1) before its streaming query started: "
                                 "NameError: name 'sparkk' is not defined*",
                                 "*INCONCLUSIVE (@explore*"])


def test_a_search_whose_aims_all_missed_is_inconclusive_not_green(project: pytest.Pytester,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUG", "none")
    monkeypatch.setenv("MISS", "between_batches,offsets_logged,tasks_running,output_visible_uncommitted,state_commit")
    result = project.runpytest("test_jobs.py::test_exactly_once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*@explore: inconclusive: 0 of 10 schedules gave a verdict (needed 5): 0 run(s) "
                                 "without a verdict, 10 missed their aims*"])


def test_a_property_that_fails_without_any_fault_says_so(project: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUG", "always")
    result = project.runpytest("test_jobs.py::test_exactly_once")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*@explore: the property fails with no fault at all (the control run, before any "
                                 "schedule): 50 records came out twice*", "*FAILS WITHOUT FAULTS*"])
    assert "falsified by" not in result.stdout.str()


def test_the_memory_replays_a_found_schedule_first_and_goes_on_where_the_search_stopped(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    first = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report=one.json")
    first.assert_outcomes(failed=1)
    again = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report=two.json")
    again.assert_outcomes(failed=1)
    [doc] = json.loads((project.path / "two.json").read_text())
    runs = doc["explore"]["runs"]
    assert [r["purpose"] for r in runs[:2]] == ["control", "memory"] and runs[1]["falsified"]
    assert doc["explore"]["first_violation_at"] == 1 and doc["explore"]["from_memory"] >= 1
    again.stdout.fnmatch_lines(["*from memory*", "*memory: pytest's cache (--cache-clear forgets it)*"])
    # fixed: the remembered schedule passes, is forgotten, and the search goes on past what it tried before
    monkeypatch.setenv("BUG", "none")
    fixed = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report=three.json")
    fixed.assert_outcomes(passed=1)
    later = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-report=four.json")
    later.assert_outcomes(passed=1)
    [three], [four] = (json.loads((project.path / f).read_text()) for f in ("three.json", "four.json"))
    tried = {json.dumps(r["schedule"]) for r in three["explore"]["runs"] if r["purpose"] == "explore"}
    fresh = [json.dumps(r["schedule"]) for r in four["explore"]["runs"] if r["purpose"] == "explore"]
    assert fresh and not tried & set(fresh), "a second session tries new schedules, not the same ones"
    assert four["explore"]["from_memory"] == 0
    off = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-explore-db=off", "--chaos-report=off.json")
    [doc] = json.loads((project.path / "off.json").read_text())
    assert doc["explore"]["memory"].startswith("off") and doc["explore"]["from_memory"] == 0
    off.assert_outcomes(passed=1)


def test_an_unreadable_memory_entry_is_refused_before_anything_runs(project: pytest.Pytester) -> None:
    db = project.path / "db"
    project.runpytest("test_jobs.py::test_exactly_once", f"--chaos-explore-db={db}").assert_outcomes(failed=1)
    [entry] = db.glob("*.json")
    entry.write_text("{not json")
    result = project.runpytest("test_jobs.py::test_exactly_once", f"--chaos-explore-db={db}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_exactly_once: @explore's memory {entry} cannot be read (JSONDecodeError*"
                                 "delete it, run pytest --cache-clear, or pass --chaos-explore-db=off*"])


def test_max_seconds_bounds_the_search_and_too_little_time_is_inconclusive(project: pytest.Pytester,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUG", "none")
    result = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-explore-seconds=0.001")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*@explore: inconclusive: 0 of 10 schedules gave a verdict (needed 5)*",
                                 "*max_seconds=0.001 ended the search: give it more time or a smaller min_verdicts*",
                                 "*stopped: max_seconds was reached*"])


def test_an_explore_profile_fills_what_the_mark_leaves_out(project: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUG", "none")
    project.makeini("[pytest]\nstreamchaos_explore_profiles =\n    ci: max_seconds=600 min_verdicts=2\n"
                    "    nightly: budget=40\n")
    result = project.runpytest("test_jobs.py::test_exactly_once", "--chaos-explore-profile=ci",
                               "--chaos-report=report.json")
    result.assert_outcomes(passed=1)
    [doc] = json.loads((project.path / "report.json").read_text())
    assert (doc["explore"]["budget"], doc["explore"]["min_verdicts"], doc["explore"]["max_seconds"]) == (10, 2, 600)
    unknown = project.runpytest("--chaos-explore-profile=weekly")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*--chaos-explore-profile=weekly: no such explore profile (defined: ci, nightly)*"])
    project.makeini("[pytest]\nstreamchaos_explore_profiles =\n    ci: budgt=3\n")
    bad = project.runpytest("--chaos-explore-profile=ci")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*'budgt=3' is not knob=value with a knob of @explore*"])


@pytest.mark.parametrize(("setting", "says"), [
    (Setting(seed=12345, checkpoint="local"),
     "ran with seed 12345, this run's seed is *: the batches it counts are not the same here; run with "
     "--chaos-seed=12345"),
    (Setting(checkpoint="hdfs"),
     "ran with checkpoint hdfs, this run's checkpoint is local*run with --chaos-checkpoint=hdfs"),
])
def test_a_token_made_under_another_seed_or_checkpoint_is_refused_naming_the_fix(project: pytest.Pytester,
                                                                                 setting: Setting, says: str) -> None:
    token = encode(Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted")),
                   "test_jobs.py::test_exactly_once", plugin_version(), setting)
    result = project.runpytest("test_jobs.py::test_exactly_once", f"--chaos-replay={token}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--chaos-replay: this token's schedule {says}*"])
