"""Jobs with their checkpoint and output on HDFS (``checkpoint="hdfs"``): a NameNode and two DataNodes,
each its own JVM, faults on them, the file sink read back through WebHDFS.

- A NameNode killed (SIGKILL) and restarted: the job's next checkpoint write fails and its query stops
  (Spark does not retry a metadata log write); supervised (``supervise=True``, what a production
  scheduler does), its driver comes back, waits out the NameNode's restart and safe mode, and resumes
  from the checkpoint: nothing lost, and the recovery phases name the restart.
- One DataNode of two killed with replication 2: the other holds a replica of every block, so the job
  goes on; Spark's writes of new blocks fail over to the live DataNode. The verdict shows it masked or
  at most degraded, never an outage.
- A job whose code writes a relative checkpoint and a relative JSON file sink lands on HDFS unchanged
  (HDFS is its default filesystem), exactly-once across a driver kill.
"""

import pytest

from pytest_streamchaos import IdentityOracle, JobSetup, RecordSpec, kill_datanode, kill_driver, kill_namenode

ALO = "pipelines/enrich_at_least_once.py"


# the default run's proof of an HDFS checkpoint under a NameNode kill (one per capability: docs/setup.md#slow-tests)
@pytest.mark.chaos(backend="local")
@kill_namenode(after=8, restart_after=4)
def test_checkpoint_on_hdfs_survives_a_namenode_kill(chaos):
    # no duration: the load lasts until the recovery has settled, at most 90 s after the heal (kill_namenode's
    # least recovery window). The output comes back only once the restarted NameNode has left safe mode (the
    # DataNodes' re-registration: 5-14 s after its restart) and the supervised driver's query has started again:
    # 15 s after the kill on one CI run, 28-30 s on others, 37 s on a busy one (where 52 s of fixed load was too
    # short to see the catch-up and the 5 s hold after it)
    run = chaos.run(ALO, rate=100, guarantee="at-least-once", setup=JobSetup(checkpoint="hdfs", supervise=True))
    print(run.describe())
    assert run.checkpoint_storage == "hdfs" and run.checkpoint.startswith("hdfs://")
    assert run.lost == 0 and run.incorrect == 0
    assert run.driver_restarts_by_supervisor >= 1, "the query should have failed on the lost NameNode"
    (fault,) = run.faults
    # the NameNode's restart and its return from safe mode are phases of the job's recovery
    kinds = [ph["kind"] for ph in fault.phases]
    assert "fault_healed" in kinds and "namenode_safemode_exit" in kinds, fault.phases
    assert fault.recovered, fault
    assert run.load.planned_s == 8 + 4 + 90 and "no duration given" in run.load.why


# slow (-m slow): tests/papers/test_paper_004's short version kills the same DataNode under the same job and
# asserts all of this (datanode_dead, masked or degraded, nothing lost) and more (downtime 0)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_datanode(index=0, after=8)
def test_one_datanode_of_two_lost_costs_no_record_and_no_outage(chaos):
    run = chaos.run(ALO, rate=100, duration=30, guarantee="at-least-once", setup=JobSetup(checkpoint="hdfs"))
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    (fault,) = run.faults
    # the NameNode noticed (the DataNode declared dead), the job hardly did
    assert any(e.kind == "datanode_dead" for e in run.timeline), "the NameNode should declare the DataNode dead"
    assert fault.verdict in ("masked", "degraded"), fault
    assert run.downtime < 5.0


def invoice(rec: RecordSpec) -> dict:
    items = [{"ItemCode": "100", "ItemDescription": "item", "ItemPrice": 9.5, "ItemQty": 1, "TotalValue": 9.5}]
    return {"InvoiceNumber": str(rec.id), "CreatedTime": rec.ts, "StoreID": rec.key, "CustomerCardNo": "1",
            "TotalAmount": 9.5, "InvoiceLineItems": items}


@pytest.mark.slow  # ./dev test keeps a representative: test_checkpoint_on_hdfs_survives_a_namenode_kill
@pytest.mark.chaos(backend="local")
@kill_driver(after=8, restart_after=1)
def test_relative_file_sink_and_checkpoint_land_on_hdfs_and_stay_exactly_once(chaos):
    run = chaos.run("pipelines/invoice_items.py", rate=50, duration=20, guarantee="exactly-once",
                    setup=JobSetup(checkpoint="hdfs", args=["{bootstrap_servers}", "invoices"]),
                    inputs={"invoices": invoice}, outputs={"file:output": "InvoiceNumber"}, oracle=IdentityOracle())
    print(run.describe())
    assert run.checkpoint.startswith("hdfs://") and run.checkpoint.endswith("chk-point-dir")
    assert run.driver_launches == 2
    assert run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
