"""``--chaos-history=shared`` in pytester sessions, without a stack: which runs share a module's running job and
which need one of their own (and say why), what ends a history, and the judgement of the records after the last
window at the module's end. (On real jobs: tests/chaos/test_shared_history.py.)

The conftest puts a synthetic system under the real ``chaos`` harness and the plugin's real module fixture:
``OneHistory`` is replaced by one whose every window is 20 s of a synthetic trace (records of its tail dropped
when ``TAIL_BUG`` is set), and a run on a job of its own by a synthetic whole run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_streamchaos.runner.shared import inputs_key, same, why_alone
from pytest_streamchaos.runner.spec import RunInputs

CONFTEST = """
import math
import os

import numpy as np
import pytest

import pytest_streamchaos.runner.chaos as chaos_module
import pytest_streamchaos.runner.shared as shared_module
from pytest_streamchaos.analysis.result import ChaosRun
from synthetic import T0, stateless_trace
from pytest_streamchaos.events import Kind, TimelineEvent
from pytest_streamchaos.faults.marks import specs_for_item
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.history import History, Window
from pytest_streamchaos.report.session import COMPARISONS_KEY, RUNS_KEY

WINDOW_S = 20.0
RATE = 10
STARTED = []  # histories started, by the fake


class Status:
    callback = None


def window(k, end=None):
    return Window(k, f"window {k}", -math.inf if k == 0 else T0 + k * WINDOW_S,
                  T0 + (k + 1) * WINDOW_S if end is None else end)


class FakeHistory:
    def __init__(self, chaos, spec, inputs, number):
        self.number, self.broken, self.windows = number, None, 0
        self.whole = self.last_view = None
        self.status = Status()

    def start(self):
        STARTED.append(self.number)

    def segment(self, spec, inputs):
        k, self.windows = self.windows, self.windows + 1
        trace = stateless_trace(rate=RATE, duration=self.windows * WINDOW_S)
        self.last_view = ChaosRun.judge(History(trace).focused(window(k)), inputs.oracle, spec.guarantee)
        return self.last_view

    def close(self):
        n = self.windows
        start = int(n * WINDOW_S * RATE)
        drop = np.arange(start, start + 5, dtype=np.int64) if os.environ.get("TAIL_BUG") else None
        trace = stateless_trace(rate=RATE, duration=n * WINDOW_S + 10, drop=drop)
        for k in range(n + 1):
            w = window(k, end=math.inf if k == n else None)
            trace.timeline.append(TimelineEvent(T0 + 1000, Kind.HISTORY_WINDOW, "", w.detail()))
        self.whole = ChaosRun.from_trace(trace, guarantee="at-least-once")
        return self.whole


def alone_run(self, spec, inputs):
    return History(stateless_trace(rate=RATE, duration=WINDOW_S))


@pytest.fixture
def streamchaos_stacks():
    return None  # a test asking for the stack without chaos


@pytest.fixture
def chaos(request, tmp_path, monkeypatch, streamchaos_settings):
    real = chaos_module.build_run
    monkeypatch.setattr(chaos_module, "build_run", lambda *a, stack=None, **kw: real(*a, **kw))
    monkeypatch.setattr(shared_module, "OneHistory", FakeHistory)
    monkeypatch.setattr(chaos_module.Chaos, "_execute", alone_run)
    shared = (request.getfixturevalue("streamchaos_shared_history") if streamchaos_settings.history == "shared"
              else None)
    h = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path, faults=specs_for_item(request.node),
                     nodeid=request.node.nodeid, test_dir=request.path.parent, shared=shared)
    request.node.stash[RUNS_KEY] = h.results
    request.node.stash[COMPARISONS_KEY] = h.comparisons
    yield h
    h.close_history()


def pytest_sessionfinish(session):
    print(f"STARTED {STARTED}")
"""

TESTS = """
import pytest
from pytest_streamchaos import kill_worker


def test_one(chaos):
    run = chaos.run("job.py", rate=10, duration=20)
    assert run.history.focus is not None and run.history.focus.index == 0 and run.sent == 200


@kill_worker(after=5)
def test_two(chaos):
    run = chaos.run("job.py", rate=10, duration=20)
    assert run.history.focus.index == 1 and run.sent == 200 and run.lost == 0


def test_three(chaos):
    run = chaos.run("job.py", rate=10, duration=20)
    assert run.history.focus.index == 2
"""


def session(pytester: pytest.Pytester, tests: str, *args: str, env: dict[str, str] | None = None
            ) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    (pytester.path / "job.py").write_text("print('a job')\n")
    pytester.makepyfile(test_jobs=tests)
    for k, v in (env or {}).items():
        pytester._monkeypatch.setenv(k, v)
    return pytester.runpytest("test_jobs.py", "-p", "no:cacheprovider", "-s", *args)


def test_a_modules_runs_of_one_job_share_one_history(pytester: pytest.Pytester) -> None:
    result = session(pytester, TESTS, "--chaos-history=shared")
    result.assert_outcomes(passed=3)
    assert "STARTED [0]\n" in result.stdout.str()
    result.stdout.fnmatch_lines(["*shared histories (--chaos-history=shared)*",
                                 "shared history #0: 3 window(s) of test_jobs.py::test_one, test_jobs.py::test_two, "
                                 "test_jobs.py::test_three; ended: the module's tests ended; whole: 700 sent, "
                                 "lost 0, duplicates 0*"])


def test_without_the_option_every_run_is_a_job_of_its_own(pytester: pytest.Pytester) -> None:
    alone = "def test_one(chaos):\n    assert chaos.run('job.py', duration=20).history.focus is None\n"
    result = session(pytester, alone)
    result.assert_outcomes(passed=1)
    assert "STARTED []\n" in result.stdout.str()
    assert "shared histories" not in result.stdout.str()


def test_records_after_the_last_window_are_judged_at_the_modules_end(pytester: pytest.Pytester) -> None:
    """No test judged the tail: 5 records lost there fail the module's last teardown, not a test's call."""
    result = session(pytester, TESTS, "--chaos-history=shared", env={"TAIL_BUG": "1"})
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_three*",
                                 "*a shared history failed on the whole*",
                                 "*shared history #0 of test_jobs.py::test_one, *: the records sent after the last "
                                 "test's window, which no test judged, broke the declared at-least-once: window 3 "
                                 "(*lost 5*"])


OTHERS = """
import pytest
from pytest_streamchaos import Reference


