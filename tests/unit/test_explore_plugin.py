"""``@explore``, ``--chaos-explore`` and ``--chaos-replay`` end to end in pytester sessions: the mark's
and the options' refusals (one line, before anything runs), the search over the test body, the failure
with its replay line, the replay, a flaky violation, the summary and the JSON's ``explore`` key.

No stack: the conftest's ``chaos`` fixture is a ``ChaosHarness`` whose ``_run_once`` (the test seam)
judges a synthetic trace of a system with a planted moment-bug: records come out twice when the plan
has ``BUG`` (``kill_driver`` aimed at ``output_visible_uncommitted`` unless the environment says
otherwise); each fault lands in its phase, except the phases in ``MISS`` (their aims miss); with
``FLAKY=1`` the bug shows once, never again. (On real jobs: tests/chaos/test_explore.py.)
"""

import json
import re

import pytest

from pytest_streamchaos.search.schedule import Schedule, Step
from pytest_streamchaos.search.token import encode, plugin_version

CONFTEST = """
import os
import numpy as np
import pytest
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.synthetic import stateless_trace
from pytest_streamchaos.facts import RunFacts, RunSetup
from pytest_streamchaos.faults.marks import specs_for_item
from pytest_streamchaos.harness import ChaosHarness
from pytest_streamchaos.report.session import COMPARISONS_KEY, RUNS_KEY

BUG = os.environ.get("BUG", "kill_driver:output_visible_uncommitted")
MISS = os.environ.get("MISS", "").split(",")
FLAKY = os.environ.get("FLAKY") == "1"
SHOWN = []  # with FLAKY: the bug shows once, never again

class FakeHarness(ChaosHarness):
    def _run_once(self, job, guarantee="exactly-once"):
        bug = any(f"{s.kind}:{s.when}" == BUG and s.when not in MISS for s in self.faults)
        if FLAKY and bug:
            bug = not SHOWN
            SHOWN.append(1)
        trace = stateless_trace(rate=50, duration=30, batch_interval=1.0,
                                faults=[10.0 + i for i in range(len(self.faults))],
                                duplicate=np.arange(100, 150) if bug else None)
        for i, (e, s) in enumerate(zip(trace.timeline, self.faults)):
            aim = {"moment": s.when, "batch": 7 + i, "phase": s.when, "hit": s.when not in MISS, "attempts": 1}
            e.detail.update(fault=s.kind, label=s.label, aim=aim)
        setup = RunSetup(seed=7, planned_faults=[s.label for s in self.faults])
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
    found = re.search(r"--chaos-replay=(sc1\.\S+)", text)
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
        "*search: * schedules run*pruned (idle_executor*",
        "replay: pytest test_jobs.py::test_exactly_once --chaos-replay=sc1.*",
    ])
    assert "the falsifying run:" in out
    # the summary: the same finding, with the aims by phase and the pruning rules' reasons
    result.stdout.fnmatch_lines(["*explored fault schedules*", "*test_exactly_once: FALSIFIED*",
                                 "*pruned by idle_executor: kill_executor busiest offsets_logged*"])
    [doc] = [json.loads(p.read_text()) for p in (project.path / "out").glob("*.json")]
    explored = doc["explore"]
    assert explored["found"]["schedule"] == [{"kind": "kill_driver", "target": "driver",
                                              "phase": "output_visible_uncommitted", "batch": 0}]
    assert explored["token"] == _token(out) and explored["first_violation_at"] >= 1
    assert {r["purpose"] for r in explored["runs"]} >= {"explore", "confirm"}
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
                   "test_jobs.py::test_exactly_once", plugin_version())
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
                                 "*coverage: * schedules run (10 attempts), */* fault x phase cells, * pruned*",
                                 "*aims by phase: between_batches 0/*"])
    [doc] = json.loads((project.path / "report.json").read_text())
    coverage = doc["explore"]["coverage"]
    assert coverage["attempts"] == 10 and coverage["hits"] < coverage["aims"]  # the missed aims count
    assert coverage["schedules_run"] == sum(r["hit"] for r in doc["explore"]["runs"])
    assert "idle_executor" in coverage["pruned"] and doc["explore"]["found"] is None


def test_a_violation_that_does_not_come_back_is_flaky_not_found(project: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLAKY", "1")
    monkeypatch.setenv("BUG", "kill_executor:state_commit")
    result = project.runpytest("test_jobs.py::test_exactly_once")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*flaky: kill_executor on busiest at batch 7 (+0), phase state_commit (hit): "
                                 "failed once, passed when re-run (flaky, not found)*"])


def test_chaos_explore_searches_every_chaos_test_with_its_own_fault_marks(project: pytest.Pytester) -> None:
    result = project.runpytest("test_jobs.py::test_marked", "--chaos-explore=4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*--chaos-explore: falsified by kill_driver at batch 7 (+0), phase "
                                 "output_visible_uncommitted (hit)*",
                                 "replay: pytest test_jobs.py::test_marked --chaos-replay=sc1.*"])


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
    result.stderr.fnmatch_lines(["*--chaos-explore / ini streamchaos_explore: -1 must be positive*"])


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
