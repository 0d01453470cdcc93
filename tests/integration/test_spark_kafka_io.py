"""The foreachBatch Kafka sinks of pytest_streamchaos.job (at-least-once, exactly-once) in a local Spark
that reads with Spark's own Kafka connector, against the real brokers."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql import functions as F

from pytest_streamchaos.job import ExactlyOnceKafkaSink, SinkFencedError, read_kafka, write_kafka_batch
from pytest_streamchaos.job.compat import to_arrow
from pytest_streamchaos.job.eos import control_topic_for
from pytest_streamchaos.testing import wait_for

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def spark() -> Iterator:
    from pyspark.sql import SparkSession

    from pytest_streamchaos.spark.connector import connector_jars
    from pytest_streamchaos.spark.launcher import spark_home

    # local[2,4]: a task is tried 4 times, as on any cluster (spark.task.maxFailures); plain local[2] fails
    # the query at a task's first transient error (once in CI: a Kafka fetch of a replayed batch on 2 busy
    # cores), which says nothing of the sinks these tests are about
    session = (SparkSession.builder.master("local[2,4]").appName("streamchaos-kafka-io")
               .config("spark.jars", ",".join(str(j) for j in connector_jars(spark_home())))
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
    # timestamps of now: a fixed past instant (2023) is older than the brokers' retention (7 days), and their
    # first retention check (30 s after start) deleted the records before the query read them
    t0_ms = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})
    for i in ids:
        p.produce(topic, key=b"k%d" % i, value=b"%d" % i, partition=i % partitions, timestamp=t0_ms + i)
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


def _eos_setup(kafka, name: str, n: int):
    src = kafka.create_topic(name + "-in", partitions=3)
    out = kafka.create_topic(name + "-out", partitions=2)
    kafka.create_topic(control_topic_for(out), 1)
    produce(kafka.bootstrap_servers, src, range(n), 3)
    return src, out


def _committed_values(servers: str, out: str, expected: int) -> list[int]:
    """What a read_committed consumer of the output sees (records of aborted transactions never)."""
    vals = [int(m.value()) for m in read_all(servers, out, 2)]
    assert len(vals) >= expected, f"{len(vals)} committed records in {out}, expected {expected}"
    return vals


def test_exactly_once_sink_skips_a_replayed_committed_batch(spark, kafka, checkpoint):
    servers = kafka.bootstrap_servers
    src, out = _eos_setup(kafka, "eos", 500)
    df = read_kafka(spark, servers, src, startingOffsets="earliest", maxOffsetsPerTrigger=100).select("key", "value")
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
    df = read_kafka(spark, servers, src, startingOffsets="earliest", maxOffsetsPerTrigger=100).select("key", "value")
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
        # and writes anyway: the broker fences its producer (same transactional.id), so nothing of it
        # is ever committed.
        zombie_rows = batch(range(5, 10)).select("value", "key", F.lit(None).cast("int").alias("p"))
        try:
            old._write_transaction(to_arrow(zombie_rows), 1, "zombie-attempt")
        except SinkFencedError:
            pass
        new(batch(range(5, 10)), 1)
        assert new.skipped_batches == []
    finally:
        old.close()
        new.close()
    assert sorted(_committed_values(servers, out, 10)) == list(range(10))

