"""format("kafka") (shim jar + Python source/sink "kafka") versus read_kafka + foreachBatch(write_kafka_batch).

Same data, local[2], the embedded Kafka cluster, both paths at-least-once Kafka-to-Kafka:

- ``format``:      spark.readStream.format("kafka") -> writeStream.format("kafka")
- ``foreachbatch``: read_kafka(..., use_connector=False) -> foreachBatch(write_kafka_batch)

1. Per-batch overhead: a handful of records per 500 ms trigger; trigger-to-commit
   (``durationMs.triggerExecution``) p50/p90 and its parts.
2. Rate ceiling: N records (BENCH_RECORDS, default 50000) over 3 partitions, maxOffsetsPerTrigger
   = 20000, AvailableNow; wall-clock rows/s and the median rows/s of the steady batches.

Prints numbers and writes benchmarks/results/kafka_format.json.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from pytest_streamchaos.spark.kafka import read_kafka
from pytest_streamchaos.spark.kafka_shim import kafka_shim_jar
from pytest_streamchaos.spark.kafka_sink import write_kafka_batch
from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

OUT = Path(__file__).parent / "results" / "kafka_format.json"
REPO = Path(__file__).resolve().parents[1]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def produce(servers: str, topic: str, start: int, n: int, partitions: int = 3) -> None:
    p = Producer({"bootstrap.servers": servers, "linger.ms": 20, "queue.buffering.max.messages": 1_000_000})
    for i in range(start, start + n):
        while True:
            try:
                p.produce(topic, key=b"k%d" % i, value=b'{"id": %d, "payload": "xxxxxxxxxxxxxxxxxxxxxxxx"}' % i,
                          partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(60) == 0


def start_query(spark, path: str, servers: str, src: str, out: str, ck: str, starting: str, trigger: dict):
    if path == "format":
        df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", src)
              .option("startingOffsets", starting).option("maxOffsetsPerTrigger", "20000").load())
        w = (df.select("key", "value").writeStream.format("kafka").option("kafka.bootstrap.servers", servers)
             .option("topic", out))
    else:
        df = read_kafka(spark, servers, src, startingOffsets=starting, maxOffsetsPerTrigger=20000,
                        use_connector=False)
        w = df.select("key", "value").writeStream.foreachBatch(lambda b, i: write_kafka_batch(b, servers, out))
    return w.option("checkpointLocation", ck).trigger(**trigger).start()


def overhead(spark, path: str, servers: str, src: str, out: str, ck: str, batches: int) -> dict:
    q = start_query(spark, path, servers, src, out, ck, "latest", {"processingTime": "500 milliseconds"})
    try:
        sent, deadline = 0, time.monotonic() + 300
        while len([p for p in q.recentProgress if p["numInputRows"] > 0]) < batches + 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path}: waited for {batches} batches; progress {len(q.recentProgress)}")
            produce(servers, src, sent, 3)
            sent += 3
            time.sleep(0.5)  # paced input (benchmark, not a test): one small batch per trigger
        prog = [p for p in q.recentProgress if p["numInputRows"] > 0][2:]  # skip warm-up
    finally:
        q.stop()
    trig = [p["durationMs"]["triggerExecution"] for p in prog]
    parts = {k: statistics.median([p["durationMs"].get(k, 0) for p in prog])
             for k in ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")}
    return {"batches": len(prog), "trigger_ms_p50": pct(trig, 50), "trigger_ms_p90": pct(trig, 90),
            "parts_ms_median": parts}


def record_count(servers: str, topic: str, partitions: int = 3) -> int:
    c = Consumer({"bootstrap.servers": servers, "group.id": "bench"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                   for p in range(partitions))
    finally:
        c.close()


def throughput(spark, path: str, servers: str, src: str, out: str, ck: str, n: int) -> dict:
    t0 = time.monotonic()
    q = start_query(spark, path, servers, src, out, ck, "earliest", {"availableNow": True})
    q.awaitTermination(900)
    elapsed = time.monotonic() - t0
    if q.isActive:
        q.stop()
        raise TimeoutError(f"{path}: throughput query still running after 900 s")
    written = record_count(servers, out)
    assert written >= n, (path, written, n)
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    rates = [p["numInputRows"] / (p["durationMs"]["triggerExecution"] / 1000) for p in prog[1:]]
    return {"records": n, "written": written, "batches": len(prog), "wall_s": round(elapsed, 2),
            "rows_per_s_wall": round(n / elapsed),
            "rows_per_s_steady_batches_median": round(statistics.median(rates)) if rates else None}


def session():
    from pyspark.sql import SparkSession

    # The Python workers must import this tree's packages (pyspark_streamchaos, found by PySpark's
    # lookup of pyspark_* modules).
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    spark = (SparkSession.builder.master("local[2]").appName("bench-kafka-format")
             .config("spark.driver.extraClassPath", str(kafka_shim_jar()))
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> int:
    n = int(os.environ.get("BENCH_RECORDS", "50000"))
    work = tempfile.mkdtemp(prefix="bench-kafka-format-")
    kafka = LocalKafkaCluster(brokers=1, workdir=work)
    spark = None
    res: dict = {"host": {"python": sys.version.split()[0], "machine": platform.machine(), "cpus": os.cpu_count(),
                          "load_avg_at_start": os.getloadavg()}}
    try:
        kafka.start()
        servers = kafka.bootstrap_servers
        kafka.create_topic("src", 3)
        produce(servers, "src", 0, n)
        spark = session()
        for path in ("format", "foreachbatch"):
            for t in (f"tiny-{path}", f"tiny-out-{path}", f"out-{path}"):
                kafka.create_topic(t, 3)
            res[path] = {
                "tiny_batches": overhead(spark, path, servers, f"tiny-{path}", f"tiny-out-{path}",
                                         os.path.join(work, f"ck-o-{path}"), 15),
                "throughput": throughput(spark, path, servers, "src", f"out-{path}",
                                         os.path.join(work, f"ck-t-{path}"), n),
            }
        res["load_avg_at_end"] = os.getloadavg()
    finally:
        if spark is not None:
            spark.stop()
        kafka.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(res, indent=2))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
