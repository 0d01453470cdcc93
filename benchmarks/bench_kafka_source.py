"""Cost of the Python Kafka source (pytest_streamchaos.spark.kafka_source) in local[2].

1. Fixed per-batch overhead: a query on a topic fed with a handful of records per trigger
   (tiny batches), and one with no input at all (empty batches); trigger-to-commit time from
   ``query.recentProgress[*].durationMs.triggerExecution`` (and its parts).
2. Throughput: rows/s from the source through foreachBatch into the at-least-once Kafka sink
   (write_kafka_batch), 3 input partitions, maxOffsetsPerTrigger = 20000, AvailableNow.

Prints numbers and writes benchmarks/results/kafka_source.json. Needs nothing but the installed
packages: the Kafka cluster is the embedded one (LocalKafkaCluster).
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

from confluent_kafka import Producer

from pytest_streamchaos.spark.kafka import read_kafka
from pytest_streamchaos.spark.kafka_sink import write_kafka_batch
from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

OUT = Path(__file__).parent / "results" / "kafka_source.json"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def produce(servers: str, topic: str, start: int, n: int, partitions: int = 3) -> None:
    p = Producer({"bootstrap.servers": servers, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000})
    for i in range(start, start + n):
        while True:
            try:
                p.produce(topic, key=b"k%d" % i, value=b'{"id": %d, "payload": "xxxxxxxxxxxxxxxxxxxxxxxx"}' % i,
                          partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(60) == 0


def overhead(spark, servers: str, topic: str, ck: str, feed: bool, batches: int) -> dict:
    df = read_kafka(spark, servers, topic, startingOffsets="latest", use_connector=False)
    q = (df.writeStream.foreachBatch(lambda b, i: b.count()).option("checkpointLocation", ck)
         .trigger(processingTime="500 milliseconds").start())
    try:
        sent, deadline = 0, time.monotonic() + 240
        while len([p for p in q.recentProgress if feed is False or p["numInputRows"] > 0]) < batches + 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited for {batches} batches; progress so far: {len(q.recentProgress)}")
            if feed:
                produce(servers, topic, sent, 3)
                sent += 3
            time.sleep(0.5)  # paced input, one small batch per trigger
        prog = [p for p in q.recentProgress if (p["numInputRows"] > 0) == feed][2:]  # skip warm-up
    finally:
        q.stop()
    trig = [p["durationMs"]["triggerExecution"] for p in prog]
    parts = {k: statistics.median([p["durationMs"].get(k, 0) for p in prog])
             for k in ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")}
    return {"batches": len(prog), "rows_per_batch_median": statistics.median([p["numInputRows"] for p in prog]),
            "trigger_ms_p50": pct(trig, 50), "trigger_ms_p90": pct(trig, 90), "trigger_ms_max": max(trig),
            "parts_ms_median": parts}


def throughput(spark, servers: str, src: str, out: str, ck: str, n: int) -> dict:
    produce(servers, src, 0, n)
    df = read_kafka(spark, servers, src, startingOffsets="earliest", maxOffsetsPerTrigger=20000,
                    use_connector=False).select("key", "value")
    written: list[int] = []
    t0 = time.monotonic()
    q = (df.writeStream.foreachBatch(lambda b, i: written.append(write_kafka_batch(b, servers, out)))
         .option("checkpointLocation", ck).trigger(availableNow=True).start())
    q.awaitTermination(600)
    elapsed = time.monotonic() - t0
    if q.isActive:
        q.stop()
        raise TimeoutError("throughput query still running after 600 s")
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert sum(written) == n, (sum(written), n)
    batch_rates = [p["numInputRows"] / (p["durationMs"]["triggerExecution"] / 1000) for p in prog[1:]]
    return {"records": n, "batches": len(prog), "wall_s": round(elapsed, 2),
            "rows_per_s_wall": round(n / elapsed), "rows_per_s_steady_batches_median":
            round(statistics.median(batch_rates)) if batch_rates else None}


def main() -> int:
    from pyspark.sql import SparkSession

    n = int(os.environ.get("BENCH_RECORDS", "200000"))
    work = tempfile.mkdtemp(prefix="bench-kafka-src-")
    kafka = LocalKafkaCluster(brokers=3, workdir=work)
    spark = None
    try:
        kafka.start()
        servers = kafka.bootstrap_servers
        for t, parts in (("tiny", 3), ("empty", 3), ("src", 3), ("out", 3)):
            kafka.create_topic(t, parts)
        t = time.monotonic()
        spark = (SparkSession.builder.master("local[2]").appName("bench-kafka-source")
                 .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
                 .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        startup = time.monotonic() - t
        res = {
            "host": {"python": sys.version.split()[0], "machine": platform.machine(), "cpus": os.cpu_count(),
                     "load_avg_at_start": os.getloadavg()},
            "spark_local_startup_s": round(startup, 2),
            "tiny_batches": overhead(spark, servers, "tiny", os.path.join(work, "ck1"), True, 15),
            "empty_batches": overhead(spark, servers, "empty", os.path.join(work, "ck2"), False, 15),
            "throughput_at_least_once": throughput(spark, servers, "src", "out", os.path.join(work, "ck3"), n),
            "load_avg_at_end": os.getloadavg(),
        }
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
