"""The checkpoint gate in a real Spark job on the standalone cluster: the JVM's checkpoint renames go
through libc (Hadoop's RawLocalFileSystem -> java.io.File.renameTo), so the preloaded gate holds the
driver at ``commits/N`` and ``offsets/N`` and an executor's task at a state store's ``N.delta``; and a
driver killed while held never writes the commit, and replays the batch when restarted."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.spark.launcher import JobLauncher
from pytest_streamchaos.stack.checkpoint_gate import CheckpointGate
from pytest_streamchaos.testing import wait_for

pytestmark = pytest.mark.integration

JOB = Path(__file__).resolve().parent / "jobs" / "rate_counts_to_files.py"


@pytest.fixture
def gated_job(spark_cluster, tmp_path: Path):
    """The stateful rate job with the gate preloaded into its driver and executors, past its first commit."""
    gate = CheckpointGate(tmp_path / "gate")
    launcher = JobLauncher.for_cluster(spark_cluster, tmp_path / "jobs")
    out, cp = tmp_path / "out", tmp_path / "cp"
    out.mkdir()
    env = {**gate.env(), "RATE_OUT_DIR": str(out), "STREAMCHAOS_CHECKPOINT_DIR": str(cp)}
    job = launcher.submit(JOB, env=env, conf=gate.executor_conf())
    watcher = CheckpointWatcher(cp)
    try:
        wait_for(lambda: watcher.latest_committed_batch() is not None, 180,
                 "the job's first committed batch", lambda: job.tail_log(5))
        yield job, gate, watcher, out
    finally:
        gate.close()
        launcher.stop_all()


def hold_next(gate: CheckpointGate, watcher: CheckpointWatcher, log: str, when: str, shift: int = 0):
    """Arm the gate for the next batch to be planned (``shift``: the log's number minus the batch id) and
    wait for the hold: ``(batch, hold)``."""
    n = (watcher.latest_offset_batch() or 0) + 1
    gate.arm(log, when, n + shift)
    held = gate.wait_held(60)
    assert held is not None, f"no hold at {log} {when} {n + shift} within 60 s"
    return n, held


def test_the_jvms_checkpoint_renames_are_held_where_each_rule_says(gated_job):
    job, gate, watcher, out = gated_job
    cp = Path(watcher.checkpoint_dir)

    n, held = hold_next(gate, watcher, "commits", "before")
    assert held.batch == n and held.pid in job.driver_pids(), (held, job.driver_pids())
    assert (cp / "offsets" / str(n)).exists() and not (cp / "commits" / str(n)).exists()
    assert (out / f"batch={n}" / "_SUCCESS").exists(), "held at commits/N: the batch's output is visible"
    gate.release()

    n, held = hold_next(gate, watcher, "offsets", "after")
    assert held.batch == n and held.pid in job.driver_pids()
    assert (cp / "offsets" / str(n)).exists() and not (out / f"batch={n}").exists()
    gate.release()

    n, held = hold_next(gate, watcher, "state", "before", shift=1)  # batch N commits state store version N + 1
    assert held.batch == n + 1 and held.path.endswith(f"/{n + 1}.delta")
    assert held.pid in job.executor_pids() and held.pid not in job.driver_pids() and held.in_task, held
    assert not Path(held.path).exists()
    gate.release()
    wait_for(lambda: Path(held.path).exists(), 30, f"{held.path} written once released")


def test_a_driver_killed_while_held_at_the_commit_replays_the_batch(gated_job):
    job, gate, watcher, out = gated_job
    cp = Path(watcher.checkpoint_dir)
    n, _ = hold_next(gate, watcher, "commits", "before")
    job.kill(wait=False)
    gate.release()  # the kill is sent: the held thread dies with its process
    job.wait_gone(15)
    assert not (cp / "commits" / str(n)).exists(), "the commit was never written"
    assert (out / f"batch={n}" / "_SUCCESS").exists()
    job.restart()  # the gate stays armed, and spent: the replay is not held again

    def ran() -> list[str]:
        job.progress.poll()
        return [b["app_id"] for b in job.progress.batches if b["batchId"] == n]

    # Spark reports a batch's progress after its commit: the first launch never did for batch N, the second
    # ran it again from its logged offsets
    apps = wait_for(ran, 180, f"batch {n}'s progress after the restart", lambda: job.tail_log(5))
    assert apps == [job.progress.app_ids[-1]] and len(job.progress.app_ids) == 2, (apps, job.progress.app_ids)
    assert (cp / "commits" / str(n)).exists()
