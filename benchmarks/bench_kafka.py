"""Benchmarks of the embedded Kafka cluster (librdkafka mock cluster in a helper process).

    python benchmarks/bench_kafka.py [--quick] [--brokers 3] [--records 200000]

Prints the numbers and writes benchmarks/results/kafka.json. Goal (not asserted): a broker cluster
is ready, and has acknowledged a first record, within 1 s of the spawn.

Measured:
- start: spawn -> ready line (listeners bound), and spawn -> first produced record acknowledged;
- teardown: stop() until the helper process is reaped;
- produce throughput (100-byte records, acks=all, 6 partitions) and consume throughput of the same
  records with an assign()-based consumer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

RESULTS = Path(__file__).resolve().parent / "results" / "kafka.json"
GOAL_START_S = 1.0


def bench_start(workdir: Path, brokers: int, rounds: int) -> dict:
    ready, first_ack, teardown = [], [], []
    for i in range(rounds):
        cluster = LocalKafkaCluster(brokers=brokers, workdir=workdir / f"start-{i}")
        t0 = time.perf_counter()
        try:
            cluster.start(timeout=30)
            t_ready = time.perf_counter()
            topic = cluster.create_topic("first", partitions=1)
            p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
            acked: list = []
            p.produce(topic, b"x", on_delivery=lambda err, _m, acked=acked: acked.append(err))
            if p.flush(30) != 0 or acked != [None]:
                raise RuntimeError(f"first record not acknowledged: {acked}")
            t_ack = time.perf_counter()
            del p
        finally:
            t_stop = time.perf_counter()
            cluster.stop()
            t_gone = time.perf_counter()
        ready.append(t_ready - t0)
        first_ack.append(t_ack - t0)
        teardown.append(t_gone - t_stop)
    return {
        "rounds": rounds,
        "brokers": brokers,
        "ready_s": _summary(ready),
        "first_ack_s": _summary(first_ack),
        "teardown_s": _summary(teardown),
        "goal_start_s": GOAL_START_S,
        "goal_met": max(first_ack) <= GOAL_START_S,
    }


def bench_throughput(cluster: LocalKafkaCluster, n: int, size: int = 100, partitions: int = 6) -> dict:
    topic = cluster.create_topic("tput", partitions=partitions)
    payload = b"x" * size
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5,
                  "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000})
    failed = 0

    def on_delivery(err, _msg):
        nonlocal failed
        if err is not None:
            failed += 1

    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, payload, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.01)  # local queue full: let deliveries drain
        if i % 10000 == 0:
            p.poll(0)
    left = p.flush(120)
    produce_s = time.perf_counter() - t0
    if left or failed:
        raise RuntimeError(f"produce: {left} undelivered, {failed} failed")

    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"bench-{uuid.uuid4()}",
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, q, OFFSET_BEGINNING) for q in range(partitions)])
    got = 0
    t1 = time.perf_counter()
    deadline = time.monotonic() + 120
    try:
        while got < n and time.monotonic() < deadline:
            got += sum(1 for m in c.consume(10000, 0.5) if m.error() is None)
    finally:
        c.close()
    consume_s = time.perf_counter() - t1
    if got < n:
        raise RuntimeError(f"consume: read {got} of {n} records within 120 s")
    return {
        "records": n,
        "record_bytes": size,
        "partitions": partitions,
        "produce_s": produce_s,
        "produce_records_per_s": n / produce_s,
        "consume_s": consume_s,
        "consume_records_per_s": n / consume_s,
    }


def _summary(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 start rounds and 50k records")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    rounds = 3 if args.quick else args.rounds
    n = 50_000 if args.quick else args.records

    workdir = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    try:
        start = bench_start(workdir, args.brokers, rounds)
        s = start
        print(f"broker start ({args.brokers} brokers, {rounds} rounds): "
              f"ready median {s['ready_s']['median']:.3f}s "
              f"(max {s['ready_s']['max']:.3f}s); first ack median {s['first_ack_s']['median']:.3f}s "
              f"(max {s['first_ack_s']['max']:.3f}s); goal <= {GOAL_START_S:.1f}s: "
              f"{'met' if s['goal_met'] else 'MISSED'}")
        print(f"teardown: median {s['teardown_s']['median']:.3f}s (max {s['teardown_s']['max']:.3f}s)")

        cluster = LocalKafkaCluster(brokers=args.brokers, workdir=workdir / "tput")
        cluster.start(timeout=30)
        try:
            tput = bench_throughput(cluster, n)
        finally:
            cluster.stop()
        print(f"produce {n} x {tput['record_bytes']} B (acks=all): "
              f"{tput['produce_records_per_s']:,.0f} rec/s "
              f"({tput['produce_s']:.2f}s); consume: {tput['consume_records_per_s']:,.0f} rec/s "
              f"({tput['consume_s']:.2f}s)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    result = {
        "benchmark": "kafka",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"python": platform.python_version(), "cpus": _cpus(), "platform": platform.platform()},
        "librdkafka": confluent_kafka.libversion()[0],
        "confluent_kafka": confluent_kafka.__version__,
        "quick": args.quick,
        "start": start,
        "throughput": tput,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


def _cpus() -> int:
    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
