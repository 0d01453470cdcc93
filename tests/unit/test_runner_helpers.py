"""Pure helpers of the run engine: job path resolution and the drain's caught-up test."""

from pathlib import Path

import pytest

from pytest_streamchaos.observe.progress import CheckpointWatcher
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
