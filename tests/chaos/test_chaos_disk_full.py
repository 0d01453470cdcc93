"""The disk under the query's checkpoint runs full (``@fill_disk``), on a job written the way people
write them: ``pipelines/notifications.py`` (Kafka to Kafka, ``format("kafka")``, Spark's defaults, the
broker and topics hard-coded, its own relative checkpoint directory), run unchanged.

What a user expects: while no byte is free, Spark's next checkpoint write fails ("No space left on
device") and the query stops; a supervisor that restarts the driver (``supervise=True``, as a
production scheduler would) cannot get it going until the disk has room again; once it has, the job
resumes from its checkpoint and nothing is lost.
"""

from pathlib import Path

import pytest

from pytest_streamchaos import JobSetup, RecordSpec, fill_disk
from pytest_streamchaos.observe.progress import SparkProgress

FULL_S = 15.0


def invoice(rec: RecordSpec) -> dict:
    """An invoice as a point-of-sale system might send it; the input id is the invoice number."""
    return {"InvoiceNumber": str(rec.id), "CreatedTime": rec.ts, "StoreID": rec.key,
            "CustomerCardNo": str(rec.rng.randrange(10**8, 10**9)), "TotalAmount": 9.5 * (1 + rec.id % 3)}


@pytest.mark.slow  # ./dev test keeps the disk fault itself in tests/integration/test_disk_fault.py (no Spark job)
@pytest.mark.chaos(backend="local")  # localhost:9092 in the job: out of reach from executors in containers
@fill_disk(after=8, duration=FULL_S)
def test_a_full_checkpoint_disk_stops_the_query_until_it_has_room_and_nothing_is_lost(chaos):
    run = chaos.run("pipelines/notifications.py", rate=100, guarantee="at-least-once",
                    inputs={"invoices": invoice}, outputs={"notifications": "key"}, kafka_port=9092,
                    setup=JobSetup(supervise=True))
    print(run.describe())
    (fault,) = run.faults
    (injected,) = [e for e in run.timeline if e.kind == "fault_injected"]
    (healed,) = [e for e in run.timeline if e.kind == "fault_healed"]
    assert injected.detail["free_bytes"] < 4096, "the filesystem under the checkpoint was full"
    assert run.checkpoint.endswith("chk-point-dir"), "the job's own relative checkpoint was on it"
    # while it was full: the query failed on its checkpoint write, with the disk's own error (the event log
    # gives a query's end no time of its own, so its stamp is the query's last progress: the driver's
    # exit, seen by the supervisor, is what is timed)
    failed = [e for e in run.timeline if e.kind == "query_terminated"
              and "No space left on device" in str(e.detail.get("exception"))]
    assert failed, "the query must stop on 'No space left on device' while the disk is full"
    exits = [e.t for e in run.timeline if e.kind == "driver_exited" and e.t >= injected.t]
    assert exits and exits[0] <= healed.t, "the driver exited while the disk was full"
    # no micro-batch committed while it was full (Spark reports a batch's progress once it committed)
    progress = SparkProgress(Path(run.job_workdir) / "eventlog")
    progress.poll()
    committed = [b["batchId"] for b in progress.batches if injected.t + 0.5 < b["t_end"] < healed.t]
    assert not committed, f"batches {committed} committed while the disk was full"
    # after the heal: the supervisor's restart resumes from the checkpoint; nothing lost or wrong
    assert run.driver_restarts_by_supervisor >= 1
    assert any(b["t_end"] > healed.t for b in progress.batches), "the job committed batches again"
    assert fault.recovered, f"the job did not recover after the disk had room again: {fault.verdict}"
    assert run.lost == 0 and run.incorrect == 0
    assert run.guarantee_delivered in ("exactly-once", "at-least-once")
