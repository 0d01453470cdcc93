"""``@explore`` on one running job (issue 48: one history, Jepsen's nemesis): the schedules play one after
another on the job the control run started, each judged in its own window; a violation found there is
confirmed on a job of its own, and the whole history is judged at the end.

Each explored test runs in a pytest session of its own (as in ``test_explore.py``: the search's failure is the
point); this test asserts on that session's output and JSON report. The job is ``tests/chaos/jobs``' ledger
(Spark's own Kafka sink, hard-coded broker, topics and checkpoint; nothing of the plugin).
"""

from __future__ import annotations

import os
import re

import pytest
from planted import clear_paths, explored_session

EXPLORED = '''
import pytest
from planted import hardcoded_paths, ledger  # noqa: F401  (an autouse fixture)
from pytest_streamchaos import explore


@pytest.mark.chaos(backend="local")
@explore(faults=["kill_driver"], budget=3, max_faults=1)
def test_ledger_is_exactly_once(chaos):
    run = ledger(chaos)
    assert run.duplicates == 0, f"{{run.duplicates}} payments booked twice"


@pytest.mark.chaos(backend="local")
@explore(faults=["kill_driver", "kill_executor"], budget={budget})
def test_ledger_loses_nothing(chaos):
    run = ledger(chaos, "at-least-once")
    assert run.lost == 0, f"{{run.lost}} payments lost"
'''


@pytest.fixture
def explored(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """``run(test, ret, budget)``: one explored test in a session of its own (this worktree's plugin), which
    ends with ``ret``; its result and the ``explore`` part of its JSON report."""

    def run(test: str, ret: pytest.ExitCode, budget: int = 3) -> tuple[pytest.RunResult, dict]:
        return explored_session(pytester, monkeypatch, EXPLORED.format(budget=budget), clear_paths, timeout=2400,
                                test=test, ret=ret)

    return run


@pytest.mark.chaos(backend="local")
def test_one_history_finds_the_kafka_sink_duplicate_and_confirms_it_alone(explored):
    """The control run starts the job; the first schedule -- the driver killed while a batch's records are
    produced and its commit not written -- plays on that same job, its window duplicates the batch, which
    ends the history; the violation comes back on a job of its own, and the whole history holds the window's
    duplicates."""
    result, explore = explored("test_ledger_is_exactly_once", pytest.ExitCode.TESTS_FAILED)
    result.stdout.fnmatch_lines(["*@explore: falsified by kill_driver at batch * (+0), phase "
                                 "output_visible_uncommitted (hit)*", "*confirmed by a re-run*",
                                 "*one history: 1 of 1 schedule run(s) shared a running job*",
                                 "*history #0: 2 run(s) in one job, ended: its window falsified the property*"])
    control, first, *alone = explore["runs"]
    # the control run and the first schedule shared one job; every confirming and shrinking run had its own
    assert control["purpose"] == "control" and control["history"] == 0 and not control["falsified"]
    assert first["purpose"] == "explore" and first["history"] == 0 and first["falsified"] and first["hit"]
    assert alone and all(r["history"] is None for r in alone)
    assert any(r["purpose"] == "confirm" and r["falsified"] and r["hit"] for r in alone)
    # the schedule's aim landed in a job that had already run the control window: the same driver, restarted
    # once by the kill (its launches), a batch well past the first
    assert first["landed"][0]["batch"] >= 2
    booked_twice = int(re.search(r"(\d+) payments booked twice", first["message"]).group(1))  # its window's
    [history] = explore["histories"]
    windows = history["whole"]["windows"]
    assert [w["index"] for w in windows] == [0, 1, 2] and windows[0]["faults"] == []
    assert windows[1]["duplicates"] == booked_twice > 0 and windows[0]["duplicates"] == 0
    assert history["whole"]["duplicates"] == sum(w["duplicates"] for w in windows)
    assert history["whole"]["lost"] == 0
    assert first["cost"]["recovery"] is not None and first["cost"]["wall"] > first["cost"]["recovery"]


@pytest.mark.slow
@pytest.mark.chaos(backend="local")
def test_one_history_stays_green_on_a_correct_job_over_twenty_schedules(explored):
    """The ledger held to at-least-once loses nothing under 20 and more schedules played on one job: every
    exploring run shared it, the aims kept landing in a job that had run earlier schedules, each window and
    the whole history lost nothing."""
    budget = int(os.environ.get("STREAMCHAOS_EXPLORE_BUDGET", "22"))
    result, explore = explored("test_ledger_loses_nothing", pytest.ExitCode.OK, budget)
    assert explore["verdict"] == "passed" and explore["found"] is None and explore["flaky"] == []
    runs = explore["runs"]
    assert explore["coverage"]["schedules_run"] >= min(20, budget - 2)
    assert all(r["history"] is not None for r in runs), [(r["purpose"], r["history"]) for r in runs]
    histories = explore["histories"]
    for h in histories:
        assert h["whole"] is not None and h["whole"]["lost"] == 0, h
        assert all(w["lost"] == 0 for w in h["whole"]["windows"]), h
    later = [r for i, r in enumerate(runs) if r["schedule"] and any(q["history"] == r["history"] for q in runs[:i])]
    assert sum(r["hit"] for r in later) >= min(20, budget - 2) - 1
    result.stdout.fnmatch_lines(["*test_ledger_loses_nothing: passed*", "*one history: * shared a running job*",
                                 "*per schedule: median *s, of which its faults' own recovery *s and the harness's "
                                 "share *s*"])
