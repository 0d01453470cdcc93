"""Highest steady rate of a stateless job (Kafka -> select -> Kafka) with nothing lost and the backlog bounded.

Runs ``pipelines/enrich_at_least_once.py`` (Spark's Kafka connector in and out) on the default stack
(master + 2 workers, 3 Kafka nodes, RF 3) through the real harness (``chaos.run``, no faults) at
increasing rates. A rate is *sustained* when the job keeps up (reliable throughput >= 95 % of the
rate), nothing is lost, the backlog at the end of the load is under 5 s of input, and the p99 latency
of the load phase is below ``--p99`` seconds (default 5). Prints one line per rate and writes
``benchmarks/results/max_rate.json``. Goal (not asserted): 20 000 records/s for 60 s.

Run: ``python benchmarks/bench_max_rate.py [--rates 5000,10000,20000,30000] [--duration 60] [--jit full]``
(``--jit``: the job JVMs' JIT mode, as ``--chaos-jit``; ``full`` writes ``max_rate-full.json``).
The machine has 2 cores: the job, the stack and the generator/collector share them.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from pytest_streamchaos import Load, Timing
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.runner import RunError
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "max_rate.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="5000,10000,20000,30000")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--p99", type=float, default=5.0)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--jit", default="quick", choices=("quick", "full"))
    args = ap.parse_args()
    results = RESULTS if args.jit == "quick" else RESULTS.with_name(f"max_rate-{args.jit}.json")
    rates = [float(r) for r in args.rates.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-max-rate-") as wd:
        spark = LocalSparkCluster(Path(wd) / "spark", workers=2)
        kafka = LocalKafkaCluster(Path(wd) / "kafka", brokers=3)
        try:
            spark.start()
            kafka.start()
            for rate in rates:
                chaos = ChaosFixture(cluster=spark, kafka=kafka, workdir=Path(wd) / f"r{rate:g}",
                                     rootdir=ROOT, nodeid=f"bench_max_rate[{rate:g}]", jit=args.jit)
                t0 = time.time()
                try:
                    run = chaos.run("pipelines/enrich_at_least_once.py", rate=rate, duration=args.duration,
                                    guarantee="at-least-once", load=Load(partitions=args.partitions),
                            timing=Timing(warmup_timeout=180))
                except RunError as e:  # e.g. the source's data-loss check: input deleted before it was read
                    first = str(e).splitlines()[0]
                    rows.append({"rate": rate, "sustained": False, "error": first, "wall_s": time.time() - t0})
                    print(f"rate {rate:>6.0f}/s  NOT sustained  the run failed: {first}", flush=True)
                    break
                backlog_end = float(run.throughput.backlog[-1]) if len(run.throughput.backlog) else 0.0
                ok = (run.lost == 0 and run.reliable_throughput >= 0.95 * rate and run.latency.p99 < args.p99
                      and backlog_end < 5 * rate)
                row = {"rate": rate, "sustained": ok, "p50_s": run.latency.p50, "p99_s": run.latency.p99,
                       "reliable_throughput": run.reliable_throughput, "lost": run.lost, "backlog_end": backlog_end,
                       "batch_p50_s": run.metrics.batches.summary().get("p50"), "wall_s": time.time() - t0,
                       "load_avg": os.getloadavg()[0], "warnings": run.warnings}
                rows.append(row)
                print(f"rate {rate:>6.0f}/s  {'sustained' if ok else 'NOT sustained':<13}  p50 {row['p50_s']:.2f}s  "
                      f"p99 {row['p99_s']:.2f}s  reliable {row['reliable_throughput']:.0f}/s  lost {run.lost}  "
                      f"batch p50 {row['batch_p50_s']}s", flush=True)
                spark.heal()
                if not ok:
                    break
        finally:
            kafka.stop()
            spark.stop()
    best = max((r["rate"] for r in rows if r["sustained"]), default=None)
    print(f"highest sustained rate with p99 < {args.p99:g}s: {best}")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({"p99_bound_s": args.p99, "duration_s": args.duration, "jit": args.jit,
                                   "runs": rows, "highest_sustained_rate": best}, indent=1, default=str))
    print(f"wrote {results}")


if __name__ == "__main__":
    main()
