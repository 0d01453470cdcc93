"""``--chaos-history=shared`` (issue 48: a verdict a CI can afford): a module's plain ``chaos.run`` tests of one
job play their faults one after another on one running job, each judged in its own window.

Each module below runs in a pytest session of its own with the option, as a user's CI would. ``SHARED``: three
tests of the payments ledger (Spark's Kafka sink, hard-coded broker, topics and checkpoint, nothing of the plugin)
share one job -- a clean window, a worker killed, a clean window again --, then two tests of the same ledger with
two bugs planted (ids divisible by 97 dropped, by 89 booked twice): another job ends the first history, and a
window that lost records ends its own (the next test gets a fresh job). Each detector is proven in a window both
ways -- silent on the correct job, clean and under the kill; exactly the planted ids caught, clean and under the
kill -- and the records sent after a history's last window, which no test judged, are judged when it ends: the
planted job's tails fail the module's last teardown. ``SHARED_DELTA``: three tests of a Kafka-to-Delta foreachBatch
append its author believed exactly-once on one job, its driver killed and relaunched inside the second window (its
duplicates exactly the ids the table holds twice, the windows around it silent), then Delta's own streaming sink
under the same kill (nothing counted twice).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from planted import nested_session_env

SHARED = '''
import numpy as np
import pytest
from planted import JOBS, clear_paths, ledger
from pytest_streamchaos import kill_worker
from pytest_streamchaos.analysis.windows import sent_in

DROPS = str(JOBS / "payments_to_ledger_drops.py")


@pytest.fixture(scope="module", autouse=True)
def hardcoded_paths_once():
    # once a module: the shared job keeps its checkpoint from one test to the next
    clear_paths()
    yield
    clear_paths()


def window_ids(run):
    """The ids of the records sent in the run's window."""
    assert run.history.focus is not None, "the run was not a window of a shared history"
    return run.history.sent.ids[sent_in(run.history, run.history.focus)]


def killed(run):
    [fault] = run.faults
    assert any(e.kind == "executor_removed" and e.t >= fault.t for e in run.timeline), "the kill took no executor"
    return fault


def planted_caught(run):
    ids = window_ids(run)
    dropped = ids[ids % 97 == 0]
    repeated = ids[(ids % 89 == 0) & (ids % 97 != 0)]
    assert dropped.size > 0 and repeated.size > 0, ids.size
    assert set(run.report.lost_ids.tolist()) == set(dropped.tolist()), (run.lost, dropped.size)
    assert set(repeated.tolist()) <= set(run.report.duplicate_ids.tolist())
    print(f"WINDOW {run.history.focus.index}: sent {run.sent}, lost {run.lost} (planted {dropped.size}), "
          f"duplicates {run.duplicates} (planted {repeated.size})")


@pytest.mark.chaos(backend="local")
def test_1_clean(chaos):
    run = ledger(chaos, "at-least-once", duration=10)
    assert run.history.focus.index == 0 and run.sent == window_ids(run).size > 500
    assert run.lost == 0 and run.duplicates == 0


@pytest.mark.chaos(backend="local")
@kill_worker(after=6, restart_after=3)
def test_2_worker_killed(chaos):
    run = ledger(chaos, "at-least-once", duration=15)
    assert run.history.focus.index == 1
    assert killed(run).recovered, run.describe()
    assert run.lost == 0


@pytest.mark.chaos(backend="local")
def test_3_clean_again(chaos):
    run = ledger(chaos, "at-least-once", duration=10)
    assert run.history.focus.index == 2 and run.lost == 0 and run.duplicates == 0
    # the three tests' windows on one job: its driver launched once, before the first
    assert [e.kind for e in run.timeline].count("driver_launched") == 1


@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)  # the test inspects the broken verdict instead of failing on it
def test_4_planted_clean(chaos):
    run = ledger(chaos, "at-least-once", duration=10, job=DROPS)
    assert run.history.focus.index == 0
    planted_caught(run)


@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@kill_worker(after=6, restart_after=3)
def test_5_planted_worker_killed(chaos):
    run = ledger(chaos, "at-least-once", duration=15, job=DROPS)
    # the window before lost records: the job, in a state nobody knows, was not given another test
    assert run.history.focus.index == 0
    # its recovery too: once read as "not recovered" in CI, when the window ended on the kill looking over (no sign
    # in the output, the replacement executor added and quiet) and a sign came after -- the window now goes on
    assert killed(run).recovered, run.describe()
    planted_caught(run)
'''


SHARED_DELTA = '''
from collections import Counter

import pytest
from lakehouse import BRONZE, FOREACH_BATCH, clear_paths, run_orders
from pytest_streamchaos import kill_driver
from pytest_streamchaos.analysis.windows import sent_in
from pytest_streamchaos.observe import delta

APPEND = "orders_to_delta_foreach_batch.py"


@pytest.fixture(scope="module", autouse=True)
def hardcoded_paths_once():
    clear_paths()
    yield
    clear_paths()


def appended_twice(run):
    """The window's ids its foreachBatch append wrote twice, from the table: the batch the kill landed in (its
    Delta version committed, commits/N not yet) is in two versions."""
    [fault] = run.faults
    assert fault.hit and fault.aim.phase == "output_visible_uncommitted", fault.aim
    versions = [c for c in delta.version_changes(FOREACH_BATCH, removed=False)
                if c.added.num_rows and set(c.added.column("batch_id").to_pylist()) == {fault.aim.batch}]
    assert len(versions) == 2, fault.aim.batch
    mine = set(run.history.sent.ids[sent_in(run.history, run.history.focus)].tolist())
    counts = Counter(r["order_id"] for r in delta.rows(delta.final_rows(FOREACH_BATCH)))
    return {i for i, n in counts.items() if n > 1 and i in mine}


