"""The output collector against the embedded Kafka cluster: a tiny "echo" writes known outputs."""

from __future__ import annotations

import time

import numpy as np
import pytest
from confluent_kafka import Producer, TopicPartition

from pytest_streamchaos.observe.collector import Collector

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, values: list[bytes | None], keys=None, partition=None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for j, v in enumerate(values):
        kw = {} if partition is None else {"partition": partition(j)}
        p.produce(topic, v, None if keys is None else keys[j], **kw)
    assert p.flush(30) == 0, "outputs not delivered"


def test_collects_ids_keys_windows_in_csr_layout(kafka):
    topic = kafka.create_topic("col-echo", partitions=2)
    values = [
        b'{"id": 0}',
        b'{"ids": [1, 2, 2], "key": "k7", "window_start": 1700000000000, "window_end": 1700000010000}',
        b'{"ids": [], "key": 3, "window": {"start": "2023-11-14T22:13:20.000Z", "end": "2023-11-14T22:13:30Z"}}',
        b'{"id": "4", "window": {"start": 1700000000, "end": 1700000010.5}}',
        b'{"ids": [5, 6], "count": 2}',
    ]
    keys = [b"k1", None, None, b"k9", None]
    produce(kafka.bootstrap_servers, topic, values, keys, partition=lambda j: 0)  # one partition: known order
    with Collector(kafka.bootstrap_servers, topic) as c:
        c.wait_until(5, timeout=20)
    out = c.outputs()
    assert len(out) == 5 and c.count == 5 and c.malformed == 0
    assert out.offsets.tolist() == [0, 1, 4, 4, 5, 7]
    assert out.ids.tolist() == [0, 1, 2, 2, 4, 5, 6]
    np.testing.assert_array_equal(out.keys, [1, 7, 3, 9, np.nan])  # JSON key first, else the message key
    np.testing.assert_array_equal(out.window_start, [np.nan, 1.7e9, 1.7e9, 1.7e9, np.nan])
    np.testing.assert_array_equal(out.window_end, [np.nan, 1.70000001e9, 1.70000001e9, 1700000010.5, np.nan])
    assert out.topic.tolist() == [topic] * 5
    assert (np.diff(out.arrival_ts) >= 0).all()
    assert c.ids_seen == 6  # 0 1 2 4 5 6
    assert c.has_seen([0, 2, 6]) and not c.has_seen([3])
    assert c.last_arrival == out.arrival_ts[-1]


def test_several_topics_are_told_apart(kafka):
    main = kafka.create_topic("col-main", partitions=3)
    side = kafka.create_topic("col-late", partitions=1)
    produce(kafka.bootstrap_servers, main, [b'{"id": %d}' % i for i in range(300)])
    produce(kafka.bootstrap_servers, side, [b'{"id": %d}' % i for i in range(1000, 1010)])
    with Collector(kafka.bootstrap_servers, [main, side]) as c:
        c.wait_until(310, timeout=20)
    out = c.outputs()
    from_side = out.topic == side
    assert sorted(out.ids[from_side].tolist()) == list(range(1000, 1010))
    assert sorted(out.ids[~from_side].tolist()) == list(range(300))


def test_stop_drains_everything_produced_before_stop(kafka):
    topic = kafka.create_topic("col-drain", partitions=4)
    n = 60_000
    c = Collector(kafka.bootstrap_servers, topic).start()
    produce(kafka.bootstrap_servers, topic, [b'{"id":%d}' % i for i in range(n)])
    seen_at_stop = c.count
    assert c.stop(drain_timeout=60) is True
    out = c.outputs()
    assert len(out) == n, f"lost {n - len(out)} (had {seen_at_stop} when stop() was called)"
    assert np.array_equal(np.sort(out.ids), np.arange(n))
    assert c.ids_seen == n


def test_broker_down_while_collecting_loses_nothing(kafka):
    topic = kafka.create_topic("col-fault", partitions=3, replication=3)
    leader = kafka.leader_of(topic, 0)
    c = Collector(kafka.bootstrap_servers, topic).start()
    try:
        produce(kafka.bootstrap_servers, topic, [b'{"id":%d}' % i for i in range(3000)])
        kafka.kill_broker(leader)  # the collector's partition 0 loses its leader; a follower takes over
        p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5})
        for i in range(3000, 6000):
            p.produce(topic, b'{"id":%d}' % i, partition=i % 3)
        assert p.flush(30) == 0
        kafka.restart_broker(leader)
        c.wait_until(6000, timeout=30)
    finally:
        kafka.restart_broker(leader)
        c.stop()
    assert np.array_equal(np.sort(c.outputs().ids), np.arange(6000))
    assert c.malformed == 0 and c.lost_to_retention == 0


def test_custom_id_readers(kafka):
    topic = kafka.create_topic("col-custom", partitions=1)
    produce(kafka.bootstrap_servers, topic, [b"7|8|9", b"10"])
    with Collector(kafka.bootstrap_servers, topic,
                   id_reader=lambda value, key: [int(x) for x in value.split(b"|")]) as c:
        c.wait_until(2, timeout=20)
    assert c.outputs().ids.tolist() == [7, 8, 9, 10]

    topic2 = kafka.create_topic("col-path", partitions=1)
    produce(kafka.bootstrap_servers, topic2, [b'{"meta": {"src": [1, 2]}, "key": "k4"}', b'{"meta": {"src": 3}}'])
    with Collector(kafka.bootstrap_servers, topic2, id_reader="meta.src") as c2:
        c2.wait_until(2, timeout=20)
    out = c2.outputs()
    assert out.ids.tolist() == [1, 2, 3] and out.offsets.tolist() == [0, 2, 3]
    np.testing.assert_array_equal(out.keys, [4, np.nan])


