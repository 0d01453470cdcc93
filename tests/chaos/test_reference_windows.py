"""The reference run compares what two fault-free runs agree on (issue 47): a public-style job that drops
duplicate sales within a watermark and sums them per store per 5-minute window into Parquet, unchanged
(``tests/chaos/jobs/store_sales/``: a helper module beside it, relative output and checkpoint paths,
Spark's defaults, ``format("kafka")`` on a hard-coded ``localhost:9092``, nothing of the plugin). Windows
only one fault-free run closed (the last ones, closed by the input's last records) are left out and
counted; every window both closed is compared, and a driver kill between a batch's files and its commit
changes none of them (the file sink is exactly-once).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos import kill_driver

JOB = Path(__file__).parent / "jobs" / "store_sales" / "sales_5min.py"
#: the shop's clock: sale k happens 4.8 s of shop time after sale k-1 (at 50 records/s, two per sale, the
#: feed covers 2 minutes of shop time per second: a 5-minute window closes every few seconds of the run)
OPENING = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc).timestamp()


def sale(rec: Any) -> dict:
    """Every sale sent twice, the copies alike (a till's retry): records 2k and 2k+1 are sale k."""
    k = rec.id // 2
    at = datetime.fromtimestamp(OPENING + 4.8 * k, tz=timezone.utc)
    return {"sale_id": f"s{k}", "store": f"store-{k % 6}", "amount": round(5 + (k * 37 % 1000) / 10, 2),
            "sold_at": at.strftime("%Y-%m-%d %H:%M:%S.%f")}


@pytest.mark.chaos
@kill_driver(when="output_visible_uncommitted")
def test_windowed_revenue_after_dedup_equals_its_reference_on_every_window_both_closed(chaos):
    run = chaos.run(str(JOB), rate=50, duration=30, kafka_port=9092, inputs={"sales": sale},
                    outputs=["file:output/sales_5min"], reference=True)
    print(run.describe())
    [fault] = run.fault_records
    assert fault.kind == "kill_driver" and fault.injected and fault.aim is not None and fault.aim.hit, run.describe()
    assert run.driver_launches == 2, run.describe()
    cmp = run.reference
    assert cmp is not None
    [out] = cmp.outputs
    lines = "\n".join(cmp.lines())
    # a verdict on the windows every run closed: at least half of the reference's rows, none of them changed
    assert out.unstable is None and out.total is not None and out.expected * 2 >= out.total > 0, lines
    assert out.count == 0 and run.diverged == 0 and run.guarantee_delivered == "exactly-once", lines
    if out.left_out:  # what was left out is named, with its cause
        assert "window" in out.left_out_why, lines
