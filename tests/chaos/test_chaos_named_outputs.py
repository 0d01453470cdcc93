"""The outputs a test names, checked against what the job's queries really write (issue 47), on public-style
jobs run unchanged: a job of two queries (the console and Kafka) whose second query starts after the first
one's progress, and Kafka-to-Delta jobs that write relative paths -- hard-coded, or from argv.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lakehouse import order

from pytest_streamchaos import JobSetup, RecordSpec, kill_driver
from pytest_streamchaos.observe import delta
from pytest_streamchaos.observe.progress import SparkProgress

JOBS = Path(__file__).parent / "jobs"


def signup(rec: RecordSpec) -> dict:
    """A sign-up as a web form sends it; the input id is in ``name`` (the job's key field)."""
    return {"name": str(rec.id), "email": f"user{rec.id}@example.com", "country": rec.key, "signed_up_at": rec.ts}


def replayed(run: Any) -> tuple[int, list[str]]:
    """The aimed kill landed between batch N's output and ``commits/N``; N and the driver launches' app ids."""
    (fault,) = run.faults
    assert fault.hit and fault.aim.phase == "output_visible_uncommitted", fault.aim
    held = [e.detail["path"] for e in run.timeline if e.kind == "checkpoint_held"]
    assert held and Path(held[0]).resolve().is_relative_to(Path(run.checkpoint).resolve()), (
        f"the hold was in {held}, not in the tracked query's checkpoint {run.checkpoint}")
    progress = SparkProgress(Path(run.job_workdir) / "eventlog")
    progress.poll()
    return int(fault.aim.batch), progress.app_ids


# the console query first (it reports progress before the Kafka query started), or the Kafka query first (the
# console query is then the last started one, with a temporary checkpoint of its own)
@pytest.mark.parametrize("job", ["signups_console_and_kafka.py", "signups_kafka_and_console.py"])
@pytest.mark.chaos(backend="local")  # localhost:9092 in the job
@kill_driver(when="output_visible_uncommitted")
def test_a_job_of_a_console_query_and_a_kafka_query_gets_its_per_record_verdict_under_a_driver_kill(chaos, job):
    """The sink check waits for the job's queries before it judges ``outputs=``; the run follows the Kafka query's
    checkpoint, so the aimed kill lands in its batch, and its output is read record by record."""
    run = chaos.run(str(JOBS / job), rate=100, duration=20, guarantee="at-least-once",
                    kafka_port=9092, inputs={"input00": signup}, outputs={"output00": "name"},
                    setup=JobSetup(supervise=True))
    print(run.describe())
    batch, apps = replayed(run)
    assert len(apps) == 2 and run.driver_launches == 2, "the driver was killed and started again"
    started = {e.detail.get("name") for e in run.timeline if e.kind == "query_started"}
    assert started == {"console-output", "kafka-output"}, started
    assert run.expected > 1000 and run.lost == 0 and run.incorrect == 0
    # Kafka's sink is at-least-once: batch N was written, not committed, and written again after the restart
    assert run.duplicates > 0, f"batch {batch} was replayed into output00"
    assert run.guarantee_delivered == "at-least-once"


def relative_delta(chaos: Any, job: str, args: list[str] | None = None) -> Any:
    """A Kafka-to-Delta job that writes ``data/bronze`` (relative) under the test's driver kill, the table named
    as the job names it; asserts the kill's effect and the exactly-once verdict, returns the run."""
    run = chaos.run(str(JOBS / job), rate=100, duration=20, guarantee="exactly-once", kafka_port=9092,
                    inputs={"orders": order}, outputs={"delta:data/bronze": "order_id"},
                    setup=JobSetup(args=args, supervise=True))
    print(run.describe())
    batch, apps = replayed(run)
    assert len(apps) == 2 and run.driver_launches == 2, "the driver was killed and started again"
    # the table is where Spark resolved the relative path: the driver's working directory
    table = Path(run.job_workdir) / "data" / "bronze"
    epochs = [c.parameters.get("epochId") for c in delta.version_changes(str(table), removed=False)
              if c.operation == "STREAMING UPDATE"]
    assert str(batch) in epochs and len(epochs) == len(set(epochs)), "Delta's sink skipped the replayed batch"
    assert run.checkpoint.endswith("data/_checkpoints/bronze"), run.checkpoint
    assert run.expected > 1000 and run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    assert run.guarantee_delivered == "exactly-once"
    return run


@pytest.mark.chaos(backend="local")  # localhost:9092 in the job
@kill_driver(when="output_visible_uncommitted")
def test_a_delta_job_that_hard_codes_a_relative_path_is_exactly_once_under_a_driver_kill(chaos):
    relative_delta(chaos, "orders_to_delta_relative.py")


# slow (-m slow): the default run keeps the hard-coded relative path above (the same resolution, from argv here)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_driver(when="output_visible_uncommitted")
def test_a_delta_job_given_relative_paths_in_argv_is_exactly_once_under_a_driver_kill(chaos):
    relative_delta(chaos, "orders_to_delta_args.py",
                   ["--output-path", "data/bronze", "--checkpoint-path", "data/_checkpoints/bronze"])


def invoice(rec: RecordSpec) -> dict:
    items = [{"ItemCode": "100", "ItemDescription": "item", "ItemPrice": 9.5, "ItemQty": 1, "TotalValue": 9.5}]
    return {"InvoiceNumber": str(rec.id), "CreatedTime": rec.ts, "StoreID": rec.key, "CustomerCardNo": "1",
            "TotalAmount": 9.5, "InvoiceLineItems": items}


# slow (-m slow): the relative outputs of the default run are standalone's (the two Delta jobs above)
@pytest.mark.slow
@pytest.mark.parametrize("runtime", [pytest.param("connect", marks=pytest.mark.chaos(spark="connect", backend="local")),
                                     pytest.param("yarn", marks=pytest.mark.chaos(spark="yarn", backend="local"))])
def test_a_relative_output_is_read_where_each_runtimes_driver_writes_it(chaos, runtime):
    """Spark Connect (the server's working directory is the job's) and YARN's client mode: the job's relative
    file sink ``output`` and its relative checkpoint land in the directory the run reads, as the driver's own
    environment event says (``user.dir``)."""
    run = chaos.run("pipelines/invoice_items.py", rate=50, duration=15, guarantee="exactly-once",
                    setup=JobSetup(args=["{bootstrap_servers}", "invoices"]), inputs={"invoices": invoice},
                    outputs={"file:output": "InvoiceNumber"})
    print(run.describe())
    progress = SparkProgress(Path(run.job_workdir) / "eventlog")
    progress.poll()
    assert {d.cwd for d in progress.drivers.values()} == {str(Path(run.job_workdir).resolve())}, progress.drivers
    assert run.expected > 300 and run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
