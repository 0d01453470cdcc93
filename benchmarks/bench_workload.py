"""Benchmarks of the workload generator and the output collector against the embedded Kafka cluster.

    python benchmarks/bench_workload.py [--quick]

Prints the numbers and writes benchmarks/results/workload.json. Goals (not asserted):
generator >= 50,000 records/s from one Python thread; rate error <= 2 % at 1,000 and 5,000 records/s;
the collector keeps up with the generator's top rate.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from confluent_kafka import Producer

from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.stack.local import LocalKafkaCluster
from pytest_streamchaos.workload import records
from pytest_streamchaos.workload.generator import Generator

RESULTS = Path(__file__).resolve().parent / "results" / "workload.json"


def _cpu() -> float:
    return time.process_time()


def bench_encode(n: int = 200_000) -> dict:
    """Encoding alone (the pure-Python part of the hot path)."""
    ids = np.arange(n, dtype=np.int64)
    keys = ids % 100
    ts = ids + 1_700_000_000_000
    t0 = time.perf_counter()
    records.encode_batch(ids, keys, ts, 100)
    dt = time.perf_counter() - t0
    return {"records": n, "records_per_s": n / dt}


def bench_generator(kafka: LocalKafkaCluster, rate: float, seconds: float) -> dict:
    topic = kafka.create_topic(f"bench-gen-{int(rate)}", partitions=6)
    gen = Generator(kafka.bootstrap_servers, topic, rate=rate, key_space=100, record_size=100, seed=1,
                    max_lag_s=1.0)
    gen.start()
    c0, w0 = _cpu(), time.perf_counter()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.05)
    gen.stop()
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    st = gen.stats()
    return {
        "rate_target": rate,
        "seconds": seconds,
        "rate_achieved": st["rate_achieved"],
        "rate_error_pct": 100.0 * (st["rate_achieved"] - rate) / rate,
        "acked": st["acked"],
        "failed": st["failed"],
        "skipped_behind": st["skipped"],
        "process_cpu_cores": cpu / wall,  # python thread + librdkafka threads
        "generator_thread_cpu_s": st["thread_cpu_s"],
        # Capacity of one core for the Python side, independent of how loaded the machine is.
        "records_per_thread_cpu_s": st["acked"] / st["thread_cpu_s"] if st["thread_cpu_s"] else None,
        "records_per_process_cpu_s": st["acked"] / cpu if cpu else None,
    }


def bench_collector(kafka: LocalKafkaCluster, n: int, ids_per_output: int) -> dict:
    # 12 partitions keep each under the embedded broker's ~5 MB per-partition retention.
    topic = kafka.create_topic(f"bench-col-{ids_per_output}", partitions=12)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 20,
                  "queue.buffering.max.messages": 2_000_000})
    if ids_per_output == 1:
        values = [b'{"id":%d,"key":"k%d"}' % (i, i % 100) for i in range(n)]
    else:
        values = [b'{"ids":[%s],"key":"k%d","window_start":1700000000000,"window_end":1700000010000}'
                  % (b",".join(b"%d" % (i * ids_per_output + j) for j in range(ids_per_output)), i % 100)
                  for i in range(n)]
    for i, v in enumerate(values):
        p.produce(topic, v, partition=i % 12)
    if p.flush(120) != 0:
        raise RuntimeError("benchmark outputs were not all delivered")
    c = Collector(kafka.bootstrap_servers, topic)
    c0, w0 = _cpu(), time.perf_counter()
    c.start()
    c.wait_until(lambda col: col.count + col.lost_to_retention >= n, timeout=300, what=f"{n} outputs")
    wall, cpu = time.perf_counter() - w0, _cpu() - c0
    c.stop()
    if len(c.outputs()) != n or c.lost_to_retention:
        raise RuntimeError(f"collector got {len(c.outputs())} of {n} ({c.lost_to_retention} lost to retention)")
    return {"outputs": n, "ids_per_output": ids_per_output, "outputs_per_s": n / wall,
            "ids_per_s": n * ids_per_output / wall, "process_cpu_cores": cpu / wall,
            "outputs_per_process_cpu_s": n / cpu if cpu else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="shorter runs")
    args = ap.parse_args()
    secs = 3.0 if args.quick else 10.0
    workdir = Path(tempfile.mkdtemp(prefix="bench-workload-"))
    kafka = LocalKafkaCluster(workdir, brokers=3)
    results: dict = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "orjson": _has_orjson()},
        "kafka": "embedded (librdkafka mock cluster, 3 brokers, helper process)",
        "load_average_at_start": os.getloadavg(),
    }
    try:
        kafka.start()
        results["encode"] = bench_encode()
        print(f"encode only: {results['encode']['records_per_s']:,.0f} records/s")
        top = bench_generator(kafka, rate=200_000, seconds=secs)
        results["generator_top_rate"] = top
        print(f"generator top rate (asked 200k/s): {top['rate_achieved']:,.0f} acked records/s "
              f"({top['process_cpu_cores']:.2f} cores incl. librdkafka threads); per CPU-second: "
              f"{top['records_per_thread_cpu_s']:,.0f} (generator thread), "
              f"{top['records_per_process_cpu_s']:,.0f} (whole process)")
        results["generator_accuracy"] = []
        for rate in (1000, 5000):
            r = bench_generator(kafka, rate=rate, seconds=secs)
            results["generator_accuracy"].append(r)
            print(f"generator at {rate}/s for {secs:.0f}s: achieved {r['rate_achieved']:,.1f}/s "
                  f"(error {r['rate_error_pct']:+.2f} %)")
        n = 100_000 if args.quick else 200_000
        results["collector"] = []
        for k in (1, 10):
            r = bench_collector(kafka, n, k)
            results["collector"].append(r)
            print(f"collector, {k} id(s)/output: {r['outputs_per_s']:,.0f} outputs/s "
                  f"({r['ids_per_s']:,.0f} ids/s; {r['outputs_per_process_cpu_s']:,.0f} per CPU-second)")
    finally:
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_at_end"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS}")


def _has_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
