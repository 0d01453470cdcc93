"""``@explore``'s one history in pytester sessions, without a stack: what the body, the harness and the search
do with it -- the control run and the schedules share one history, a falsified window ends it and its violation
is confirmed on a job of its own, the next schedule starts a fresh history, the whole history is judged at the
end, a body that cannot share says why. (On real jobs: tests/chaos/test_explore_history.py.)

The conftest puts a synthetic system under the real ``chaos`` harness (``ChaosFixture``): ``OneHistory``
(``runner/one_history.py``) is replaced by one whose every schedule is a 30 s window of a synthetic trace, and
a run on a job of its own by a synthetic whole run; records come out twice when the plan has ``BUG``
(``kill_driver`` aimed at ``output_visible_uncommitted``), in the shared history only with ``HISTORY_ONLY=1``.
"""

from __future__ import annotations

import json

import pytest

CONFTEST = """
import math
import os

import numpy as np
import pytest

import pytest_streamchaos.runner.chaos as chaos_module
from pytest_streamchaos.analysis.result import ChaosRun
from synthetic import T0, stateless_trace
from pytest_streamchaos.events import Kind, TimelineEvent
from pytest_streamchaos.faults.marks import specs_for_item
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.history import History, Window
from pytest_streamchaos.report.session import COMPARISONS_KEY, RUNS_KEY
from pytest_streamchaos.runner.one_history import history_key, relabelled

BUG = "kill_driver:output_visible_uncommitted"
WINDOW_S = 30.0
STARTED = []  # histories started, by the fake


def buggy(planned, alone):
    if os.environ.get("HISTORY_ONLY") and alone:
        return False
    return any(f"{p.spec.kind}:{p.spec.when}" == BUG for p in planned)


def trace_of(windows, guarantee):
    '''A synthetic trace of ``windows`` ((labels, buggy) each, 30 s apart): a fault 15 s into each window,
    the batch it strikes (records sent in the second before it) out twice when buggy.'''
    n = len(windows)
    dup = [k * 300 + 140 + i for k, (_, bad) in enumerate(windows) if bad for i in range(10)]
    faults = [k * WINDOW_S + 15.5 for k, (labels, _) in enumerate(windows) for _ in labels]
    trace = stateless_trace(rate=10, duration=n * WINDOW_S + 10, batch_interval=1.0, progress=True, faults=faults,
                            duplicate=np.array(dup, dtype=np.int64) if dup else None)
    labels = [label for ls, _ in windows for label in ls]
    for e, label in zip(trace.timeline, labels):
        e.detail.update(fault=label.split("@")[0].split(" ")[0], label=label,
                        aim={"moment": "m", "batch": 7, "phase": label.split("when=")[1].split(" ")[0], "hit": True})
    return trace


class FakeHistory:
    def __init__(self, chaos, spec, inputs, number):
        self.number, self.key, self.broken = number, history_key(spec), None
        self.whole = self.last_view = None
        self.windows, self.closed = [], False

    def start(self):
        STARTED.append(self.number)

    def segment(self, spec, inputs):
        k = len(self.windows)
        planned = relabelled(inputs.planned, k, 0.0)
        bad = buggy(planned, alone=False)
        self.windows.append(([p.label for p in planned], bad))
        trace = trace_of(self.windows, spec.guarantee)
        window = Window(k, "", -math.inf if k == 0 else T0 + k * WINDOW_S, T0 + (k + 1) * WINDOW_S,
                        tuple(p.label for p in planned))
        view = ChaosRun.judge(History(trace).focused(window), inputs.oracle, spec.guarantee)
        self.last_view = view
        return view

    def close(self):
        self.closed = True
        trace = trace_of(self.windows, "at-least-once")
        for k in range(len(self.windows) + 1):
            w = Window(k, "", -math.inf if k == 0 else T0 + k * WINDOW_S,
                       math.inf if k == len(self.windows) else T0 + (k + 1) * WINDOW_S,
                       tuple(self.windows[k][0]) if k < len(self.windows) else ())
            trace.timeline.append(TimelineEvent(T0 + 1000, Kind.HISTORY_WINDOW, "", w.detail()))
        self.whole = ChaosRun.from_trace(trace, guarantee="exactly-once")
        return self.whole


def alone_run(self, spec, inputs):
    trace = trace_of([([p.label for p in inputs.planned], buggy(inputs.planned, alone=True))], spec.guarantee)
    return History(trace)  # judged by the run's plan (its guarantee)


@pytest.fixture
def chaos(request, tmp_path, monkeypatch):
    real = chaos_module.build_run
    monkeypatch.setattr(chaos_module, "build_run", lambda *a, stack=None, **kw: real(*a, **kw))
    monkeypatch.setattr(chaos_module, "OneHistory", FakeHistory)
    monkeypatch.setattr(chaos_module.Chaos, "_execute", alone_run)
    (tmp_path / "job.py").write_text("print('a job')\\n")
    h = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path, faults=specs_for_item(request.node),
                     nodeid=request.node.nodeid, test_dir=tmp_path)
    request.node.stash[RUNS_KEY] = h.results
    request.node.stash[COMPARISONS_KEY] = h.comparisons
    yield h
    h.close_history()
"""

