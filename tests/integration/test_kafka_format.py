"""``format("kafka")`` without Spark's connector (shim jar + the Python source/sink named "kafka"),
against a real local Spark and the embedded Kafka cluster."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from pytest_streamchaos.spark.kafka_shim import kafka_shim_jar
from pytest_streamchaos.testing import wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spark() -> Iterator:
    from pyspark.sql import SparkSession

    # Spark's Python workers must import this worktree's packages (pyspark_streamchaos is found by
    # PySpark's lookup of pyspark_* modules on the workers' path).
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), old) if p)
    session = (SparkSession.builder.master("local[2]").appName("streamchaos-kafka-format")
               .config("spark.driver.extraClassPath", str(kafka_shim_jar()))
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture
def checkpoint() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="streamchaos-ck-")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def produce(servers: str, topic: str, ids: range, partitions: int, headers: bool = False) -> None:
    p = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})
    for i in ids:
        extra = {"headers": [("h", b"%d" % i)]} if headers else {}
        p.produce(topic, key=b"k%d" % i, value=b"%d" % i, partition=i % partitions, **extra)
    assert p.flush(30) == 0


def read_values(servers: str, topic: str, partitions: int, n: int, timeout: float = 60.0) -> list:
    """The first ``n`` records of ``topic`` (waits for them) as (value, key, partition, headers)."""
    c = Consumer({"bootstrap.servers": servers, "group.id": "t", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list = []
    try:
        def enough() -> bool:
            for m in c.consume(1000, timeout=0.2):
                assert m.error() is None, m.error()
                out.append((m.value(), m.key(), m.partition(), m.headers()))
            return len(out) >= n
        wait_for(enough, timeout, f"{n} records on {topic}", lambda: len(out))
        return out
    finally:
        c.close()


def reader(spark, servers: str, **options: str):
    r = spark.read.format("kafka").option("kafka.bootstrap.servers", servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def test_stream_read_write_every_record_once(spark, kafka, checkpoint):
    src, dst = kafka.create_topic("in", 2), kafka.create_topic("out", 2)
    produce(kafka.bootstrap_servers, src, range(100), 2)
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
          .option("subscribe", src).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "40")
          .load())
    q = (df.selectExpr("key", "value").writeStream.format("kafka")
         .option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", dst)
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
        assert not q.isActive and q.exception() is None
    finally:
        q.stop()
    got = read_values(kafka.bootstrap_servers, dst, 2, 100)
    assert sorted(int(v) for v, *_ in got) == list(range(100))


def test_batch_read_with_ending_offsets_json(spark, kafka):
    t = kafka.create_topic("in", 2)
    produce(kafka.bootstrap_servers, t, range(20), 2)  # 10 records per partition
    ending = json.dumps({t: {"0": 3, "1": -1}})
    rows = reader(spark, kafka.bootstrap_servers, subscribe=t, endingOffsets=ending).collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(0, o) for o in range(3)] + [(1, o) for o in range(10)]
    assert {r.topic for r in rows} == {t} and all(r.timestamp is not None for r in rows)
    with pytest.raises(Exception, match="startingOffsets='latest' is not valid for batch"):
        reader(spark, kafka.bootstrap_servers, subscribe=t, startingOffsets="latest").collect()


def test_batch_read_assign_only_given_partitions(spark, kafka):
    t = kafka.create_topic("in", 3)
    produce(kafka.bootstrap_servers, t, range(30), 3)
    rows = reader(spark, kafka.bootstrap_servers, assign=json.dumps({t: [1]})).collect()
    assert {r.partition for r in rows} == {1} and len(rows) == 10


def test_batch_read_subscribe_pattern_matches_whole_names(spark, kafka):
    a, b, other = kafka.create_topic("pat-a", 1), kafka.create_topic("pat-b", 1), kafka.create_topic("nopat", 1)
    for i, t in enumerate((a, b, other)):
        produce(kafka.bootstrap_servers, t, range(i * 10, i * 10 + 5), 1)
    tag = re.escape(a.split("-")[2])  # names are <name>-<test tag>-<n>
    pattern = rf"pat-[ab]-{tag}-\d+"
    rows = reader(spark, kafka.bootstrap_servers, subscribePattern=pattern).collect()
    assert {r.topic for r in rows} == {a, b} and len(rows) == 10


def test_stream_subscribe_pattern_picks_up_new_topics(spark, kafka, checkpoint):
    a, out = kafka.create_topic("sp-a", 1), kafka.create_topic("out", 1)
    tag = re.escape(a.split("-")[2])
    produce(kafka.bootstrap_servers, a, range(5), 1)
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
          .option("subscribePattern", rf"sp-[ab]-{tag}-\d+").option("startingOffsets", "earliest").load())
    q = (df.select("value").writeStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
         .option("topic", out).option("checkpointLocation", checkpoint)
         .trigger(processingTime="500 milliseconds").start())
    try:
        assert len(read_values(kafka.bootstrap_servers, out, 1, 5)) == 5
        b = kafka.create_topic("sp-b", 1)  # appears while the query runs: read from its beginning
        produce(kafka.bootstrap_servers, b, range(5, 10), 1)
        got = read_values(kafka.bootstrap_servers, out, 1, 10)
        assert sorted(int(v) for v, *_ in got) == list(range(10))
    finally:
        q.stop()


def test_include_headers_adds_spark_headers_column(spark, kafka):
    t = kafka.create_topic("in", 1)
    produce(kafka.bootstrap_servers, t, range(3), 1, headers=True)
    df = reader(spark, kafka.bootstrap_servers, subscribe=t, includeHeaders="true")
    assert df.schema["headers"].dataType.simpleString() == "array<struct<key:string,value:binary>>"
    rows = sorted(df.collect(), key=lambda r: r.offset)
    assert [(h.key, bytes(h.value)) for r in rows for h in r.headers] == [("h", b"0"), ("h", b"1"), ("h", b"2")]


def test_batch_write_topic_column_and_option_wins(spark, kafka):
    col_topic, opt_topic = kafka.create_topic("by-col", 1), kafka.create_topic("by-opt", 1)
    df = spark.createDataFrame([(col_topic, "k1", "v1", 0), (col_topic, "k2", "v2", 0)],
                               "topic string, key string, value string, partition int")
    # Spark refuses the default save mode (ErrorIfExists) for every V2 source, Python ones included;
    # Spark's own connector (a V1 source) accepts it.
    df.write.mode("append").format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers).save()
    assert sorted(v for v, *_ in read_values(kafka.bootstrap_servers, col_topic, 1, 2)) == [b"v1", b"v2"]
    (df.write.mode("append").format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
     .option("topic", opt_topic).save())
    assert sorted(v for v, *_ in read_values(kafka.bootstrap_servers, opt_topic, 1, 2)) == [b"v1", b"v2"]


def test_write_without_value_or_topic_fails_clearly(spark, kafka):
    w = spark.createDataFrame([("k",)], "key string").write.mode("append").format("kafka")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        w.option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", "x").save()
    w = spark.createDataFrame([("v",)], "value string").write.mode("append").format("kafka")
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute"):
        w.option("kafka.bootstrap.servers", kafka.bootstrap_servers).save()


def test_unsupported_option_fails_naming_it(spark, kafka):
    t = kafka.create_topic("in", 1)
    with pytest.raises(Exception, match=r"unsupported Kafka source option\(s\) \['startingtimestamp'\].*subscribe"):
        reader(spark, kafka.bootstrap_servers, subscribe=t, startingTimestamp="0").collect()


def test_unchanged_job_on_the_cluster_reads_and_writes_format_kafka(spark_cluster, kafka, tmp_path: Path):
    """The job starts at latest: every record produced after its initial offsets are fixed arrives once."""
    from pytest_streamchaos.spark.launcher import JobLauncher
    from pytest_streamchaos.spark.source_state import ENV_SOURCE_STATE_DIR, read_initial_offsets

    src, dst = kafka.create_topic("in", 2), kafka.create_topic("out", 2)
    state = tmp_path / "source-state"
    launcher = JobLauncher.for_cluster(spark_cluster, tmp_path / "jobs")
    try:
        job = launcher.submit(REPO / "tests/integration/jobs/kafka_format_passthrough.py", env={
            "STREAMCHAOS_BOOTSTRAP_SERVERS": kafka.bootstrap_servers, "STREAMCHAOS_INPUT_TOPIC": src,
            "STREAMCHAOS_OUTPUT_TOPIC": dst, "STREAMCHAOS_CHECKPOINT_DIR": str(tmp_path / "ck"),
            ENV_SOURCE_STATE_DIR: str(state)})
        assert str(kafka_shim_jar()) in job.effective_conf["spark.driver.extraClassPath"]
        job.wait_for(lambda _: read_initial_offsets(state), 180, "the query's initial offsets")
        [initial] = read_initial_offsets(state)
        assert initial["topics"] == [src] and set(initial["offsets"][src]) == {"0", "1"}
        produce(kafka.bootstrap_servers, src, range(200), 2)
        got = read_values(kafka.bootstrap_servers, dst, 2, 200, timeout=180)
        assert sorted(int(v) for v, *_ in got) == list(range(200))
        # Once a finished batch ends at the input's end, the output holds each record exactly once.
        base = sum(initial["offsets"][src].values())
        job.wait_for(lambda j: j.progress.poll() or read_to(j, src) - base >= 200, 60, "a batch ending at 200")
        assert record_count(kafka.bootstrap_servers, dst, 2) == 200
    finally:
        launcher.stop_all()


def read_to(job, topic: str) -> int:
    """Sum of the end offsets of ``topic`` in the current launch's last finished micro-batch."""
    ends = [b["sources"][0]["endOffset"] for b in job.progress.batches if b["app_id"] == job.app_id]
    if not ends:
        return 0
    end = json.loads(ends[-1]) if isinstance(ends[-1], str) else ends[-1]
    return sum(int(v) for v in end.get(topic, {}).values())


def record_count(servers: str, topic: str, partitions: int) -> int:
    """How many records ``topic`` holds (sum of its partitions' end offsets; nothing is deleted)."""
    c = Consumer({"bootstrap.servers": servers, "group.id": "t", "enable.auto.commit": False})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                   for p in range(partitions))
    finally:
        c.close()
