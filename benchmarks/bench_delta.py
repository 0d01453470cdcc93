"""Delta Lake output (issue 38, point 1): how fast the run reads a Delta table, and what a run with Delta
output costs against the same job writing to Kafka.

``--read`` (no JVM): tables written by delta-rs (``write_deltalake``), ``--versions`` appends of
``--rows`` rows each, checkpointed every 10 versions as Delta's Spark writer does
(``delta.checkpointInterval``); the collector (``observe/delta_sink.py``) reads them all from scratch
(rows/s, versions/s), then one more version at a time as during a run (the cost of one poll that finds a
new version, and of one that finds none), and the reader's API (``version_changes``, ``final_rows``) on
the same table.

``--runs N`` (the real stack): one pytest session, one unmeasured warm-up run, then ``N`` runs of each of two
jobs alternating, identical but for the sink -- ``writeStream.format("kafka")`` to a topic, or
``writeStream.format("delta")`` to a table (Delta's jars given by the launcher) -- each 20 s of load at 100
records/s without faults. Per run: the wall time of ``chaos.run``, its overhead (wall minus load), the
query's start to its first output, the baseline latency (p50 of the steady state before any fault), and
for Delta the table versions the run read. Run::

    python benchmarks/bench_delta.py --read [--versions 200 --rows 500]
    flock /tmp/sc/heavy.lock python benchmarks/bench_delta.py --runs 3

Prints a table and writes ``benchmarks/results/delta_read.json`` / ``delta_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"


# -- reading ---------------------------------------------------------------------------------------------------

def _append(table: Path, v: int, rows: int) -> None:
    """Version ``v``: ``rows`` new rows; a checkpoint after every 10th, as Delta's Spark writer makes."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    ids = list(range(v * rows, (v + 1) * rows))
    write_deltalake(str(table), pa.table({"txn_id": ids, "customer": [f"c{i % 97}" for i in ids],
                                          "amount": [i * 0.5 for i in ids]}), mode="append")
    if v % 10 == 9:
        DeltaTable(str(table)).create_checkpoint()


def bench_read(versions: int, rows: int) -> dict:
    from pytest_streamchaos.observe import delta
    from pytest_streamchaos.observe.delta_sink import DeltaSinkCollector

    with tempfile.TemporaryDirectory(prefix="bench-delta-") as tmp:
        table = Path(tmp) / "t"
        for v in range(versions):
            _append(table, v, rows)
        c = DeltaSinkCollector(table, "txn_id")
        t0 = time.perf_counter()
        c.poll()
        full = time.perf_counter() - t0
        assert c.count == versions * rows and c.versions_read == versions
        polls = []
        for v in range(versions, versions + 10):  # one new version per poll, as during a run
            _append(table, v, rows)
            t0 = time.perf_counter()
            c.poll()
            polls.append(time.perf_counter() - t0)
        idle = []
        for _ in range(10):  # nothing new: what every other poll costs
            t0 = time.perf_counter()
            c.poll()
            idle.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        changes = delta.version_changes(table, removed=False)
        api_changes = time.perf_counter() - t0
        t0 = time.perf_counter()
        final = delta.final_rows(table)
        api_final = time.perf_counter() - t0
    total = versions * rows
    return {"versions": versions, "rows_per_version": rows, "rows": total,
            "collector_full_read_s": round(full, 3), "collector_rows_per_s": round(total / full),
            "collector_versions_per_s": round(versions / full, 1),
            "poll_with_one_new_version_ms": round(1000 * statistics.median(polls), 1),
            "poll_with_nothing_new_ms": round(1000 * statistics.median(idle), 1),
            "version_changes_s": round(api_changes, 3), "version_changes_versions": len(changes),
            "final_rows_s": round(api_final, 3), "final_rows": final.num_rows}


# -- a run with Delta output against Kafka output ---------------------------------------------------------------

JOB = textwrap.dedent('''
    """Orders from Kafka, stamped and written on: {what}. Public style, nothing of the plugin."""
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import col, current_timestamp, from_json, struct, to_json

    SCHEMA = "order_id LONG, customer STRING, amount DOUBLE, created_at LONG"
    spark = (SparkSession.builder.appName("orders-{sink}")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())
    orders = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders").load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o")).select("o.*")
              .withColumn("ingested_at", current_timestamp()))
    {write}
''')
WRITES = {
    "kafka": ('to the topic orders-out', '(orders.select(col("order_id").cast("string").alias("key"), '
              'to_json(struct("*")).alias("value")).writeStream.format("kafka")'
              '.option("kafka.bootstrap.servers", "localhost:9092").option("topic", "orders-out")'
              '.option("checkpointLocation", "/tmp/bench-delta-kafka-chk").start().awaitTermination())'),
    "delta": ('to the Delta table /tmp/bench-delta-table', '(orders.writeStream.format("delta")'
              '.option("checkpointLocation", "/tmp/bench-delta-chk").start("/tmp/bench-delta-table")'
              '.awaitTermination())'),
}
OUTPUTS = {"kafka": {"orders-out": "key"}, "delta": {"delta:/tmp/bench-delta-table": "order_id"}}
PATHS = ("/tmp/bench-delta-kafka-chk", "/tmp/bench-delta-chk", "/tmp/bench-delta-table")

