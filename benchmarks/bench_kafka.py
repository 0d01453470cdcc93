"""Benchmarks of the real Kafka cluster (Apache Kafka, KRaft, one JVM per node, Toxiproxy in front of the
job's listeners).

    python benchmarks/bench_kafka.py [--quick] [--brokers 3] [--rounds 3] [--records 200000] [--cold]

Prints the numbers and writes benchmarks/results/kafka.json. Goals (not asserted): a 3-node cluster
from nothing to a verified round trip within 20 s with the jars cached; a topic create plus its first
produce and consume within 1 s.

Measured:
- jar resolution: cached (the manifest check, every start pays it) and, with ``--cold``, from an empty
  cache folder of its own (Maven Central over the network; the real cache is not touched);
- start: nothing -> every node up and registered, a replicated topic written and read back (what
  ``LocalKafkaCluster.start`` does before it returns), and teardown;
- a topic created (exact name, every partition with a leader and a full ISR) plus its first record
  produced (acks=all) and consumed back;
- produce throughput (100-byte records, acks=all, 6 partitions, RF 3) and consume throughput;
- the RSS of the node JVMs and of the Toxiproxy server.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import psutil
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.stack.local import LocalKafkaCluster

RESULTS = Path(__file__).resolve().parent / "results" / "kafka.json"
GOAL_START_S = 20.0
GOAL_TOPIC_S = 1.0


def _summary(xs: list[float]) -> dict:
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3), "max": round(max(xs), 3),
            "n": len(xs)}


def bench_resolution(cold: bool) -> dict:
    t = time.perf_counter()
    artifacts.resolve(artifacts.kafka_jars())
    out = {"cached_s": round(time.perf_counter() - t, 4)}
    if cold:
        with tempfile.TemporaryDirectory(prefix="bench-kafka-cache-") as d:
            old = os.environ.get("XDG_CACHE_HOME")
            os.environ["XDG_CACHE_HOME"] = d
            try:
                t = time.perf_counter()
                jars = artifacts.resolve(artifacts.kafka_jars())
                out.update(cold_s=round(time.perf_counter() - t, 1), jars=len(jars),
                           mb=round(sum(j.stat().st_size for j in jars) / 1e6, 1))
            finally:
                if old is None:
                    os.environ.pop("XDG_CACHE_HOME", None)
                else:
                    os.environ["XDG_CACHE_HOME"] = old
    return out


def first_round_trip(cluster: LocalKafkaCluster) -> float:
    """Seconds for: a new topic (exact, replicated) + its first record produced (acks=all) and consumed."""
    t = time.perf_counter()
    topic = cluster.create_topic(f"first-{uuid.uuid4().hex[:6]}", partitions=1)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
    p.produce(topic, b"x")
    if p.flush(30) != 0:
        raise RuntimeError("the first record was not acknowledged")
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": topic, "enable.auto.commit": False,
                  "fetch.wait.max.ms": 10})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        while (m := c.poll(0.05)) is None or m.error() is not None:
            if time.perf_counter() - t > 30:
                raise RuntimeError("the first record was not consumed within 30 s")
    finally:
        c.close()
    return time.perf_counter() - t


def rss_mb(cluster: LocalKafkaCluster) -> dict:
    pids = {n.name: n.pid for n in cluster.nodes}
    if cluster.links.server is not None:
        pids["toxiproxy-server"] = cluster.links.server.pid
    return {name: round(psutil.Process(pid).memory_info().rss / 1e6) for name, pid in pids.items() if pid}


def bench_start(workdir: Path, brokers: int, rounds: int) -> dict:
    start, topic_rt, teardown, rss = [], [], [], {}
    for i in range(rounds):
        cluster = LocalKafkaCluster(workdir / f"start-{i}", brokers=brokers)
        t0 = time.perf_counter()
        try:
            cluster.start()
            start.append(time.perf_counter() - t0)
            topic_rt.append(first_round_trip(cluster))
            rss = rss_mb(cluster)
        finally:
            t_stop = time.perf_counter()
            cluster.stop()
            teardown.append(time.perf_counter() - t_stop)
    return {"rounds": rounds, "brokers": brokers, "start_to_verified_round_trip_s": _summary(start),
            "topic_create_first_produce_consume_s": _summary(topic_rt), "teardown_s": _summary(teardown),
            "rss_mb": rss, "goal_start_s": GOAL_START_S, "goal_topic_s": GOAL_TOPIC_S,
            "goals_met": max(start) <= GOAL_START_S and max(topic_rt) <= GOAL_TOPIC_S}


def bench_throughput(cluster: LocalKafkaCluster, n: int, size: int = 100, partitions: int = 6) -> dict:
    topic = cluster.create_topic("tput", partitions=partitions)
    payload = b"x" * size
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5,
                  "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000})
    t = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, payload, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(120) != 0:
        raise RuntimeError("not every record was acknowledged")
    produce_s = time.perf_counter() - t
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "tput", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, q, OFFSET_BEGINNING) for q in range(partitions)])
    got, t = 0, time.perf_counter()
    while got < n:
        got += sum(1 for m in c.consume(10000, 1.0) if m.error() is None)
        if time.perf_counter() - t > 120:
            break
    consume_s = time.perf_counter() - t
    c.close()
    return {"records": n, "size": size, "partitions": partitions, "produce_rec_s": round(n / produce_s),
            "consume_rec_s": round(got / consume_s), "consumed": got}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--cold", action="store_true", help="also resolve the jars into an empty cache (network)")
    ap.add_argument("--quick", action="store_true", help="1 round, 50 000 records")
    args = ap.parse_args()
    rounds, records = (1, 50_000) if args.quick else (args.rounds, args.records)
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()[0]},
           "resolution": bench_resolution(args.cold)}
    print(f"jar resolution: {out['resolution']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as wd:
        out["start"] = bench_start(Path(wd), args.brokers, rounds)
        s = out["start"]
        print(f"{args.brokers} nodes from nothing to a verified round trip: {s['start_to_verified_round_trip_s']}; "
              f"topic + first produce/consume: {s['topic_create_first_produce_consume_s']}; teardown "
              f"{s['teardown_s']}; RSS MB {s['rss_mb']}", flush=True)
        cluster = LocalKafkaCluster(Path(wd) / "tput", brokers=args.brokers)
        try:
            cluster.start()
            out["throughput"] = bench_throughput(cluster, records)
        finally:
            cluster.stop()
        print(f"throughput: {out['throughput']}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
