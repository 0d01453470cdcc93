"""Real-time mode under faults: latency per record and the duplicates a failure replays, by checkpoint interval.

The public-style job ``tests/chaos/jobs/connect/orders_filter_realtime.py`` (Kafka -> filter -> Kafka,
``trigger(realTime=<interval>)``, unchanged but for its interval, its first argument), 100 records/s on 2 input
partitions (2 workers x 1 core: one long-running task each), at-least-once, under

- ``kill_driver`` with ``JobSetup(supervise=True)`` (the driver restarted from the checkpoint), and
- ``kill_executor`` (one executor's JVM; its worker starts another),

for each interval of ``--intervals`` (default 5, 10 and 15 s: Spark refuses an interval under
``spark.sql.streaming.realTimeMode.minBatchDuration``, 5 s), ``--runs`` times each (default 1). One pytest
session per ``--part`` (``driver``, ``executor``, or ``all``), so that one hold of the heavy lock stays under
~15 minutes (``--runs 3`` of one part: about 15). Prints one row per run (latency per record before the fault
and after it settled, duplicates, the oldest duplicate's age against the interval, lost, downtime), then per
interval the min / median / max of duplicates, oldest duplicate and downtime over the runs, and writes
``benchmarks/results/realtime_<part>.json``:

    flock /tmp/sc/heavy.lock python benchmarks/bench_realtime.py --part driver --runs 3
    flock /tmp/sc/heavy.lock python benchmarks/bench_realtime.py --part executor --runs 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _session import run_session  # benchmarks/_session.py (run as python benchmarks/<name>.py)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
JOB = ROOT / "tests" / "chaos" / "jobs" / "connect" / "orders_filter_realtime.py"
FAULTS = {"driver": ("kill_driver(after=12)", True), "executor": ("kill_executor(after=12)", False)}

TEST = '''
import json, os
import pytest
from pytest_streamchaos import (JobSetup, Load, NotMeasured, RecordSpec, Timing, Watch, kill_driver,
                                kill_executor)


def order(rec: RecordSpec) -> dict:
    return {"order_id": str(rec.id), "amount": 100 + rec.id %% 50, "created_at": rec.ts}


def _one(chaos, fault, interval, supervise, repeat):
    run = chaos.run(%(job)r, guarantee="at-least-once",
                    setup=JobSetup(args=[f"{interval} seconds"], kafka_port=9092, supervise=supervise),
                    load=Load(rate=100, duration=40, partitions=2, inputs={"orders": order}),
                    watch=Watch(outputs={"large_orders": "key"}), timing=Timing(warmup_timeout=180))
    print(run.describe())
    lat, bound = run.user_checks["realtime_latency"].numbers, run.user_checks["replay_bound"].numbers
    row = {"fault": fault, "interval_s": interval, "run": repeat, "sent": run.sent, "lost": run.lost,
           "duplicates": run.duplicates, "replay_bound_held": run.user_checks["replay_bound"].ok,
           "oldest_duplicate_s": bound["oldest_s"],
           "downtime_s": None if isinstance(run.downtime, NotMeasured) else round(run.downtime, 1),
           "latency_before": lat["before"], "latency_after": lat["after"], "fault_errors": run.fault_errors,
           "driver_launches": run.driver_launches}
    with open(os.environ["BENCH_OUT"], "a") as f:
        f.write(json.dumps(row) + "\\n")
%(tests)s
'''

ONE = '''

@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@%(mark)s
def test_%(i)d(chaos):
    _one(chaos, %(fault)r, %(interval)r, %(supervise)r, %(run)d)
'''


def cases(part: str, intervals: list[float], runs: int = 1) -> list[tuple[str, str, float, bool, int]]:
    """(fault, its mark, interval, supervise, run) for each run; the runs of one interval interleaved with the
    others', so that a slow stretch of the machine does not fall on one interval's runs alone."""
    parts = list(FAULTS) if part == "all" else [part]
    return [(p, FAULTS[p][0], i, FAULTS[p][1], r) for r in range(1, runs + 1) for p in parts for i in intervals]


def ms(q: dict) -> str:
    return "-" if not q.get("records") else f"{q['p50'] * 1000:.0f}/{q['p99'] * 1000:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["driver", "executor", "all"], default="all")
    ap.add_argument("--intervals", default="5,10,15",  # Spark refuses < 5 s (realTimeMode.minBatchDuration)
                    help="real-time intervals in seconds, comma-separated")
    ap.add_argument("--runs", type=int, default=1, help="runs of each interval (one session)")
    args = ap.parse_args()
    todo = cases(args.part, [float(i) for i in args.intervals.split(",")], args.runs)
    tests = "".join(ONE % {"i": i, "fault": f, "mark": mark, "interval": iv, "supervise": s, "run": r}
                    for i, (f, mark, iv, s, r) in enumerate(todo))
    rows, returncode, took = run_session("bench_realtime", TEST % {"job": str(JOB), "tests": tests}, len(todo),
                                         timeout=max(1800, 200 * len(todo)))
    print(f"{'fault':<9} {'interval':>8} {'sent':>5} {'lost':>4} {'dup':>5} {'oldest dup s':>12} {'bound':>5} "
          f"{'down s':>6} {'p50/p99 ms before':>17} {'after':>9}")
    for r in rows:
        print(f"{r['fault']:<9} {r['interval_s']:>8g} {r['sent']:>5} {r['lost']:>4} {r['duplicates']:>5} "
              f"{str(r['oldest_duplicate_s']):>12} {'held' if r['replay_bound_held'] else 'NOT':>5} "
              f"{str(r['downtime_s']):>6} {ms(r['latency_before']):>17} {ms(r['latency_after']):>9}")
    spread = summary(rows)
    if args.runs > 1:
        print_summary(spread)
    result = {"date": time.strftime("%Y-%m-%d"), "session_s": round(took), "rate": 100, "duration_s": 40,
              "partitions": 2, "runs": args.runs, "job": str(JOB.relative_to(ROOT)), "rows": rows,
              "summary": spread, "pytest_returncode": returncode}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"realtime_{args.part}.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if returncode == 0 and len(rows) == len(todo) else 1


def summary(rows: list[dict]) -> list[dict]:
    """Per fault and interval: the runs, lost in all, the runs whose bound held, and min / median / max of
    duplicates, the oldest duplicate and the downtime (over the runs that measured it)."""
    out = []
    for key in sorted({(r["fault"], r["interval_s"]) for r in rows}):
        mine = [r for r in rows if (r["fault"], r["interval_s"]) == key]
        entry = {"fault": key[0], "interval_s": key[1], "runs": len(mine), "lost": sum(r["lost"] for r in mine),
                 "bound_held": sum(bool(r["replay_bound_held"]) for r in mine)}
        for name in ("duplicates", "oldest_duplicate_s", "downtime_s"):
            values = [r[name] for r in mine if isinstance(r[name], (int, float))]
            entry[name] = [min(values), statistics.median(values), max(values)] if values else None
        out.append(entry)
    return out


def print_summary(spread: list[dict]) -> None:
    def mmm(v):
        return "-" if v is None else "/".join(f"{x:g}" for x in v)
    print(f"\n{'fault':<9} {'interval':>8} {'runs':>4} {'lost':>4} {'held':>4} {'dup min/med/max':>17} "
          f"{'oldest dup s':>16} {'down s':>16}")
    for e in spread:
        print(f"{e['fault']:<9} {e['interval_s']:>8g} {e['runs']:>4} {e['lost']:>4} {e['bound_held']:>4} "
              f"{mmm(e['duplicates']):>17} {mmm(e['oldest_duplicate_s']):>16} {mmm(e['downtime_s']):>16}")


if __name__ == "__main__":
    sys.exit(main())
