"""The reference run on stateful jobs written as users write them (issue 38): a windowed count, a
deduplication within the watermark, a stream-stream join and user sessions, each verified by the same job
on the same input without faults, compared by key -- no oracle written -- silent on the correct job under
a driver and an executor kill, and catching its planted twin (the same rows appended by ``foreachBatch``)
that writes a replayed batch twice, by the exact number of rows written twice. The windowed count's twin
is the default run's representative; the others run with ``-m slow``.

The jobs (``tests/chaos/jobs/stateful``) hard-code the broker, the topic and absolute paths, use Spark's
defaults and nothing of the plugin; their event time is the click's own ``clickedAt``. The variants of a
test share their input (its workload seed) and so one pair of reference runs.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos import kill_driver, kill_executor

JOBS = Path(__file__).parent / "jobs" / "stateful"
RATE = 100


def click(rec: Any) -> dict:
    return {"clickId": str(rec.id), "userId": rec.key, "url": f"/p/{rec.key_index}", "clickedAt": rec.ts}


def retried_click(rec: Any) -> dict:
    """Every click sent twice, the copies alike (an app's retry): ids 2k and 2k+1 are click k."""
    k = rec.id // 2
    return {"clickId": str(k), "userId": f"u{k % 20}", "url": f"/p/{k % 7}",
            "clickedAt": rec.ts - (rec.id % 2) * 1000 // RATE}


def bursty_click(rec: Any) -> dict:
    """Each user clicks 50 times in half a second, then nothing for 9.5 s: sessions that close."""
    return {"clickId": str(rec.id), "userId": f"u{(rec.id // 50) % 20}", "url": f"/p/{rec.key_index}",
            "clickedAt": rec.ts}


def order(rec: Any) -> dict:
    return {"orderId": str(rec.id), "customer": rec.key, "total": round(rec.rng.uniform(5, 100), 2),
            "orderTime": rec.ts}


def payment(rec: Any) -> dict:
    return {"paymentId": f"p{rec.id}", "forOrder": str(rec.id), "amount": round(rec.rng.uniform(5, 100), 2),
            "payTime": rec.ts + 500}


@dataclass(frozen=True)
class Case:
    """A stateful job, its twin that appends by ``foreachBatch``, its output and its inputs."""

    job: str
    out: str
    inputs: dict

    @property
    def twin(self) -> str:
        return self.job.replace(".py", "_appended.py")

    def paths(self) -> list[str]:
        return [self.out + s for s in ("", "-chk", "-appended", "-appended-chk")]


CASES = {
    "windowed_count": Case("clicks_per_window.py", "/tmp/streamchaos-test-clicks-per-window", {"clicks": click}),
    "dedup": Case("unique_clicks.py", "/tmp/streamchaos-test-unique-clicks", {"clicks": retried_click}),
    "join": Case("paid_orders.py", "/tmp/streamchaos-test-paid-orders", {"orders": order, "payments": payment}),
    "sessions": Case("user_sessions.py", "/tmp/streamchaos-test-user-sessions", {"clicks": bursty_click}),
}
PATHS = [p for c in CASES.values() for p in c.paths()]


@pytest.fixture(autouse=True)
def hardcoded_paths() -> Iterator[None]:
    for p in PATHS:
        shutil.rmtree(p, ignore_errors=True)
    yield
    for p in PATHS:
        shutil.rmtree(p, ignore_errors=True)


def run_case(chaos: Any, case: Case, twin: bool = False) -> Any:
    out = case.out + ("-appended" if twin else "")
    return chaos.run(str(JOBS / (case.twin if twin else case.job)), rate=RATE, duration=20, kafka_port=9092,
                     inputs=case.inputs, outputs=[f"file:{out}"], reference=True)


def landed(run: Any, kind: str) -> None:
    """The fault took effect: injected, and (aimed) in its moment."""
    [fault] = run.fault_records
    assert fault.kind == kind and fault.injected, run.describe()
    if fault.aim is not None:
        assert fault.aim.hit, run.describe()


FAULTS = {"kill_driver": kill_driver(when="output_visible_uncommitted"), "kill_executor": kill_executor(after=5)}
#: the default run's representative is the windowed count's twin (its 2,400 other rows matched exactly, the
#: replayed batch's counted row for row: silent and catching in one run); these are slow
COMBOS = [pytest.param(case, fault, id=f"{case}-{fault}", marks=[mark, pytest.mark.slow])
          for case in CASES for fault, mark in FAULTS.items()]


@pytest.mark.chaos
@pytest.mark.parametrize(("case", "fault"), COMBOS)
def test_a_stateful_job_gives_the_reference_output_under_faults(chaos, case, fault):
    run = run_case(chaos, CASES[case])
    landed(run, fault)
    assert run.reference is not None and run.reference.outputs[0].expected > 0, run.describe()
    assert run.diverged == 0, "\n".join(run.reference.lines())
    assert run.guarantee_delivered == "exactly-once"


@pytest.mark.chaos
@kill_driver(when="output_visible_uncommitted")
@pytest.mark.parametrize("case", [pytest.param(name, marks=pytest.mark.slow) for name in CASES])
def test_a_replayed_batch_appended_twice_is_found_row_for_row(chaos, case):
    run = run_case(chaos, CASES[case], twin=True)
    landed(run, "kill_driver")
    cmp = run.reference
    assert cmp is not None and cmp.outputs[0].ignored == ("batchId",), "\n".join(cmp.lines())
    # the true size: rows the run's own output holds twice (the same content and batch id)
    rows = [json.dumps(r, sort_keys=True) for r in run.facts.output_rows[0].rows]
    twice = sum(n - 1 for n in Counter(rows).values() if n > 1)
    assert twice > 0, "the driver kill replayed a batch that wrote nothing"
    assert (cmp.extra, cmp.missing, cmp.changed) == (twice, 0, 0), "\n".join(cmp.lines())
    assert run.guarantee_delivered == "at-least-once"


@pytest.mark.chaos
@pytest.mark.slow  # the Kafka update stream's representative of final-per-key comparison
@kill_driver(when="output_visible_uncommitted")
def test_an_update_stream_replayed_by_the_kafka_sink_keeps_its_final_counts(chaos):
    """Spark's Kafka sink sends a replayed batch's updates again (at-least-once): more messages than the
    reference's, the same final count per key -- what a keyed consumer of an update stream reads."""
    shutil.rmtree("/tmp/streamchaos-test-clicks-per-window-updates-chk", ignore_errors=True)
    try:
        run = chaos.run(str(JOBS / "clicks_per_window_updates.py"), rate=RATE, duration=20, kafka_port=9092,
                        inputs={"clicks": click}, outputs=["click-counts"], reference=True)
    finally:
        shutil.rmtree("/tmp/streamchaos-test-clicks-per-window-updates-chk", ignore_errors=True)
    landed(run, "kill_driver")
    cmp = run.reference
    assert cmp is not None and cmp.outputs[0].mode == "final per key", "\n".join(cmp.lines())
    assert run.diverged == 0, "\n".join(cmp.lines())
    sent = [json.dumps([k, r], sort_keys=True) for k, r in zip(run.facts.output_rows[0].keys or [],
                                                              run.facts.output_rows[0].rows, strict=True)]
    assert any(n > 1 for n in Counter(sent).values()), "the replayed batch's updates were sent again"
