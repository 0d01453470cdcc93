"""Stack start-up and teardown: cold start of a Spark master + N workers until all are ALIVE, and
teardown of everything; plus the embedded Kafka cluster's start time when that backend exists.

Run: ``python benchmarks/bench_stack.py [--runs 3] [--workers 2]``. Prints the numbers and writes
``benchmarks/results/stack.json``. Goals (issue 2): cluster alive <= 12 s, teardown <= 3 s.
The machine is shared: the load average is recorded with each run, and the best and median runs
are reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from pytest_streamchaos.stack.local import LocalSparkCluster

RESULTS = Path(__file__).parent / "results" / "stack.json"


def spark_run(workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as wd:
        cluster = LocalSparkCluster(wd, workers=workers)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        try:
            cluster.start()
            t_start = time.perf_counter() - t0
            # CPU the daemons burnt to get there: the load-independent part of the start-up cost
            cpu = sum(sum(psutil.Process(p.pid).cpu_times()[:2]) for p in cluster.processes())
        finally:
            t1 = time.perf_counter()
            cluster.stop()
            t_stop = time.perf_counter() - t1
        return {"start_s": round(t_start, 2), "teardown_s": round(t_stop, 2), "daemon_cpu_s": round(cpu, 2),
                "nudged_workers": cluster.nudged_workers, "load_avg_1m": round(load, 2)}


def kafka_run(brokers: int) -> dict | None:
    try:
        from pytest_streamchaos.stack.local import LocalKafkaCluster
    except ImportError as exc:
        print(f"kafka: skipped ({exc})")
        return None
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as wd:
        cluster = LocalKafkaCluster(wd, brokers=brokers)
        t0 = time.perf_counter()
        try:
            cluster.start()
            t_start = time.perf_counter() - t0
        finally:
            t1 = time.perf_counter()
            cluster.stop()
            t_stop = time.perf_counter() - t1
    return {"brokers": brokers, "start_s": round(t_start, 2), "teardown_s": round(t_stop, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--brokers", type=int, default=3)
    args = ap.parse_args()

    runs = []
    for i in range(args.runs):
        r = spark_run(args.workers)
        runs.append(r)
        print(f"spark run {i + 1}: alive after {r['start_s']:.2f}s, teardown {r['teardown_s']:.2f}s "
              f"(daemon CPU {r['daemon_cpu_s']:.1f}s, nudged {r['nudged_workers']}, load {r['load_avg_1m']})",
              flush=True)
    starts = [r["start_s"] for r in runs]
    stops = [r["teardown_s"] for r in runs]
    summary = {
        "spark": {
            "workers": args.workers,
            "start_best_s": min(starts), "start_median_s": statistics.median(starts),
            "teardown_best_s": min(stops), "teardown_median_s": statistics.median(stops),
            "runs": runs,
            "goal": {"start_s": 12.0, "teardown_s": 3.0},
        },
        "kafka": kafka_run(args.brokers),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    s = summary["spark"]
    print(f"spark master + {args.workers} workers: start best {s['start_best_s']:.2f}s / median "
          f"{s['start_median_s']:.2f}s (goal <= 12s); teardown best {s['teardown_best_s']:.2f}s / median "
          f"{s['teardown_median_s']:.2f}s (goal <= 3s)")
    if summary["kafka"]:
        k = summary["kafka"]
        print(f"kafka {k['brokers']} brokers: start {k['start_s']:.2f}s, teardown {k['teardown_s']:.2f}s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
