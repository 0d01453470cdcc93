"""A job that is a folder -- a helper module, a data file opened by a relative path, a hard-coded absolute
checkpoint -- runs unchanged (issue 27, items 4, 5 and 8).

The job (``tests/chaos/jobs/shop_enrich/``) is written to be run as ``cd shop_enrich && spark-submit
enrich_orders.py``. Its folder is on its ``sys.path`` (the helper is imported on the driver and, through a
UDF, on the executors); ``files=`` brings the CSV into the driver's working directory, as ``--files``
would. Without it the job dies of its own ``FileNotFoundError``, which the run names in one line within
seconds. Its checkpoint is a literal ``/tmp`` path: a second run would resume from the first run's
checkpoint, so the run refuses it at once, naming the path, unless told to clear it.
"""

import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_streamchaos import JobSetup, RecordSpec
from pytest_streamchaos.observe.checkpoints import checkpoint_query_id
from pytest_streamchaos.runner import RunError
from pytest_streamchaos.spark import connector
from pytest_streamchaos.spark.launcher import spark_home

JOB = "tests/chaos/jobs/shop_enrich/enrich_orders.py"
CHECKPOINT = Path("/tmp/streamchaos-test-shop-enrich-chk")  # what the job hard-codes
#: what spark-submit prints when it resolves spark.jars.packages at a driver's start
IVY_LINES = (":: resolving dependencies ::", ":: loading settings ::", "Ivy Default Cache set to")


def order(rec: RecordSpec) -> dict:
    """An order; the input id is the order id (the output's key)."""
    return {"order_id": str(rec.id), "customer": rec.key, "amount": round(rec.rng.uniform(1, 500), 2)}


def other_line_pin() -> str:
    """A Kafka connector of the Spark line that is not installed (what a job written for it pins)."""
    ours = connector.connector(spark_home()).coordinates[0]
    return ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0" if connector.line(ours) == ("2.12", "3.5")
            else "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0")


@pytest.fixture
def no_checkpoint():
    """The job's hard-coded checkpoint, absent before the test and removed after it."""
    shutil.rmtree(CHECKPOINT, ignore_errors=True)
    yield CHECKPOINT
    shutil.rmtree(CHECKPOINT, ignore_errors=True)


def run_job(chaos, setup=None, **kwargs):
    return chaos.run(JOB, rate=100, duration=10, guarantee="at-least-once", inputs={"orders": order},
                     outputs={"orders-enriched": "key"}, setup=replace(setup or JobSetup(), kafka_port=9092),
                     **kwargs)


# ./dev test keeps a representative: the missing data file below
@pytest.mark.slow
@pytest.mark.chaos(backend="local")  # localhost:9092 in the job: out of reach from executors in containers
def test_a_job_folder_runs_with_its_files_and_a_second_run_never_resumes_the_first_runs_checkpoint(
        chaos, no_checkpoint):
    pin = other_line_pin()
    packages = f"{pin},org.apache.kafka:kafka-clients:3.5.1"
    run = run_job(chaos, setup=JobSetup(files=["regions.csv"], conf={"spark.jars.packages": packages}))
    print(run.describe())
    # the CSV was read and joined (an inner join: a customer without a region would be lost), and the
    # helper module imported on the driver and the executors (the UDF)
    assert run.expected > 500
    assert run.lost == 0 and run.incorrect == 0
    assert run.checkpoint == str(no_checkpoint), "the checkpoint literal in the job's code is watched"
    # item 8: the pins are named in one line each, taken out, and nothing is resolved at the driver's start
    notes = [w for w in run.warnings if pin in w or "kafka-clients" in w]
    assert len(notes) == 2 and all(n in run.describe() for n in notes), notes
    assert "spark.jars.packages" not in run.spark_conf
    log = Path(run.job_log).read_text(errors="replace")
    assert not [line for line in IVY_LINES if line in log], "spark-submit resolved packages at the job's start"
    started = [e.t for e in run.timeline if e.kind == "query_started"][0]
    submitted = [e.t for e in run.timeline if e.kind == "job_submitted"][0]
    print(f"job submitted -> query started: {started - submitted:.1f} s")
    first_query = checkpoint_query_id(no_checkpoint)
    assert first_query is not None

    # the checkpoint the first run left: refused before the job starts, naming the path and the option
    t0 = time.monotonic()
    with pytest.raises(RunError) as refused:
        run_job(chaos, setup=JobSetup(files=["regions.csv"]))
    first = str(refused.value).splitlines()[0]
    print(f"refused in {time.monotonic() - t0:.1f} s: {first}")
    assert time.monotonic() - t0 < 30
    assert str(no_checkpoint) in first and "enrich_orders.py:" in first and 'stale_checkpoint="clear"' in first

    # cleared on request: a new query (a new checkpoint) and the run's verdict holds
    again = run_job(chaos, setup=JobSetup(files=["regions.csv"], stale_checkpoint="clear"))
    print(again.describe())
    assert any(str(no_checkpoint) in w and "deleted" in w for w in again.warnings)
    assert again.expected > 500 and again.lost == 0 and again.incorrect == 0
    assert checkpoint_query_id(no_checkpoint) not in (None, first_query), "the query started afresh"


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos(backend="local")
def test_a_data_file_the_job_cannot_find_fails_the_run_in_seconds_with_the_jobs_own_error(chaos, no_checkpoint):
    t0 = time.monotonic()
    with pytest.raises(RunError) as failed:
        run_job(chaos)  # no files=: regions.csv is not in the driver's working directory
    took = time.monotonic() - t0
    first = str(failed.value).splitlines()[0]
    print(f"failed in {took:.1f} s: {first}")
    assert took < 30, "the driver's death ends the run at once, not after warmup_timeout"
    assert "FileNotFoundError" in first and "'regions.csv'" in first
    assert "files=['regions.csv']" in first, "the one line names the fix"
