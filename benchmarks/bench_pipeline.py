"""Time from submit to first output of the stateless pipeline (``pipelines/enrich_at_least_once.py``).

A real run: local Spark standalone cluster (2 workers) + embedded Kafka (1 broker). The input topic
is pre-loaded, then the job is submitted with :class:`JobLauncher` and the output collected. Each run
reports the phases, all measured from the submit call:

* ``driver_started_s`` -- SparkContext up (SparkListenerApplicationStart in the event log),
* ``first_executor_s`` -- first executor registered with the driver,
* ``query_started_s`` -- the streaming query started (QueryStartedEvent),
* ``first_batch_end_s`` -- end of the first micro-batch with input (its progress event),
* ``first_output_s`` -- the first output record read from the output topic (the headline number),
* ``all_output_s`` -- every pre-loaded record in the output.

Run: ``python benchmarks/bench_pipeline.py [--runs 2] [--records 500]``. Prints the numbers and writes
``benchmarks/results/pipeline.json``. The machine is shared: the 1-minute load average is recorded.
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

from pytest_streamchaos.job.config import JobConfig
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.spark.launcher import JobLauncher
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster
from pytest_streamchaos.workload.generator import Generator

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "pipeline.json"
PIPELINE = ROOT / "pipelines" / "enrich_at_least_once.py"
TIMEOUT = 300.0


def _preload(servers: str, topic: str, n: int) -> list[int]:
    gen = Generator(servers, topic, rate=5000, max_records=n).start()
    deadline = time.monotonic() + 60
    while gen.produced < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"pre-load: {gen.produced}/{n} records produced in 60 s")
        time.sleep(0.05)
    gen.stop()
    return gen.sent().ids.tolist()


def one_run(spark: LocalSparkCluster, kafka: LocalKafkaCluster, workdir: Path, run: int, n: int,
            conf: dict[str, str]) -> dict:
    src = kafka.create_topic(f"bench-in-{run}", 2)
    out = kafka.create_topic(f"bench-out-{run}", 2)
    ids = _preload(kafka.bootstrap_servers, src, n)
    launcher = JobLauncher.for_cluster(spark, workdir / f"run{run}", conf=conf)
    cfg = JobConfig(kafka.bootstrap_servers, src, out, str(workdir / f"run{run}" / "checkpoint"), 1.0)
    load = os.getloadavg()[0]
    with Collector(kafka.bootstrap_servers, out) as collector:
        t0 = time.time()
        job = launcher.submit(PIPELINE, config=cfg)
        try:
            job.wait_for(lambda _j: collector.count > 0, TIMEOUT, "the first output record")
            t_first = float(collector.outputs().arrival_ts.min())
            job.wait_for(lambda _j: collector.has_seen(ids), TIMEOUT, f"all {n} records in the output")
            t_all = collector.last_arrival

            def batch_reported(j) -> bool:  # progress comes after the batch's commit, so a moment later
                j.progress.poll()
                return any(b.get("numInputRows", 0) > 0 for b in j.progress.batches)

            job.wait_for(batch_reported, 120, "the progress event of the first batch with input")
        finally:
            launcher.stop_all()
    p = job.progress
    p.poll()  # after the clean stop: the event log is complete

    def first(kind: str) -> float | None:
        ts = [e.t for e in p.timeline if e.kind == kind]
        return round(min(ts) - t0, 2) if ts else None

    batch_ends = [b["t_end"] for b in p.batches if b.get("numInputRows", 0) > 0]
    return {
        "driver_started_s": first("driver_started"),
        "first_executor_s": first("executor_added"),
        "query_started_s": first("query_started"),
        "first_batch_end_s": round(min(batch_ends) - t0, 2) if batch_ends else None,
        "first_output_s": round(t_first - t0, 2),
        "all_output_s": round(t_all - t0, 2),
        "records": n,
        "load_avg_1m": round(load, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--records", type=int, default=500)
    ap.add_argument("--cores-max", default="2", help="spark.cores.max of the job")
    args = ap.parse_args()
    conf = {"spark.cores.max": args.cores_max}
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as wd:
        work = Path(wd)
        spark = LocalSparkCluster(work / "spark", workers=2)
        kafka = LocalKafkaCluster(work / "kafka", brokers=1)
        try:
            spark.start()
            kafka.start()
            for i in range(args.runs):
                r = one_run(spark, kafka, work, i, args.records, conf)
                print(f"run {i}: " + ", ".join(f"{k}={v}" for k, v in r.items()), flush=True)
                runs.append(r)
        finally:
            kafka.stop()
            spark.stop()
    firsts = [r["first_output_s"] for r in runs]
    result = {
        "benchmark": "submit to first output, enrich_at_least_once.py",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "conf": conf,
        "runs": runs,
        "first_output_s": {"best": min(firsts), "median": statistics.median(firsts)},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"first output after submit: best {min(firsts):.1f} s, median {statistics.median(firsts):.1f} s "
          f"-> {RESULTS}")


if __name__ == "__main__":
    main()
