"""The Python Kafka source and the Kafka sinks against a real local Spark and the embedded Kafka cluster."""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import functions as F

from pytest_streamchaos.spark import (
    CommittedOutputReader,
    ExactlyOnceKafkaSink,
    SinkFencedError,
    read_kafka,
    write_kafka_batch,
)
from pytest_streamchaos.spark.eos import control_topic_for
from pytest_streamchaos.testing import wait_for

pytestmark = pytest.mark.integration

T0_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def spark() -> Iterator:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("streamchaos-kafka-io")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def checkpoint() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="streamchaos-ck-")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)




def produce(servers: str, topic: str, ids: range, partitions: int) -> None:
    p = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})
    for i in ids:
        p.produce(topic, key=b"k%d" % i, value=b"%d" % i, partition=i % partitions, timestamp=T0_MS + i)
    assert p.flush(30) == 0


def read_all(servers: str, topic: str, partitions: int, timeout: float = 10.0) -> list:
    """Every record a plain read_committed consumer sees, up to the current end."""
    c = Consumer({"bootstrap.servers": servers, "group.id": "t", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list = []
        pos = dict.fromkeys(range(partitions), 0)

        def done() -> bool:
            for m in c.consume(1000, timeout=0.1):
                assert m.error() is None, m.error()
                out.append(m)
            for tp in c.position([TopicPartition(topic, p) for p in range(partitions)]):
                pos[tp.partition] = max(pos[tp.partition], tp.offset)
            return all(pos[p] >= ends[p] for p in range(partitions))

        wait_for(done, timeout, f"reading {topic} to {ends}", lambda: pos)
        return out
    finally:
        c.close()


def run_available_now(df, checkpoint: str, on_batch, timeout: float = 60):
    q = (df.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(timeout)
        if q.isActive:
            raise TimeoutError(f"query still running after {timeout}s; last progress {q.lastProgress}")
    finally:
        q.stop()
    return q


def test_three_partitions_every_record_once_with_kafka_columns(spark, kafka, checkpoint):
    topic = kafka.create_topic("src", partitions=3)
    produce(kafka.bootstrap_servers, topic, range(3000), 3)
    df = read_kafka(spark, kafka.bootstrap_servers, topic, startingOffsets="earliest", use_connector=False)
    assert df.isStreaming
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
        ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int")]
    rows: list = []
    run_available_now(df, checkpoint, lambda b, _i: rows.extend(b.collect()))
    assert len(rows) == 3000
    by_id = {int(r.value): r for r in rows}
    assert sorted(by_id) == list(range(3000))
    for i in (0, 1, 2, 1234, 2999):
        r = by_id[i]
        assert (bytes(r.key), r.topic, r.partition, r.offset) == (b"k%d" % i, topic, i % 3, i // 3)
        assert r.timestamp == dt.datetime(2023, 11, 14, 22, 13, 20) + dt.timedelta(milliseconds=i)
        assert r.timestampType == 0  # CreateTime, as Spark's source reports it


def test_max_offsets_per_trigger_limits_batches(spark, kafka, checkpoint):
    topic = kafka.create_topic("limit", partitions=3)
    produce(kafka.bootstrap_servers, topic, range(1000), 3)
    df = read_kafka(spark, kafka.bootstrap_servers, topic, startingOffsets="earliest",
                    maxOffsetsPerTrigger=150, use_connector=False)
    sizes: list[tuple[int, int]] = []
    seen: list[int] = []

    def on_batch(b, i):
        vals = [int(r.value) for r in b.select("value").collect()]
        sizes.append((i, len(vals)))
        seen.extend(vals)

    run_available_now(df, checkpoint, on_batch)
    non_empty = [n for _, n in sizes if n]
    assert max(non_empty) <= 150, sizes
    assert len(non_empty) >= 7, sizes  # 1000 / 150
    assert sorted(seen) == list(range(1000))


def test_restart_replays_the_same_ranges_and_loses_nothing(spark, kafka, checkpoint):
    topic = kafka.create_topic("replay", partitions=3)
    produce(kafka.bootstrap_servers, topic, range(900), 3)
    df = read_kafka(spark, kafka.bootstrap_servers, topic, startingOffsets="earliest",
                    maxOffsetsPerTrigger=200, use_connector=False)
    attempts: dict[int, list[list[tuple[int, int]]]] = {}
    delivered: list[int] = []

    def make_on_batch(crash_at: int | None):
        def on_batch(b, i):
            rows = b.select("partition", "offset", "value").collect()
            attempts.setdefault(i, []).append(sorted((r.partition, r.offset) for r in rows))
            if i == crash_at:
                raise RuntimeError(f"injected failure after reading batch {i}")
            delivered.extend(int(r.value) for r in rows)
        return on_batch

    # First run dies in batch 2: its range is in the offset log, not in the commit log.
    q = (df.writeStream.foreachBatch(make_on_batch(crash_at=2)).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="injected failure"):
        q.awaitTermination(60)
    q.stop()
    assert sorted(attempts) == [0, 1, 2]
    # Restart from the checkpoint: batch 2 is replayed with exactly the same offsets.
    run_available_now(df, checkpoint, make_on_batch(crash_at=None))
    assert len(attempts[2]) == 2 and attempts[2][0] == attempts[2][1] and attempts[2][0]
    assert sorted(delivered) == list(range(900))  # nothing lost, nothing twice


def test_transaction_markers_and_isolation_match_a_read_committed_consumer(spark, kafka, checkpoint):
    """Ranges with transaction markers (offset gaps) are read to their end without hanging, and the
    source returns what a read_committed consumer returns. On a real broker aborted records are
    absent; librdkafka's mock broker does not implement read_committed, so there they are present."""
    topic = kafka.create_topic("txn", partitions=1)
    servers = kafka.bootstrap_servers
    produce(servers, topic, range(0, 5), 1)
    tp = Producer({"bootstrap.servers": servers, "transactional.id": f"t-{topic}"})
    tp.init_transactions(30)
    tp.begin_transaction()
    for i in range(5, 10):
        tp.produce(topic, value=b"%d" % i, partition=0)
    tp.commit_transaction(30)
    tp.begin_transaction()
    for i in range(100, 103):
        tp.produce(topic, value=b"%d" % i, partition=0)
    tp.flush(30)
    tp.abort_transaction(30)
    tp.begin_transaction()
    tp.produce(topic, value=b"10", partition=0)
    tp.commit_transaction(30)  # the log now ends with a commit marker
    reference = sorted(int(m.value()) for m in read_all(servers, topic, 1))
    broker_hides_aborted = 100 not in reference

    df = read_kafka(spark, servers, topic, startingOffsets="earliest", maxOffsetsPerTrigger=4,
                    use_connector=False)
    got: list[int] = []
    run_available_now(df, checkpoint, lambda b, _i: got.extend(int(r.value) for r in b.collect()))
    assert sorted(got) == reference
    assert set(range(11)) <= set(got)
    if broker_hides_aborted:
        assert not {100, 101, 102} & set(got)


def _eos_setup(kafka, name: str, n: int):
    src = kafka.create_topic(name + "-in", partitions=3)
    out = kafka.create_topic(name + "-out", partitions=2)
    kafka.cluster.create_topic(control_topic_for(out), 1)
    produce(kafka.bootstrap_servers, src, range(n), 3)
    return src, out


def _committed_values(servers: str, out: str, expected: int, timeout: float = 20.0) -> list[int]:
    reader = CommittedOutputReader(servers, out)
    try:
        vals: list[int] = []
        wait_for(lambda: vals.extend(int(m.value()) for m in reader.poll(0.2)) or len(vals) >= expected,
                 timeout, f"{expected} committed records in {out}", lambda: (len(vals), reader.pending))
        vals.extend(int(m.value()) for m in reader.poll(0.5))  # anything beyond would be a duplicate
        return vals
    finally:
        reader.close()


def test_exactly_once_sink_skips_a_replayed_committed_batch(spark, kafka, checkpoint):
    servers = kafka.bootstrap_servers
    src, out = _eos_setup(kafka, "eos", 500)
    df = read_kafka(spark, servers, src, startingOffsets="earliest", maxOffsetsPerTrigger=100,
                    use_connector=False).select("key", "value")
    tid = f"job-{out}"

    sink1 = ExactlyOnceKafkaSink(servers, out, transactional_id=tid)

    def crash_after_commit(b, i):
        sink1(b, i)
        if i == 2:  # the moment at-least-once sinks duplicate: output visible, batch not in commit log
            raise RuntimeError("injected driver failure after the sink committed batch 2")

    q = (df.writeStream.foreachBatch(crash_after_commit).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="injected driver failure"):
        q.awaitTermination(60)
    q.stop()
    sink1.close()
    assert sink1.committed_batches == 3

    sink2 = ExactlyOnceKafkaSink(servers, out, transactional_id=tid)  # the "new driver"
    try:
        run_available_now(df, checkpoint, sink2)
    finally:
        sink2.close()
    assert sink2.skipped_batches == [2]
    vals = _committed_values(servers, out, 500)
    assert sorted(vals) == list(range(500))
    raw = [int(m.value()) for m in read_all(servers, out, 2)]
    assert sorted(raw) == list(range(500))  # the replay wrote nothing at all


def test_at_least_once_sink_duplicates_the_same_replay(spark, kafka, checkpoint):
    """The contrast case: the same crash with write_kafka_batch duplicates batch 2's records."""
    servers = kafka.bootstrap_servers
    src, out = _eos_setup(kafka, "alo", 300)
    df = read_kafka(spark, servers, src, startingOffsets="earliest", maxOffsetsPerTrigger=100,
                    use_connector=False).select("key", "value")
    counts: list[int] = []

    def crash_after_write(b, i):
        counts.append(write_kafka_batch(b, servers, out))
        if i == 2 and len(counts) == 3:
            raise RuntimeError("injected driver failure after writing batch 2")

    q = (df.writeStream.foreachBatch(crash_after_write).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="injected driver failure"):
        q.awaitTermination(60)
    q.stop()
    run_available_now(df, checkpoint, crash_after_write)
    raw = [int(m.value()) for m in read_all(servers, out, 2)]
    assert sum(counts) == len(raw) == 300 + counts[2]
    assert sorted(set(raw)) == list(range(300))


def test_exactly_once_sink_fences_the_old_driver(spark, kafka):
    servers = kafka.bootstrap_servers
    _src, out = _eos_setup(kafka, "fence", 0)
    tid = f"job-{out}"
    def batch(ids: range):
        return spark.createDataFrame([(b"k%d" % i, b"%d" % i) for i in ids], "key binary, value binary")

    old = ExactlyOnceKafkaSink(servers, out, transactional_id=tid)
    new = ExactlyOnceKafkaSink(servers, out, transactional_id=tid)
    try:
        old(batch(range(0, 5)), 0)
        new.start()  # a new driver comes up while the old one still runs
        with pytest.raises(SinkFencedError):
            old(batch(range(5, 10)), 1)
        # A zombie that passed the check before the new driver started (e.g. it was paused mid-batch)
        # and writes anyway: on a real broker its producer is fenced; on the mock broker, which does
        # not fence, the commit log rejects its marker and readers drop its records.
        zombie_rows = batch(range(5, 10)).select("value", "key", F.lit(None).cast("int").alias("p"))
        try:
            old._write_transaction(zombie_rows.toArrow(), 1, "zombie-attempt")
        except SinkFencedError:
            pass
        new(batch(range(5, 10)), 1)
        assert new.skipped_batches == []
    finally:
        old.close()
        new.close()
    assert sorted(_committed_values(servers, out, 10)) == list(range(10))

