"""The Kafka-to-Delta jobs of ``tests/chaos/jobs`` as tests drive them: their records, the paths they hard-code,
and one ``chaos.run`` each. Shared by ``test_chaos_delta.py`` and the explored session it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planted import paths_fixture

JOBS = Path(__file__).parent / "jobs"
BRONZE = "/tmp/streamchaos-test-orders-bronze"
FOREACH_BATCH = "/tmp/streamchaos-test-orders-fb-bronze"
IDEMPOTENT = "/tmp/streamchaos-test-orders-idem-bronze"
INVENTORY = "/tmp/streamchaos-test-inventory"
INVENTORY_IDEM = f"{INVENTORY}-idem"  #: the idempotent MERGE twin's table
#: what the jobs hard-code under /tmp (absent before each test, removed after it)
PATHS = (BRONZE, f"{BRONZE}-chk", FOREACH_BATCH, "/tmp/streamchaos-test-orders-fb-chk", IDEMPOTENT,
         "/tmp/streamchaos-test-orders-idem-chk", INVENTORY, f"{INVENTORY}-chk",
         INVENTORY_IDEM, f"{INVENTORY_IDEM}-chk")


def order(rec: Any) -> dict:
    """An order as a shop sends it (or a receipt of goods, for the inventory job); the input id is the order
    id, the SKU a function of the record's key (:func:`sku_of`), the quantity of its id."""
    return {"order_id": rec.id, "customer": rec.key, "sku": sku_of(rec.key_index),
            "qty": 1 + rec.id % 5, "amount": round(rec.rng.uniform(1, 500), 2), "created_at": rec.ts}


def sku_of(key_index: int) -> str:
    return f"sku-{key_index % 20}"


clear_paths, hardcoded_paths = paths_fixture(PATHS)


def run_orders(chaos: Any, job: str, table: str, guarantee: str = "exactly-once") -> Any:
    """One run of a Kafka-to-Delta job of ``tests/chaos/jobs``: orders at 100/s for 20 s, the table read by
    its ``order_id`` column."""
    return chaos.run(str(JOBS / job), rate=100, duration=20, guarantee=guarantee, kafka_port=9092,
                     inputs={"orders": order}, outputs={f"delta:{table}": "order_id"})


def bronze(chaos: Any) -> Any:
    """The Kafka-to-Delta append job on Delta's streaming sink."""
    return run_orders(chaos, "orders_to_delta_bronze.py", BRONZE)