def test_malformed_outputs_are_counted_and_sampled(kafka):
    topic = kafka.create_topic("col-bad", partitions=1)
    bad = [b"not json", b'{"no_id": 1}', None, b'{"id": "abc"}', b"[1, 2]", b'{"id": 1, "window_start": "when"}']
    produce(kafka.bootstrap_servers, topic, [b'{"id": 100}', *bad, b'{"id": 101}'])
    with Collector(kafka.bootstrap_servers, topic, max_samples=3) as c:
        c.wait_until(lambda col: col.count + col.malformed == 8, timeout=20, what="8 records read")
    assert c.count == 2 and c.outputs().ids.tolist() == [100, 101]
    assert c.malformed == 6
    samples = c.malformed_samples
    assert len(samples) == 3
    assert samples[0].value == b"not json" and samples[0].offset == 1 and "JSON" in samples[0].error
    assert "no `id` or `ids`" in samples[1].error and "tombstone" in samples[2].error


def test_wait_until_timeout_says_what_was_awaited(kafka):
    topic = kafka.create_topic("col-wait", partitions=1)
    produce(kafka.bootstrap_servers, topic, [b'{"id": 1}'])
    with Collector(kafka.bootstrap_servers, topic) as c:
        c.wait_until(1, timeout=20)
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match=r"at least 5 outputs; seen 1 outputs, 1 distinct ids"):
            c.wait_until(5, timeout=0.5)
        assert time.monotonic() - t0 < 3


def test_missing_topic_is_a_clear_error(kafka):
    with pytest.raises(RuntimeError, match=r"do not exist.*create_topic"):
        Collector(kafka.bootstrap_servers, "no-such-output-xyz", topic_timeout_s=1).start()


def test_aborted_transactions_are_not_collected(kafka):
    topic = kafka.create_topic("col-txn", partitions=1)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"txn-{topic}"})
    p.init_transactions(20)
    for ids, commit in ((range(0, 5), True), (range(5, 10), False), (range(10, 15), True)):
        p.begin_transaction()
        for i in ids:
            p.produce(topic, b'{"id": %d%s}' % (i, b"" if commit else b', "aborted": 1'))
        p.flush(20)  # sent before the abort, so the broker really holds aborted records
        (p.commit_transaction if commit else p.abort_transaction)(20)
    p.begin_transaction()
    p.produce(topic, b'{"id": 999}')
    p.commit_transaction(20)
    with Collector(kafka.bootstrap_servers, topic) as c:
        c.wait_until(lambda col: col.has_seen(999), timeout=20, what="the last committed output")
    assert sorted(c.outputs().ids.tolist()) == [*range(0, 5), *range(10, 15), 999]


def test_outputs_deleted_by_retention_are_reported_not_skipped_silently(kafka):
    """Records the broker deleted before the collector read them (retention; here the log start moved
    by DeleteRecords, which a consumer sees exactly like retention) are counted as a gap."""
    from confluent_kafka.admin import AdminClient

    topic = kafka.create_topic("col-retention", partitions=1)
    n, gone = 5000, 1200
    produce(kafka.bootstrap_servers, topic, [b'{"id":%d}' % i for i in range(n)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.delete_records([TopicPartition(topic, 0, gone)])[TopicPartition(topic, 0, gone)].result(20)
    with Collector(kafka.bootstrap_servers, topic) as c:
        c.wait_until(lambda col: col.count + col.lost_to_retention >= n, timeout=60, what="all offsets accounted")
    assert c.retention_gaps[0]["from"] == 0 and c.retention_gaps[0]["to"] == gone
    assert (c.lost_to_retention, c.count) == (gone, n - gone)
    assert c.outputs().ids.min() == gone  # ids equal offsets here


def test_transactional_output_is_detected_by_its_markers(kafka):
    """Commit / abort markers take offsets the consumer never receives: the collector counts them, so a
    run can say its output was written transactionally. Plain output has none."""
    txn = kafka.create_topic("col-txn-markers", partitions=1)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"txn-{txn}"})
    p.init_transactions(20)
    for ids, commit in ((range(0, 3), True), (range(0, 3), False), (range(3, 6), True)):  # the abort rewrites 0-2
        p.begin_transaction()
        for i in ids:
            p.produce(txn, b'{"id": %d}' % i)
        p.flush(20)
        (p.commit_transaction if commit else p.abort_transaction)(20)
    plain = kafka.create_topic("col-plain", partitions=1)
    produce(kafka.bootstrap_servers, plain, [b'{"id": %d}' % i for i in range(6)])
    with Collector(kafka.bootstrap_servers, [txn, plain]) as c:
        c.wait_until(12, timeout=20)  # the aborted rewrite of 0-2 is never read
    # offsets never handed out: 2 markers before the last record read (the third follows it) and the 3
    # records of the aborted transaction, which read_committed hides
    assert c.transaction_markers == {f"{txn}[0]": 5}
    assert c.count == 12
