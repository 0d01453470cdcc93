"""A damaged checkpoint, on jobs written the way people write them, run unchanged. Each fault stops the driver at
its moment (the checkpoint gate holds it: nothing in flight), damages the files, and starts the driver again
from them; each test asserts the files before and after (the ``fault_injected`` event) and what the job did.

- ``drop_commit`` on ``tests/chaos/jobs/clicks_to_json_lake.py`` (``foreachBatch`` appending each batch to a
  JSON lake without its batch id): batch N replays and the lake holds its clicks twice -- found in one run,
  every time (5 of 5 in a slow test); on ``pipelines/notifications.py``
  (Kafka to Kafka, at-least-once) the replay's duplicates are what at-least-once permits.
- ``tear_offsets`` on ``pipelines/notifications.py``: a torn ``offsets/N`` stops the restarted query loudly (the
  default run's representative; the others are ``slow``);
  a stray temporary file is ignored and the job recovers.
- ``damage_state`` on ``pipelines/store_sales_window.py`` (a windowed count per store, Spark's default
  HDFS-backed state store): the newest state file of a partition deleted or truncated: the job fails loudly.
"""

from __future__ import annotations

from typing import Any

import pytest
from planted import hardcoded_paths  # noqa: F401  (an autouse fixture)
from planted import lake as lake_run

from pytest_streamchaos import JobSetup, Load, RecordSpec, damage_state, drop_commit, tear_offsets

NOTIFICATIONS = "pipelines/notifications.py"


def invoice(rec: RecordSpec) -> dict:
    return {"InvoiceNumber": str(rec.id), "CreatedTime": rec.ts, "StoreID": rec.key,
            "CustomerCardNo": str(rec.rng.randrange(10**8, 10**9)), "TotalAmount": 9.5 * (1 + rec.id % 3)}


def sale(rec: RecordSpec) -> dict:
    return {"StoreID": rec.key, "CreatedTime": rec.ts}


def notifications(chaos: Any, duration: float = 50) -> Any:
    run = chaos.run(NOTIFICATIONS, rate=100, duration=duration, guarantee="at-least-once",
                    inputs={"invoices": invoice}, outputs={"notifications": "key"}, kafka_port=9092)
    print(run.describe())
    return run


def injected(run: Any) -> dict:
    [e] = [e for e in run.timeline if e.kind == "fault_injected"]
    return e.detail


def replayed_rows(run: Any, batch: int) -> int:
    """The input rows of ``batch`` as the restarted driver ran it again. (Its first run reported no progress:
    Spark posts a batch's progress after its commit, and the driver was stopped right after writing it.)"""
    restarted = run.faults[0].t
    again = [b for b in run.history.micro_batches if b.batch_id == batch and b.start >= restarted]
    assert len(again) == 1, f"batch {batch} ran {len(again)} time(s) after the restart: {again}"
    return again[0].input_rows


def assert_replayed_with_duplicates(run: Any) -> None:
    """The newest commit was dropped between batches, the restarted driver ran that batch again, and every
    record of it came out twice: the duplicates are exactly the replayed batch's rows."""
    d = injected(run)
    n = d["batch"]
    assert d["file"] == f"commits/{n}" and str(n) in d["before"]["commits"] and str(n) not in d["after"]["commits"]
    assert str(n) in d["after"]["offsets"], "offsets/N stays: batch N is replayed from it"
    assert d["aim"]["hit"] and d["aim"]["phase"] == "between_batches"
    rows = replayed_rows(run, n)
    assert rows > 0 and run.duplicates == rows, (run.duplicates, rows)
    damage = run.checks["damage"]
    assert damage.ok is True and damage.numbers["reaction"] == "recovered", damage.lines
    assert f"batch {n} again: a replay; {rows} duplicate appearance(s)" in damage.lines[0]
    assert run.lost == 0 and run.incorrect == 0


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.sla(guarantee=None)  # declared exactly-once by its author; the test shows what it delivers
@pytest.mark.chaos(backend="local")
@drop_commit()
def test_a_dropped_commit_replays_the_batch_and_finds_the_foreach_batch_duplicates(chaos):
    run = lake_run(chaos, duration=40)
    print(run.describe())
    assert_replayed_with_duplicates(run)


@pytest.mark.slow
@pytest.mark.sla(guarantee=None)
@pytest.mark.chaos(backend="local", repeat=5)
@drop_commit()
def test_the_dropped_commit_finds_the_foreach_batch_duplicates_five_times_out_of_five(chaos):
    repeated = lake_run(chaos, duration=40)
    assert len(repeated.runs) == 5
    for run in repeated.runs:
        assert_replayed_with_duplicates(run)


@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@drop_commit()
def test_a_dropped_commit_on_a_kafka_sink_replays_what_at_least_once_permits(chaos):
    run = notifications(chaos)
    assert_replayed_with_duplicates(run)
    assert run.guarantee_delivered == "at-least-once"


# the default run's proof of a damaged checkpoint (one per capability: docs/setup.md#slow-tests)
@pytest.mark.sla(guarantee=None)  # at-least-once is not delivered: the test asserts the explained failure
@pytest.mark.chaos(backend="local")
@tear_offsets(how="truncate")
def test_a_torn_offsets_file_stops_the_restarted_query_loudly(chaos):
    run = notifications(chaos, duration=40)
    d = injected(run)
    assert d["file"] == f"offsets/{d['batch']}" and 0 < d["bytes"] and d["aim"]["phase"] == "offsets_logged"
    damage = run.checks["damage"]
    assert damage.ok is True and damage.numbers["reaction"] == "failed", damage.lines
    assert "JsonEOFException" in damage.lines[0], damage.lines  # measured on Spark 4.2.0
    assert run.lost > 0 and damage.lines[0] in run.describe()


@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@tear_offsets(how="tmp")
def test_a_stray_temporary_offsets_file_is_ignored_and_the_job_recovers(chaos):
    run = notifications(chaos)
    d = injected(run)
    assert d["file"].startswith(f"offsets/.{d['batch'] + 1}.") and d["file"].endswith(".tmp")
    damage = run.checks["damage"]
    assert damage.ok is True and damage.numbers["reaction"] == "recovered", damage.lines
    assert run.lost == 0 and run.incorrect == 0


def sales_per_store(chaos: Any) -> Any:
    from pytest_streamchaos import AggregateOracle

    oracle = AggregateOracle(size_seconds=10, watermark_seconds=5, agg="count", output_mode="update",
                             key_field="StoreID", window_field="window", value_field="count")
    run = chaos.run("pipelines/store_sales_window.py", rate=100, duration=45, guarantee="at-least-once",
                    setup=JobSetup(args=["{bootstrap_servers}"]), inputs={"sales": sale}, load=Load(key_space=5),
                    outputs={"store-sales": None}, oracle=oracle)
    print(run.describe())
    return run


@pytest.mark.slow
@pytest.mark.sla(guarantee=None)  # at-least-once is not delivered: the test asserts the explained failure
@pytest.mark.chaos(backend="local")
@pytest.mark.parametrize("how", [pytest.param(h, marks=damage_state(how=h)) for h in ("delete", "truncate")])
def test_a_damaged_state_file_stops_the_stateful_job_loudly(chaos, how):
    run = sales_per_store(chaos)
    d = injected(run)
    assert d["file"].startswith("state/0/0/") and d["version"] == d["batch"] + 1, d
    assert d["file"].split("/")[-1] in d["before"] and (how == "truncate") == (d["file"].split("/")[-1] in d["after"])
    damage = run.checks["damage"]
    assert damage.ok is True and damage.numbers["reaction"] == "failed", damage.lines
