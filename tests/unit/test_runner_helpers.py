"""Pure helpers of the run engine: job path resolution and the drain's caught-up test."""

import time
from pathlib import Path

import pytest

from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.runner import RunError, committed_past, resolve_job


def test_resolve_job_relative_to_test_dir_then_rootdir(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "pipelines").mkdir()
    job = tmp_path / "pipelines" / "j.py"
    job.write_text("")
    assert resolve_job("pipelines/j.py", tmp_path / "tests", tmp_path) == job
    assert resolve_job("../pipelines/j.py", tmp_path / "tests", None) == job
    assert resolve_job(str(job), None, None) == job
    with pytest.raises(RunError, match=r"job script 'nope.py' not found; looked at: .*tests/nope.py"):
        resolve_job("nope.py", tmp_path / "tests", tmp_path)


def _write_batch(cp: Path, n: int, offsets: str, commit: bool) -> None:
    (cp / "offsets").mkdir(parents=True, exist_ok=True)
    (cp / "commits").mkdir(parents=True, exist_ok=True)
    (cp / "offsets" / str(n)).write_text('v1\n{"batchWatermarkMs":0}\n' + offsets + "\n")
    if commit:
        (cp / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_committed_past_reads_the_newest_committed_batch(tmp_path: Path) -> None:
    w = CheckpointWatcher(tmp_path)
    assert not committed_past(w, "in", {0: 5})
    assert committed_past(w, "in", {0: 0, 1: 0})
    _write_batch(tmp_path, 0, '{"in":{"0":3,"1":7}}', commit=True)
    assert committed_past(w, "in", {0: 3, 1: 7})
    assert not committed_past(w, "in", {0: 4, 1: 7})
    _write_batch(tmp_path, 1, '{"in":{"0":9,"1":9}}', commit=False)  # planned, not committed
    assert not committed_past(w, "in", {0: 9, 1: 9})
    _write_batch(tmp_path, 1, '{"in":{"0":9,"1":9}}', commit=True)
    assert committed_past(w, "in", {0: 9, 1: 9})
    assert not committed_past(w, "other", {0: 1})


def test_a_job_down_in_the_drain_ends_it_once_its_output_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that exited (and, the faults healed, will not be restarted) cannot catch up: the drain
    waits only until its last output settles, counted from when the job was first seen down."""
    from types import SimpleNamespace

    from pytest_streamchaos.runner.phases import drain

    now = [1000.0]
    monkeypatch.setattr(drain.time, "time", lambda: now[0])
    down = drain.DownSince(settle_seconds=3.0)
    collector = SimpleNamespace(last_arrival=999.0)  # output in flight when the job died still counts
    assert not down.settled(collector.last_arrival)  # first seen down now: wait from here
    now[0] = 1002.0
    collector.last_arrival = 1001.5  # a late output restarts the wait
    assert not down.settled(collector.last_arrival)
    now[0] = 1004.0
    assert not down.settled(collector.last_arrival)
    now[0] = 1004.6
    assert down.settled(collector.last_arrival)


def test_the_drain_never_calls_a_query_idle_while_its_checkpoint_shows_a_batch_running(tmp_path: Path) -> None:
    """A restarted stateful query caught up, then ran its no-data batch for longer than the idle window: the run
    ended inside it and lost the sessions it was closing (43 of 85, 2026-11-28). Planned and not committed is
    running; once committed, the idle window counts from the commit."""
    from pytest_streamchaos.runner.phases.drain import query_idle, running_batch_planned_at

    w = CheckpointWatcher(tmp_path)
    _write_batch(tmp_path, 0, '{"in":{"0":9}}', commit=True)
    _write_batch(tmp_path, 1, '{"in":{"0":9}}', commit=False)  # the no-data batch, running
    now = time.time()
    assert running_batch_planned_at(w) == w.planned_time(1) and w.planned_time(1)  # the settle window's start
    assert not query_idle(now + 60, caught_up_at=now - 5, batch_ends=[now - 5], watcher=w, trigger_seconds=0)
    assert query_idle(now + 60, caught_up_at=now - 5, batch_ends=[now - 5], watcher=None, trigger_seconds=0)
    _write_batch(tmp_path, 1, '{"in":{"0":9}}', commit=True)
    committed = w.commit_time(1)
    assert committed is not None and running_batch_planned_at(w) == 0.0
    assert not query_idle(committed + 0.5, caught_up_at=now - 5, batch_ends=[now - 5], watcher=w, trigger_seconds=0)
    assert query_idle(committed + 1.0, caught_up_at=now - 5, batch_ends=[now - 5], watcher=w, trigger_seconds=0)
    assert not query_idle(committed + 9, caught_up_at=now - 5, batch_ends=[], watcher=w, trigger_seconds=5)


def test_a_caught_up_query_without_state_is_idle_once_its_last_batch_committed(tmp_path: Path) -> None:
    """A single query whose progress shows no state operator plans no batch without new input: once it has
    committed the input's end offsets and no batch runs, the drain waits only STATELESS_IDLE_S, not two
    triggers. A stateful one, a second query beside it, or no progress at all keep the two-trigger wait; a
    batch running still holds both."""
    from pytest_streamchaos.runner.phases.drain import STATELESS_IDLE_S, one_stateless_query, query_idle

    w = CheckpointWatcher(tmp_path)
    _write_batch(tmp_path, 0, '{"in":{"0":9}}', commit=True)
    committed = w.commit_time(0)
    assert committed is not None
    after = committed + STATELESS_IDLE_S + 0.01
    assert query_idle(after, caught_up_at=committed, batch_ends=[committed], watcher=w, trigger_seconds=1,
                      stateless=True)
    assert not query_idle(after, caught_up_at=committed, batch_ends=[committed], watcher=w, trigger_seconds=1)
    assert not query_idle(after, caught_up_at=committed, batch_ends=[committed], watcher=None, trigger_seconds=1,
                          stateless=True)  # no checkpoint to tell a running batch: two triggers
    _write_batch(tmp_path, 1, '{"in":{"0":12}}', commit=False)
    assert not query_idle(committed + 60, caught_up_at=committed, batch_ends=[committed], watcher=w,
                          trigger_seconds=1, stateless=True)

    plain = {"id": "q1", "stateOperators": []}
    assert one_stateless_query([plain, plain])
    assert not one_stateless_query([])
    assert not one_stateless_query([plain, {"id": "q1", "stateOperators": [{"numRowsTotal": 3}]}])
    assert not one_stateless_query([plain, {"id": "q2", "stateOperators": []}])  # a console query beside it
