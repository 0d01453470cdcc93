"""A user record factory against the embedded broker: what is on the topic is what the factory
returned (keys included), poison and lateness still apply, and the seed fixes the output."""

from __future__ import annotations

import json

import numpy as np
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from pytest_streamchaos import RecordSpec
from pytest_streamchaos.testing import wait_for
from pytest_streamchaos.workload import records
from pytest_streamchaos.workload.generator import Generator

pytestmark = pytest.mark.integration


def invoice(rec: RecordSpec):
    lines = rec.rng.randint(1, 3)
    value = {"InvoiceNumber": str(rec.id), "StoreID": rec.key, "CreatedTime": rec.ts,
             "InvoiceLineItems": [{"ItemCode": rec.rng.randint(1, 999)} for _ in range(lines)]}
    return (None if rec.id % 10 == 0 else f"store-{rec.key_index}", value)


def read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> dict[bytes, tuple[bytes | None, int]]:
    """value -> (key, partition) of every record on the topic; polls until ``expected`` were read."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "factory-reader", "enable.auto.commit": False})
    out: dict[bytes, tuple[bytes | None, int]] = {}
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])

        def more() -> bool:
            for m in c.consume(1000, 0.2):
                if m.error() is None:
                    out[m.value()] = (m.key(), m.partition())
            return len(out) >= expected

        wait_for(more, timeout=30, what=f"{expected} records on {topic}")
        return out
    finally:
        c.close()


def test_factory_values_and_keys_arrive_unchanged_with_poison_and_lateness(kafka):
    topic = kafka.create_topic("gen-factory", partitions=2)
    n = 1500
    gen = Generator(kafka.bootstrap_servers, topic, rate=3000, key_space=20, seed=11, max_records=n,
                    record_factory=invoice, poison=[5, 77], late_fraction=0.1, late_by_seconds=20.0,
                    annotate={"lines": lambda rec: len(rec["InvoiceLineItems"])}, max_lag_s=5)
    gen.start()
    wait_for(lambda: not gen.running, timeout=30, what="the generator to send max_records")
    gen.stop()
    sent = gen.sent()
    assert len(sent) == n and gen.failed == 0
    on_topic = read_all(kafka.bootstrap_servers, topic, 2, n)
    ts_ms = np.floor(sent.event_ts * 1000.0 + 1e-6).astype(np.int64)  # the generator's ms event times
    values, keys, ann = records.build_batch(invoice, 11, sent.ids, sent.keys, ts_ms, sent.poison,
                                            {"lines": lambda rec: len(rec["InvoiceLineItems"])})
    assert set(on_topic) == set(values)  # every value the factory made (poison replaced), nothing else
    for v, k in zip(values, keys, strict=True):
        assert on_topic[v][0] == k
    assert sent.poison.sum() == 2 and all(records.is_poison(values[i]) for i in (5, 77))
    good = [json.loads(v) for v, p in zip(values, sent.poison, strict=True) if not p]
    assert sorted(int(o["InvoiceNumber"]) for o in good) == [i for i in range(n) if i not in (5, 77)]
    assert np.array_equal(sent.annotations["lines"], ann["lines"])
    assert set(np.unique(sent.annotations["lines"]).tolist()) <= {1.0, 2.0, 3.0}
    late = (sent.send_ts - sent.event_ts) > 10
    assert 0.05 < late.mean() < 0.15
    created = {int(o["InvoiceNumber"]): o["CreatedTime"] for o in good}
    assert all(created[i] == t for i, t in zip(sent.ids.tolist(), ts_ms.tolist(), strict=True) if i in created)
