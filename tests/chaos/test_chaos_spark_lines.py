"""The Spark lines the plugin runs on (docs/spark-versions.md): a public-style job pinned to Spark 3.5's
Kafka connector runs unchanged on whichever line is installed, under a worker kill.

The job (``tests/chaos/jobs/orders_pinned_spark35.py``) sets ``spark.jars.packages`` to
``spark-sql-kafka-0-10_2.12:3.5.0`` in its own code. Under spark-submit that pin does nothing (no Ivy
resolution: the driver's log is checked); the job runs on the connector of the installed pyspark, which
the launcher gives it in ``spark.jars``. On pyspark 3.5.x the pin is of the installed line and just runs;
on 4.x it is of another line and the run's warnings say in one line what it runs on instead.
"""

from pathlib import Path

import pytest

from pytest_streamchaos import RecordSpec, kill_worker
from pytest_streamchaos.spark import connector
from pytest_streamchaos.spark.launcher import spark_home

JOB = "tests/chaos/jobs/orders_pinned_spark35.py"
PINNED = "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0"
#: what spark-submit prints (to stderr, whatever the log level) when it resolves spark.jars.packages
IVY_LINES = (":: resolving dependencies ::", ":: loading settings ::", "Ivy Default Cache set to")


def order(rec: RecordSpec) -> dict:
    """An order as a shop would send it; the input id is the order id (the output's key)."""
    return {"order_id": str(rec.id), "customer": rec.key, "amount": round(rec.rng.uniform(1, 500), 2),
            "created_at": rec.ts}


@pytest.mark.slow  # ./dev test runs it on the Spark 3.5 line: tests/chaos/test_spark35_line.py
@pytest.mark.chaos(backend="local")  # localhost:9092 in the job: out of reach from executors in containers
@kill_worker(after=10, restart_after=5)
def test_a_public_job_pinned_to_the_spark35_connector_runs_unchanged_under_a_worker_kill(chaos):
    ours = connector.connector(spark_home()).coordinates[0]
    run = chaos.run(JOB, rate=100, duration=20, guarantee="at-least-once", inputs={"orders": order},
                    outputs={"shipments": "key"}, kafka_port=9092)
    print(run.describe())
    assert run.expected > 1000
    assert run.lost == 0 and run.incorrect == 0
    assert any(e.kind == "executor_removed" for e in run.timeline), "the worker kill must cost the job an executor"
    # the job ran on the installed line's connector, given by the launcher, and nothing was resolved at start
    assert ours.split(":", 1)[1].replace(":", "-") + ".jar" in run.spark_conf["spark.jars"]
    assert "spark.jars.packages" not in run.spark_conf
    log = Path(run.job_log).read_text(errors="replace")
    assert not [line for line in IVY_LINES if line in log], "spark-submit resolved packages at the job's start"
    notes = [w for w in run.warnings if PINNED in w]
    if connector.line(PINNED) == connector.line(ours):
        assert notes == [], "a pin of the installed Spark line just runs"
    else:
        assert len(notes) == 1 and f"uses Spark's Kafka connector {ours} instead" in notes[0]
        assert f"{PINNED} (orders_pinned_spark35.py:" in notes[0], "the note names the pin and where it is"