def test_one(chaos):
    assert chaos.run("job.py", rate=10, duration=20).history.focus.index == 0


def test_other_arguments(chaos):
    assert chaos.run("job.py", rate=20, duration=20).history.focus.index == 0


def test_repeated(chaos):
    run = chaos.run("job.py", rate=20, duration=20, repeat=2)
    assert all(r.history.focus is None for r in run.runs)


def test_the_stack_alone(streamchaos_stacks):
    pass


def test_last(chaos):
    assert chaos.run("job.py", rate=20, duration=20).history.focus.index == 0
"""


def test_what_ends_a_history_and_what_runs_alone_is_said(pytester: pytest.Pytester) -> None:
    result = session(pytester, OTHERS, "--chaos-history=shared")
    result.assert_outcomes(passed=5)
    assert "STARTED [0, 1, 2]\n" in result.stdout.str()
    result.stdout.fnmatch_lines([
        "shared history #0: 1 window(s) of test_jobs.py::test_one; ended: test_jobs.py::test_other_arguments runs "
        "another job or other arguments; *",
        "shared history #1: 1 window(s) of test_jobs.py::test_other_arguments; ended: test_jobs.py::test_repeated "
        "runs a job of its own; *",
        "shared history #2: 1 window(s) of test_jobs.py::test_last; ended: the module's tests ended; *",
        "test_jobs.py::test_repeated: a job of its own: the test repeats its run (repeat=2): each repetition is a "
        "whole run of its own",
    ])
    assert result.stdout.str().count("test_repeated: a job of its own") == 1  # not once a repetition


def test_a_test_using_the_stack_without_chaos_ends_the_history(pytester: pytest.Pytester) -> None:
    tests = OTHERS.split("def test_other_arguments")[0] + "\n\ndef test_the_stack_alone(streamchaos_stacks):\n" \
        "    pass\n\n\ndef test_again(chaos):\n    assert chaos.run('job.py', rate=10, duration=20)" \
        ".history.focus.index == 0\n"
    result = session(pytester, tests, "--chaos-history=shared")
    result.assert_outcomes(passed=3)
    assert "STARTED [0, 1]\n" in result.stdout.str()
    result.stdout.fnmatch_lines(["shared history #0: 1 window(s) of test_jobs.py::test_one; ended: "
                                 "test_jobs.py::test_the_stack_alone uses the stack without chaos; *"])


def test_a_misspelt_history_is_refused_naming_the_choices(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("--chaos-history=shraed")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-history*shraed*'fresh', 'shared'*"])


def inputs(**kw: object) -> RunInputs:
    from pytest_streamchaos.analysis.oracle import IdentityOracle

    base: dict = dict(script="job.py", planned=[], load_why="", settle_pinned=False, oracle=IdentityOracle(),
                      id_reader=None, params=None, factories={}, output_ids={}, annotate={})
    return RunInputs(**{**base, **kw})


def record(rec: object) -> dict:
    return {}


def test_runs_share_only_inputs_that_are_the_same() -> None:
    # the plan and why the load lasts are each test's own; a factory shared by name is the same object
    assert inputs_key(inputs(planned=["a fault"], load_why="20 s")) == inputs_key(inputs())
    assert inputs_key(inputs(factories={"t": record})) == inputs_key(inputs(factories={"t": record}))
    # a lambda written in each test, another id reader or oracle: a job of its own
    assert inputs_key(inputs(factories={"t": lambda r: {}})) != inputs_key(inputs(factories={"t": lambda r: {}}))
    assert inputs_key(inputs(id_reader="key")) != inputs_key(inputs())
    # an oracle holding an array: no bool equality, so a job of its own rather than a wrong window
    oracle, twin = inputs().oracle, inputs().oracle
    oracle.weights, twin.weights = np.arange(3), np.arange(3)  # type: ignore[attr-defined]
    assert not same(inputs_key(inputs(oracle=oracle)), inputs_key(inputs(oracle=twin)))
    assert same(inputs_key(inputs()), inputs_key(inputs()))


def test_why_a_run_cannot_be_a_window() -> None:
    spec: Any = object()  # what a whole run's spec says is not asked before these
    assert "repeat=3" in str(why_alone(spec, inputs(), reference=False, repeats=3))
    assert "object-store" in str(why_alone(spec, inputs(urls=(("s3a://b/x", "store"),)), reference=False,
                                           repeats=1))
    assert "reference run" in str(why_alone(spec, inputs(), reference=True, repeats=1))
