"""HDFS as checkpoint storage: how fast it comes up, what it costs a job without faults (seed 003's
question), and how long a job takes to recover from a NameNode kill.

    python benchmarks/bench_hdfs.py [--rounds 3] [--duration 40] [--rate 200]

- up: a NameNode and two DataNodes (Hadoop 3.5.0 JVMs, jars cached) from nothing to out of safe mode
  with both DataNodes live; then the cluster's teardown;
- overhead: the stateless example job (``pipelines/enrich_at_least_once.py``) run twice on the same
  stack without faults, its checkpoint on the local disk and on HDFS: p50 / p99 latency, the median
  micro-batch duration and the reliable throughput, and their ratios (HDFS / local);
- recovery: the same job on HDFS, supervised (``supervise=True``), the NameNode killed 8 s into the
  load and restarted 4 s later: lost records, downtime, recovery time and its phases.

Prints the numbers and writes ``benchmarks/results/hdfs.json``. Goal (not asserted): up within 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from pytest_streamchaos import JobSetup
from pytest_streamchaos.faults.registry import parse
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.stack.hdfs.cluster import LocalHdfsCluster
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "hdfs.json"
JOB = "pipelines/enrich_at_least_once.py"


def bench_up(workdir: Path, rounds: int) -> dict:
    up, down = [], []
    for i in range(rounds):
        cluster = LocalHdfsCluster(workdir / f"up-{i}")
        t = time.perf_counter()
        try:
            cluster.start()
            up.append(time.perf_counter() - t)
        finally:
            t = time.perf_counter()
            cluster.stop()
            down.append(time.perf_counter() - t)
    return {"up_s": {"min": round(min(up), 2), "median": round(statistics.median(up), 2), "max": round(max(up), 2)},
            "teardown_s": round(statistics.median(down), 2), "rounds": rounds, "goal_s": 15.0}


def _summary(run) -> dict:
    return {"p50_s": round(run.latency.p50, 3), "p99_s": round(run.latency.p99, 3),
            "batch_p50_s": run.metrics.batches.summary().get("p50"),
            "reliable_throughput": round(run.reliable_throughput, 1), "lost": run.lost,
            "checkpoint": run.facts.job.checkpoint if run.facts.job else None}


def bench_runs(workdir: Path, rate: float, duration: float) -> dict:
    spark, kafka = LocalSparkCluster(workdir / "spark", workers=2), LocalKafkaCluster(workdir / "kafka")
    hdfs = LocalHdfsCluster(workdir / "hdfs")
    out: dict = {}
    try:
        for stack in (spark, kafka, hdfs):
            stack.start()

        def chaos(name: str, faults=()) -> ChaosFixture:
            return ChaosFixture(cluster=spark, kafka=kafka, workdir=workdir / name, rootdir=ROOT,
                                nodeid=f"bench_hdfs[{name}]", faults=list(faults), hdfs=lambda: hdfs)

        for where in ("local", "hdfs"):
            run = chaos(where).run(JOB, rate=rate, duration=duration, setup=JobSetup(checkpoint=where))
            out[where] = _summary(run)
            print(f"{where:5s}: {out[where]}", flush=True)
            spark.heal()
        out["ratio_hdfs_over_local"] = {k: round(out["hdfs"][k] / out["local"][k], 3)
                                        for k in ("p50_s", "p99_s", "batch_p50_s", "reliable_throughput")
                                        if out["local"].get(k) and out["hdfs"].get(k)}
        kill = parse("kill_namenode", (), {"after": 8, "restart_after": 4})
        run = chaos("namenode-kill", [kill]).run(JOB, rate=rate, duration=duration,
                                                 setup=JobSetup(checkpoint="hdfs", supervise=True))
        (f,) = run.faults
        out["namenode_kill"] = {"lost": run.lost, "downtime_s": round(run.downtime, 2),
                                "recovery_s": None if not f.recovered else round(float(f.recovery_time), 2),
                                "driver_restarts": run.facts.job.restarts_by_supervisor, "phases": f.phases}
        print(f"NameNode kill: {out['namenode_kill']}", flush=True)
    finally:
        for stack in (hdfs, kafka, spark):
            stack.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--rate", type=float, default=200.0)
    args = ap.parse_args()
    out = {"load_avg": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-hdfs-") as wd:
        out["up"] = bench_up(Path(wd), args.rounds)
        print(f"HDFS up (NameNode + 2 DataNodes, out of safe mode): {out['up']}", flush=True)
        out.update(bench_runs(Path(wd), args.rate, args.duration))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
