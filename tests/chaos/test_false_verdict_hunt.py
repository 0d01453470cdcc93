"""The false-verdict hunt (issue 47): on each path a verdict takes, a correct job is silent under a fault and its
twin with a planted defect is caught at the defect's true size under the same fault.

Paths: per-record ids on Kafka, on Spark's file sink, on Delta's streaming sink (each with ``DROP_EVERY=97``:
every id divisible by 97 lost, and ``REPEAT_EVERY=89``: every id divisible by 89 written twice, planted by
``tests/chaos/jobs/hunt/defects.py``); a Delta MERGE and a stateful windowed count judged by the reference run
(their planted twins write a replayed batch again: an additive MERGE, a ``foreachBatch`` append); Spark Connect and
real-time mode (ids on Kafka, the same planted drops and repeats). The jobs are written as users write them:
hard-coded broker and topics, relative paths, Spark's defaults, ``format("kafka")``, nothing of the plugin.

Every case is ``slow``: ``benchmarks/hunt_false_verdicts.py`` runs them three times and writes the table of
docs/false-verdict-hunt.md; each row a test writes goes to ``$HUNT_OUT`` (JSON lines) when it is set.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lakehouse import INVENTORY, INVENTORY_IDEM, order, sku_of

from pytest_streamchaos import JobSetup, Load, Reference, kill_client, kill_driver, kill_executor, kill_worker
from pytest_streamchaos.observe import delta

JOBS = Path(__file__).parent / "jobs"
HUNT = JOBS / "hunt"
DROP, REPEAT = 97, 89
PLANTED = {"DROP_EVERY": str(DROP), "REPEAT_EVERY": str(REPEAT)}
RATE = 100


def click(rec: Any) -> dict:
    return {"clickId": str(rec.id), "userId": rec.key, "url": f"/p/{rec.key_index}", "clickedAt": rec.ts}


def large_order(rec: Any) -> dict:
    """An order of 100 or more (every one passes the jobs' filter: the planted defects are the only loss)."""
    return {"order_id": str(rec.id), "customer": rec.key, "amount": 100 + rec.id % 50, "created_at": rec.ts}


def record(row: dict[str, Any]) -> None:
    """The case's row for the hunt's table (``$HUNT_OUT``), and on stdout."""
    print("hunt:", json.dumps(row, sort_keys=True))
    out = os.environ.get("HUNT_OUT")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")


# -- per-record ids ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class IdPath:
    """A job whose output carries the input ids, its input, output and fault."""

    job: str
    inputs: dict[str, Callable[[Any], dict]]
    outputs: dict[str, str]
    guarantee: str  #: what its sink gives under the fault (the correct twin must deliver it)
    spark: str = "standalone"


ID_PATHS = {
    "kafka": (IdPath("orders_enrich.py", {"orders": order}, {"orders_enriched": "key"}, "at-least-once"),
              kill_worker(after=8, restart_after=5)),
    "file-sink": (IdPath("clicks_to_json.py", {"clicks": click}, {"file:lake/clicks": "clickId"}, "exactly-once"),
                  kill_driver(when="output_visible_uncommitted")),
    "delta-append": (IdPath("orders_to_delta.py", {"orders": order}, {"delta:lake/orders": "order_id"},
                            "exactly-once"), kill_driver(when="output_visible_uncommitted")),
    "connect": (IdPath("large_orders_connect.py", {"orders": large_order}, {"large_orders": "key"}, "at-least-once",
                       spark="connect"), kill_client(after=8, restart_after=2)),
    "real-time": (IdPath("large_orders_realtime.py", {"orders": large_order}, {"large_orders": "key"},
                         "at-least-once"), kill_executor(after=12)),
}


def id_run(chaos: Any, path: IdPath, planted: bool) -> Any:
    setup = JobSetup(env=PLANTED if planted else {}, supervise=True)
    return chaos.run(str(HUNT / path.job), guarantee=path.guarantee, kafka_port=9092, outputs=path.outputs,
                     load=Load(rate=RATE, duration=30, inputs=path.inputs), setup=setup)


def id_truth(run: Any) -> dict[str, Any]:
    """What the planted defects did to this run's input, and what the verdict found of it."""
    ids = np.asarray(run.history.trace.sent.ids)
    dropped = set(ids[ids % DROP == 0].tolist())
    repeated = set(ids[(ids % REPEAT == 0) & (ids % DROP != 0)].tolist())
    lost = set(run.report.lost_ids.tolist())
    dups = set(run.report.duplicate_ids.tolist())
    return {"planted_lost": len(dropped), "found_lost": len(lost & dropped), "other_lost": len(lost - dropped),
            "planted_dup": len(repeated), "found_dup": len(dups & repeated), "other_dup": len(dups - repeated)}


def landed(run: Any) -> None:
    """The fault took effect (injected; an aimed one in its moment)."""
    [fault] = run.fault_records
    assert fault.injected, run.describe()
    if fault.aim is not None:
        assert fault.aim.hit, run.describe()


@pytest.mark.slow
@pytest.mark.sla(guarantee=None)  # the test judges the verdict itself
@pytest.mark.parametrize("planted", [False, True], ids=["correct", "planted"])
@pytest.mark.parametrize("name", [pytest.param(n, marks=[mark, pytest.mark.chaos(spark=p.spark, backend="local")])
                                  for n, (p, mark) in ID_PATHS.items()])
def test_ids_verdict_is_silent_on_the_correct_job_and_exact_on_the_planted_defects(chaos, name, planted):
    path = ID_PATHS[name][0]
    run = id_run(chaos, path, planted)
    print(run.describe())
    landed(run)
    truth = id_truth(run)
    row = {"path": name, "twin": "planted" if planted else "correct", "fault": run.fault_records[0].label,
           "sent": run.sent, "lost": run.lost, "duplicates": run.duplicates, "incorrect": run.incorrect,
           "delivered": run.guarantee_delivered, **truth}
    if planted:  # caught at its true size: every planted loss and repeat, and no loss the defect did not cause
        row["verdict"] = "caught" if (truth["found_lost"] == truth["planted_lost"] > 0 and truth["other_lost"] == 0
                                      and truth["found_dup"] == truth["planted_dup"] > 0) else "missed"
    else:  # silent: what its sink promises under the fault
        clean = run.lost == 0 and run.incorrect == 0 and (path.guarantee != "exactly-once" or run.duplicates == 0)
        row["verdict"] = "silent" if clean else "false alarm"
    record(row)
    assert row["verdict"] in ("caught", "silent"), row


# -- the reference run -----------------------------------------------------------------------------------------

def merge_truth(run: Any, table: str) -> int:
    """SKUs whose total the table holds too high: the received quantities summed by hand against the table."""
    sent = run.history.trace.sent
    expected: Counter[str] = Counter()
    for i, key in zip(sent.ids.tolist(), sent.keys.tolist(), strict=True):
        expected[sku_of(int(key))] += 1 + int(i) % 5
    final = {r["sku"]: r["on_hand"] for r in delta.rows(delta.final_rows(table))}
    return sum(1 for sku, n in final.items() if n != expected[sku])


def twice_truth(run: Any) -> int:
    """Rows the run's own output holds more than once (the same content, batch id included)."""
    rows = [json.dumps(r, sort_keys=True) for r in run.facts.output_rows[0].rows]
    return sum(n - 1 for n in Counter(rows).values() if n > 1)


@pytest.fixture
def clean_paths() -> Iterator[None]:
    paths = [INVENTORY, f"{INVENTORY}-chk", INVENTORY_IDEM, f"{INVENTORY_IDEM}-chk",
             *(f"/tmp/streamchaos-test-clicks-per-window{s}" for s in ("", "-chk", "-appended", "-appended-chk"))]
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)
    yield
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


