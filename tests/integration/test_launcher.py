"""The job launcher on the real local stack: spark-submit in client mode against the session's
standalone cluster, logs, kill of the whole driver group, restart from the checkpoint, error tails."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.spark.launcher import JobFailed, JobLauncher, LaunchError
from pytest_streamchaos.testing import pid_alive

pytestmark = pytest.mark.integration

JOBS = Path(__file__).resolve().parent / "jobs"


@pytest.fixture
def launcher(spark_cluster, tmp_path: Path):
    launcher = JobLauncher.for_cluster(spark_cluster, tmp_path / "jobs")
    yield launcher
    launcher.stop_all()




def test_batch_job_runs_on_the_cluster_with_logs_and_events(launcher: JobLauncher):
    job = launcher.submit(JOBS / "batch_count.py")
    code = job.wait_for_exit(300)
    assert code == 0, job.tail_log()
    log = job.log_path.read_text()
    assert "STREAMCHAOS-RESULT sum=499500" in log
    assert "launch 1 of batch_count" in log
    job.progress.poll()
    kinds = [e.kind for e in job.progress.timeline]
    assert kinds[0] == "driver_started" and kinds[-1] == "driver_stopped"
    assert "executor_added" in kinds  # the work ran on the cluster's executors, not in the driver
    assert job.app_id is not None and job.app_id.startswith("app-")


def test_every_job_gets_sparks_own_kafka_connector_and_a_pinned_one_is_replaced(launcher: JobLauncher):
    """spark-sql-kafka-0-10 of the installed pyspark is in spark.jars (nothing resolved at job start); a
    connector of another line pinned in spark.jars.packages is taken out and named in one line."""
    import json

    from pytest_streamchaos.spark import connector
    from pytest_streamchaos.spark.launcher import spark_home

    ours = connector.connector(spark_home()).coordinates[0]
    # a connector of the other Spark line than the installed one (docs/spark-versions.md)
    pin = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0" if connector.line(ours) == ("2.12", "3.5")
           else "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0")
    job = launcher.submit(JOBS / "batch_count.py", conf={"spark.jars.packages": pin})
    assert job.wait_for_exit(300) == 0, job.tail_log()
    jars = job.effective_conf["spark.jars"].split(",")
    assert any(ours.split(":", 1)[1].replace(":", "-") + ".jar" in j for j in jars), jars
    assert "spark.jars.packages" not in job.effective_conf
    (note,) = job.notes
    assert pin in note and "spark.jars.packages" in note and f"connector {ours} instead" in note
    # the driver really ran with it: its environment in the event log lists the connector among its jars
    env = next(json.loads(line) for f in job.event_log_dir.iterdir() for line in f.read_text().splitlines()
               if '"SparkListenerEnvironmentUpdate"' in line)
    assert any("spark-sql-kafka-0-10" in str(k) for k in env["Classpath Entries"]), "connector not on the classpath"
    assert ":: resolving dependencies" not in job.log_path.read_text(), "no Ivy resolution at job start"


def test_failing_script_reports_its_log_tail(launcher: JobLauncher):
    job = launcher.submit(JOBS / "fail_fast.py")
    assert job.wait_for_exit(120) != 0
    with pytest.raises(JobFailed, match="streamchaos-test-boom") as err:
        job.check()
    assert err.value.returncode != 0 and "fail_fast.py" in str(err.value)


def test_missing_script_fails_before_anything_starts(launcher: JobLauncher, tmp_path: Path):
    with pytest.raises(LaunchError, match="does not exist"):
        launcher.submit(tmp_path / "missing.py")
    assert launcher.jobs == []


def test_kill_driver_group_then_restart_resumes_from_checkpoint(launcher: JobLauncher, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    checkpoint = tmp_path / "checkpoint"
    job = launcher.submit(JOBS / "rate_to_files.py", env={
        "RATE_OUT_DIR": str(out), "STREAMCHAOS_CHECKPOINT_DIR": str(checkpoint),
        "STREAMCHAOS_TRIGGER_SECONDS": "1"})
    cw = CheckpointWatcher(checkpoint)
    job.wait_for(lambda j: (cw.latest_committed_batch() or -1) >= 2, 300, "3 committed micro-batches")
    job.wait_for(lambda j: len(j.executor_pids()) >= 1, 120, "the job's executors")

    driver = job.driver_pids()
    names = {name for p in driver if (name := _name(p))}
    assert "java" in names and any(n.startswith("python") for n in names), names
    executors = job.executor_pids()
    first_app = job.app_id

    job.kill()
    assert not job.alive and job.returncode is not None and job.returncode < 0
    assert [p for p in driver if pid_alive(p)] == []
    assert job.driver_pids() == []
    # The master removes the app when its driver disconnects; the workers then kill its executors.
    _wait_gone(executors, 60)

    committed = cw.latest_committed_batch()
    assert committed is not None
    job.restart()
    job.wait_for_batches(1, timeout=300)
    assert job.app_id != first_app
    resumed = [b["batchId"] for b in job.progress.batches if b["app_id"] == job.app_id]
    # The new driver continues after the last committed batch: no batch is skipped and none before it
    # is re-run.
    assert resumed[0] == committed + 1, (committed, resumed)
    assert "launch 2 of rate_to_files" in job.log_path.read_text()
    assert len(job.launches) == 2 and job.launches[0].returncode is not None
    assert [e.kind for e in job.timeline] == ["driver_launched", "driver_killed", "driver_launched"]

    job.stop()
    assert not job.alive and job.driver_pids() == []


def _name(pid: int) -> str | None:
    """A process's name, None once it is gone (the driver's group has short-lived members: a CI run met one)."""
    try:
        return psutil.Process(pid).name()
    except psutil.NoSuchProcess:
        return None


def _wait_gone(pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while [p for p in pids if pid_alive(p)]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes {[p for p in pids if pid_alive(p)]} still alive after {timeout}s")
        time.sleep(0.2)