TEST = textwrap.dedent('''
    import json, os, shutil, time
    import pytest
    from pytest_streamchaos.observe import delta

    RUNS = int(os.environ["BD_RUNS"])
    OUTPUTS = {outputs!r}
    PATHS = {paths!r}

    def order(rec):
        return {{"order_id": rec.id, "customer": rec.key, "amount": 1.5, "created_at": rec.ts}}

    @pytest.mark.chaos(backend="local")
    @pytest.mark.parametrize("i, sink", [(0, "delta")] + [(i, s) for i in range(1, RUNS + 1)
                                                          for s in ("kafka", "delta")])
    def test_overhead(chaos, i, sink):
        for p in PATHS:
            shutil.rmtree(p, ignore_errors=True)
        t0 = time.time()
        run = chaos.run(os.path.join(os.environ["BD_JOBS"], sink + ".py"), rate=100, duration=20,
                        guarantee="exactly-once" if sink == "delta" else "at-least-once", kafka_port=9092,
                        inputs={{"orders": order}}, outputs=OUTPUTS[sink])
        t1 = time.time()
        assert run.lost == 0
        ev = {{}}
        for e in run.timeline:
            ev.setdefault(e.kind, e.t)
        steady, load_end = ev["steady_state"], ev["load_end"]
        versions = (delta.latest_version("/tmp/bench-delta-table") or 0) + 1 if sink == "delta" else None
        row = {{"i": i, "sink": sink, "warm": i > 0, "wall": t1 - t0, "load": load_end - steady,
               "query_to_first_output": ev["first_output"] - ev["query_started"],
               "baseline_latency": run.latency.baseline, "p50_latency": run.latency.p50,
               "versions": versions, "sent": run.expected, "load_average": os.getloadavg()[0]}}
        row["overhead"] = row["wall"] - row["load"]
        with open(os.environ["BD_OUT"], "a") as f:
            f.write(json.dumps(row) + "\\n")
        for p in PATHS:
            shutil.rmtree(p, ignore_errors=True)
''')


def bench_runs(runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-delta-runs-") as tmp:
        jobs = Path(tmp) / "jobs"
        jobs.mkdir()
        for sink, (what, write) in WRITES.items():
            (jobs / f"{sink}.py").write_text(JOB.format(what=what, sink=sink, write=write))
        test = Path(tmp) / "test_bench_delta.py"
        test.write_text(TEST.format(outputs=OUTPUTS, paths=PATHS))
        out = Path(tmp) / "rows.jsonl"
        env = {**os.environ, "BD_RUNS": str(runs), "BD_OUT": str(out), "BD_JOBS": str(jobs)}
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider",
                            "--rootdir", tmp], cwd=tmp, env=env)
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    warm = [r for r in rows if r["warm"]]
    keys = ("wall", "overhead", "query_to_first_output", "baseline_latency", "p50_latency", "versions", "sent")
    median = {s: {k: round(statistics.median(r[k] for r in warm if r["sink"] == s), 2) for k in keys
                  if any(r[k] is not None for r in warm if r["sink"] == s)} for s in ("kafka", "delta")}
    return {"runs": rows, "median": median, "pytest_exit": p.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--read", action="store_true", help="the reader alone (no JVM)")
    ap.add_argument("--versions", type=int, default=200)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--runs", type=int, default=0, help="chaos runs of each sink (the real stack)")
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.read:
        got = bench_read(args.versions, args.rows)
        for k, v in got.items():
            print(f"{k:34s} {v}")
        (RESULTS / "delta_read.json").write_text(json.dumps(got, indent=1))
        print(f"wrote {RESULTS / 'delta_read.json'}")
    if args.runs:
        got = bench_runs(args.runs)
        print(f"{'median of warm runs':24s} {'kafka':>10s} {'delta':>10s}")
        for k in got["median"]["delta"]:
            print(f"{k:24s} {got['median']['kafka'].get(k, float('nan')):>10} {got['median']['delta'][k]:>10}")
        (RESULTS / "delta_overhead.json").write_text(json.dumps(got, indent=1))
        print(f"wrote {RESULTS / 'delta_overhead.json'}")
        return got["pytest_exit"]
    return 0


if __name__ == "__main__":
    sys.exit(main())