REFERENCE_PATHS = {
    "delta-merge": ("inventory_merge_delta_idempotent.py", "inventory_merge_delta.py"),
    "stateful": ("stateful/clicks_per_window.py", "stateful/clicks_per_window_appended.py"),
}


@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@kill_driver(when="output_visible_uncommitted")
@pytest.mark.parametrize("planted", [False, True], ids=["correct", "planted"])
@pytest.mark.parametrize("name", list(REFERENCE_PATHS))
def test_reference_verdict_is_silent_on_the_correct_job_and_exact_on_the_planted_replay(chaos, clean_paths, name,
                                                                                         planted):
    job = REFERENCE_PATHS[name][planted]
    if name == "delta-merge":
        table = INVENTORY if planted else INVENTORY_IDEM
        run = chaos.run(str(JOBS / job), rate=RATE, duration=20, kafka_port=9092, inputs={"receipts": order},
                        outputs=[f"delta:{table}"], reference=Reference(key=["sku"]))
        truth = merge_truth(run, table)
        found = run.reference.changed if run.reference is not None else None
    else:
        out = "/tmp/streamchaos-test-clicks-per-window" + ("-appended" if planted else "")
        run = chaos.run(str(JOBS / job), rate=RATE, duration=20, kafka_port=9092, inputs={"clicks": click},
                        outputs=[f"file:{out}"], reference=True)
        truth = twice_truth(run)
        found = run.reference.extra if run.reference is not None else None
    print(run.describe())
    landed(run)
    cmp = run.reference
    assert cmp is not None
    row = {"path": name, "twin": "planted" if planted else "correct", "fault": run.fault_records[0].label,
           "sent": run.sent, "diverged": run.diverged, "compared": cmp.compared, "left_out": cmp.left_out,
           "delivered": run.guarantee_delivered, "planted_size": truth, "found": found}
    if planted:
        row["verdict"] = "caught" if truth > 0 and found == truth and cmp.missing == 0 else "missed"
    else:
        row["verdict"] = "silent" if run.diverged == 0 and truth == 0 else "false alarm"
    record(row)
    assert row["verdict"] in ("caught", "silent"), (row, cmp.lines())
