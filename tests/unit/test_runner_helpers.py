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
    ended inside it and lost the sessions it was closing (43 of 85, 2026-11-28); the same with the settle window
    counted from the batch's planning, when the batch ran longer than it: the last 10 windows of a 5-minute sum
    reported missing (2026-11-29). Planned and not committed is running; once committed, the idle and the settle
    windows count from the commit."""
    from pytest_streamchaos.runner.phases.drain import last_commit, query_idle

    w = CheckpointWatcher(tmp_path)
    _write_batch(tmp_path, 0, '{"in":{"0":9}}', commit=True)
    _write_batch(tmp_path, 1, '{"in":{"0":9}}', commit=False)  # the no-data batch, running
    now = time.time()
    assert w.uncommitted_batch() == 1 and last_commit(w) == w.commit_time(0) and last_commit(None) == 0.0
    assert not query_idle(now + 60, caught_up_at=now - 5, batch_ends=[now - 5], watcher=w, trigger_seconds=0)
    assert query_idle(now + 60, caught_up_at=now - 5, batch_ends=[now - 5], watcher=None, trigger_seconds=0)
    _write_batch(tmp_path, 1, '{"in":{"0":9}}', commit=True)
    committed = w.commit_time(1)
    assert committed is not None and w.uncommitted_batch() is None and last_commit(w) == committed
    assert not query_idle(committed + 0.5, caught_up_at=now - 5, batch_ends=[now - 5], watcher=w, trigger_seconds=0)
    assert query_idle(committed + 1.0, caught_up_at=now - 5, batch_ends=[now - 5], watcher=w, trigger_seconds=0)
    assert not query_idle(committed + 9, caught_up_at=now - 5, batch_ends=[], watcher=w, trigger_seconds=5)


def test_a_no_data_batch_running_longer_than_the_settle_window_is_waited_for(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The drain does not settle while a batch runs, however long it takes, and counts its settle window from the
    batch's commit: a restarted stateful query's last no-data batch writes the windows it closes before it commits
    (the drain ended 5 s after its planning and 10 windows were reported missing, 2026-11-29)."""
    from types import SimpleNamespace

    from pytest_streamchaos.runner.phases import drain

    now = [time.time()]
    monkeypatch.setattr(drain.time, "time", lambda: now[0])
    w = CheckpointWatcher(tmp_path)
    _write_batch(tmp_path, 0, '{"in":{"0":9}}', commit=True)
    _write_batch(tmp_path, 1, '{"in":{"0":9}}', commit=False)  # the no-data batch, running
    spec = SimpleNamespace(settle_seconds=5.0, trigger_seconds=0.5)
    inputs = SimpleNamespace(oracle=None, settle_pinned=False, real_time=None)
    obs = SimpleNamespace(collector=SimpleNamespace(), progress=SimpleNamespace(batches=[]),
                          checkpoint=SimpleNamespace(found=True, watcher=w),
                          sinks=SimpleNamespace(last_output=lambda collector, progress: None))
    d = drain.Drain.__new__(drain.Drain)
    d.ctx, d.obs = SimpleNamespace(spec=spec, inputs=inputs), obs  # type: ignore[assignment]
    caught_up = now[0]
    now[0] += 60  # a minute into the batch, long past the settle and idle windows
    assert d._settled(caught_up) is None
    _write_batch(tmp_path, 1, '{"in":{"0":9}}', commit=True)
    now[0] = (w.commit_time(1) or 0.0) + 0.5
    assert d._settled(caught_up) is None  # just committed: another may follow
    now[0] += 2.0
    assert d._settled(caught_up) == "idle"


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