TESTS = """
import pytest
from pytest_streamchaos import explore

@pytest.mark.chaos
@explore(faults=["kill_driver", "kill_executor"], budget=6, max_faults=1{knobs})
def test_property(chaos):
    run = chaos.run("job.py", duration=20, guarantee="at-least-once")
    assert run.duplicates == 0, f"{{run.duplicates}} records came out twice"
    {more}
"""


def explored(pytester: pytest.Pytester, *, bug: str, knobs: str = "", more: str = "",
             env: dict[str, str] | None = None) -> tuple[pytest.RunResult, dict]:
    pytester.makeconftest(CONFTEST.replace('BUG = "kill_driver:output_visible_uncommitted"', f"BUG = {bug!r}"))
    pytester.makepyfile(test_jobs=TESTS.format(knobs=knobs, more=more))
    for k, v in (env or {}).items():
        pytester._monkeypatch.setenv(k, v)
    result = pytester.runpytest("test_jobs.py", "--chaos-report=report.json", "-p", "no:cacheprovider")
    [doc] = json.loads((pytester.path / "report.json").read_text())
    return result, doc["explore"]


def test_schedules_share_one_history_and_a_violation_there_is_confirmed_alone(pytester: pytest.Pytester) -> None:
    result, ex = explored(pytester, bug="kill_executor:tasks_running")
    result.assert_outcomes(failed=1)
    runs = ex["runs"]
    shared = [r for r in runs if r["purpose"] in ("control", "explore")]
    # the control run and the exploring runs up to the falsifying one shared history 0
    assert [r["history"] for r in shared] == [0] * len(shared) and shared[-1]["falsified"]
    assert all(r["history"] is None for r in runs if r["purpose"] in ("confirm", "shrink"))
    [history] = ex["histories"]
    assert history["ended"] == "its window falsified the property" and history["runs"] == len(shared)
    windows = history["whole"]["windows"]
    assert [w["duplicates"] for w in windows] == [0] * (len(shared) - 1) + [10, 0]
    result.stdout.fnmatch_lines(["*falsified by kill_executor*tasks_running (hit)*", "*confirmed by a re-run*",
                                 f"*one history: {len(shared) - 1} of {len(shared) - 1} schedule run(s) shared a "
                                 "running job, in 1 history(ies)*",
                                 "*history #0: * run(s) in one job, ended: its window falsified the property*"])


def test_a_violation_only_in_the_shared_history_is_flaky(pytester: pytest.Pytester) -> None:
    result, ex = explored(pytester, bug="kill_executor:tasks_running", env={"HISTORY_ONLY": "1"})
    result.assert_outcomes(failed=1)
    assert ex["found"] is None and len(ex["flaky"]) == 1
    result.stdout.fnmatch_lines(["*flaky: kill_executor*"])


def test_a_correct_system_passes_in_one_history_judged_whole_at_the_end(pytester: pytest.Pytester) -> None:
    result, ex = explored(pytester, bug="none:none")
    result.assert_outcomes(passed=1)
    [history] = ex["histories"]
    assert history["ended"] == "the search ended" and history["violation"] is None
    assert history["runs"] == len(ex["runs"]) >= 5 and len(history["whole"]["windows"]) == history["runs"] + 1
    assert all(r["history"] == 0 for r in ex["runs"])


def test_fresh_runs_a_job_per_schedule(pytester: pytest.Pytester) -> None:
    result, ex = explored(pytester, bug="none:none", knobs=', history="fresh"')
    result.assert_outcomes(passed=1)
    assert ex["histories"] == [] and all(r["history"] is None for r in ex["runs"]) and ex["history"] == "fresh"


def test_a_body_that_runs_the_job_twice_cannot_share_and_says_why(pytester: pytest.Pytester) -> None:
    result, ex = explored(pytester, bug="none:none", more='chaos.run("job.py", duration=20)')
    result.assert_outcomes(passed=1)
    assert ex["unshared"] == "the body calls chaos.run more than once"
    result.stdout.fnmatch_lines(["*one history: not used (the body calls chaos.run more than once)*"])
