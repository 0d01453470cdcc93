"""A callable of the test that raises ends the run at once, naming it, with the user's traceback.

A record factory (run in the generator's thread) and an output id reader (run in the collector's)
each raise partway through a real run of ``jobs/orders_to_ledger.py``; the run must stop within a
poll of the first error -- not wait out its 120 s warm-up and report "no output" -- and leave the stack
clean: the job gone from the Spark master, the harness's threads stopped, the next run working.
"""

import json
import threading
import time
from pathlib import Path

import pytest

from pytest_streamchaos import JobSetup, RecordSpec, Timing, UserCodeError
from pytest_streamchaos.poll import wait_for

JOB = str(Path(__file__).parent / "jobs" / "orders_to_ledger.py")
ARGS = ["{bootstrap_servers}", "orders", "ledger", "{checkpoint_dir}", "all"]
#: generous against the ~1 s it takes (a poll, then stopping the driver), far below the 120 s it was
BOUND_S = 30.0


def _left_clean(chaos) -> None:
    """No application left on the Spark master, no harness thread left running."""
    def no_apps() -> bool:
        state = chaos.cluster.active_master().state() or {}
        return not state.get("activeapps")

    wait_for(no_apps, timeout=30, what="the failed run's application to leave the Spark master",
             last=lambda: (chaos.cluster.active_master().state() or {}).get("activeapps"))
    harness = ("streamchaos-generator", "streamchaos-collector")
    left = [t.name for t in threading.enumerate() if t.name.startswith(harness)]
    assert not left, f"the failed run left harness threads running: {left}"


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos
def test_a_raising_factory_then_a_raising_output_reader_each_end_the_run_at_once(chaos):
    raised: dict[str, float] = {}

    def order_with_price(rec: RecordSpec) -> dict:
        if rec.id >= 20:  # the first records are fine: the job is running when it fails
            raised.setdefault("factory", time.monotonic())
            raise ValueError(f"no price list entry for order {rec.id}")
        return {"id": rec.id, "amount": 1.5}

    with pytest.raises(UserCodeError, match=r"inputs\['orders'\] factory .*order_with_price raised ValueError: "
                                            r"no price list entry for order 20 \(record id 20\)") as failed:
        chaos.run(JOB, rate=50, duration=15, inputs={"orders": order_with_price},
                  outputs={"ledger": "key"}, setup=JobSetup(args=ARGS), timing=Timing(warmup_timeout=90))
    took = time.monotonic() - raised["factory"]
    print(f"raising factory: the run ended {took:.2f}s after the factory raised")
    assert took < BOUND_S
    assert isinstance(failed.value.__cause__, ValueError), "the user's own exception, chained"
    assert "in order_with_price" in str(failed.value) and "raise ValueError" in str(failed.value), \
        "the message shows the user's frame"
    _left_clean(chaos)

    def ledger_ids(value: bytes, key: bytes | None) -> list[int]:
        raised.setdefault("reader", time.monotonic())
        return [json.loads(value)["order_id"]]  # the job writes "id": a KeyError on the first output

    def order(rec: RecordSpec) -> dict:
        return {"id": rec.id, "amount": 1.5}

    with pytest.raises(UserCodeError, match=r"outputs\['ledger'\] id reader .*ledger_ids raised KeyError: "
                                            r"'order_id'") as failed:
        chaos.run(JOB, rate=50, duration=15, inputs={"orders": order},
                  outputs={"ledger": ledger_ids}, setup=JobSetup(args=ARGS), timing=Timing(warmup_timeout=90))
    took = time.monotonic() - raised["reader"]
    print(f"raising output reader: the run ended {took:.2f}s after the reader raised")
    assert took < BOUND_S
    assert isinstance(failed.value.__cause__, KeyError)
    assert "in ledger_ids" in str(failed.value)
    _left_clean(chaos)