def launches(run):
    return [e.kind for e in run.timeline].count("driver_launched")


@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)  # declared exactly-once by its author; the tests show what it delivers
def test_1_append_clean(chaos):
    run = run_orders(chaos, APPEND, FOREACH_BATCH)
    assert run.history.focus.index == 0 and run.sent > 1000
    assert run.lost == 0 and run.duplicates == 0 and run.guarantee_delivered == "exactly-once"


@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@kill_driver(when="output_visible_uncommitted", after=3, restart_after=0)
def test_2_append_driver_killed(chaos):
    run = run_orders(chaos, APPEND, FOREACH_BATCH)
    assert run.history.focus.index == 1 and launches(run) == 2  # the killed driver relaunched, the job the same
    twice = appended_twice(run)
    assert twice and set(run.report.duplicate_ids.tolist()) == twice, (run.duplicates, len(twice))
    assert run.lost == 0 and run.guarantee_delivered == "at-least-once"
    assert run.faults[0].recovered, run.describe()
    print(f"WINDOW 1: sent {run.sent}, duplicates {run.duplicates}, in the table twice {len(twice)}")


@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
def test_3_append_clean_again(chaos):
    run = run_orders(chaos, APPEND, FOREACH_BATCH)
    assert run.history.focus.index == 2 and run.lost == 0 and run.duplicates == 0


@pytest.mark.chaos(backend="local")
@kill_driver(when="output_visible_uncommitted", after=3, restart_after=0)
def test_4_sink_driver_killed(chaos):
    run = run_orders(chaos, "orders_to_delta_bronze.py", BRONZE)
    assert run.history.focus.index == 0 and run.faults[0].hit and launches(run) == 2
    assert run.lost == 0 and run.duplicates == 0 and run.guarantee_delivered == "exactly-once"
'''


def shared_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, text: str) -> pytest.RunResult:
    """``text`` run as ``test_shared.py`` in a pytest session of its own with ``--chaos-history=shared`` (this
    checkout's plugin and this folder's modules first on its path); its output printed."""
    tests_dir = Path(__file__).resolve().parent
    nested_session_env(monkeypatch, tests_dir.parents[1], tests_dir)
    pytester.makepyfile(test_shared=text)
    result = pytester.runpytest_subprocess("test_shared.py", "-p", "no:cacheprovider", "--chaos-history=shared",
                                           "-s", "-rA", f"--basetemp={pytester.path / 'tmp'}", timeout=1200)
    print(result.stdout.str())
    return result


@pytest.mark.chaos(backend="local")
def test_a_modules_tests_share_one_job_and_each_window_is_judged_both_ways(pytester: pytest.Pytester,
                                                                           monkeypatch: pytest.MonkeyPatch):
    result = shared_session(pytester, monkeypatch, SHARED)
    out = result.stdout.str()
    # every test passed; the planted job's records after its last window fail the module's end
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_5_planted_worker_killed*",
        "*the records sent after the last test's window, which no test judged, broke the declared at-least-once*",
    ])
    result.stdout.fnmatch_lines([
        "*shared histories (--chaos-history=shared)*",
        "shared history #0: 3 window(s) of test_shared.py::test_1_clean, test_shared.py::test_2_worker_killed, "
        "test_shared.py::test_3_clean_again; ended: test_shared.py::test_4_planted_clean runs another job or other "
        "arguments; whole: * sent, lost 0, duplicates *",  # a worker kill may replay a batch: at-least-once
        "shared history #1: 1 window(s) of test_shared.py::test_4_planted_clean; ended: the schedule lost * "
        "record(s); whole: * sent, lost *",
        "FAILED on the whole: the records sent after the last test's window*",
        "shared history #2: 1 window(s) of test_shared.py::test_5_planted_worker_killed; ended: the module's tests "
        "ended; whole: * sent, lost *",
        "FAILED on the whole: the records sent after the last test's window*",
    ])
    assert out.count("WINDOW ") == 2


@pytest.mark.chaos(backend="local")
def test_delta_jobs_share_one_job_and_a_driver_killed_in_a_window_is_judged_both_ways(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """Two Kafka-to-Delta jobs as lakehouse tutorials write them: the foreachBatch append its author believed
    exactly-once -- three windows on one job, the driver killed in the second between batch N's Delta commit and
    ``commits/N``: the window's duplicates exactly the ids the table holds twice, the windows around it silent --,
    then Delta's own streaming sink, the same kill: exactly-once, nothing counted twice."""
    result = shared_session(pytester, monkeypatch, SHARED_DELTA)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "shared history #0: 3 window(s) of test_shared.py::test_1_append_clean, "
        "test_shared.py::test_2_append_driver_killed, test_shared.py::test_3_append_clean_again; ended: "
        "test_shared.py::test_4_sink_driver_killed runs another job or other arguments; whole: * sent, lost 0, "
        "duplicates *",
        "shared history #1: 1 window(s) of test_shared.py::test_4_sink_driver_killed; ended: the module's tests "
        "ended; whole: * sent, lost 0, duplicates 0*",
    ])
