"""Time to verdict: what a chaos test costs beyond its load, and where that time goes (issue 13).

Scenario (fixed): the stateless example job ``pipelines/enrich_at_least_once.py``, 20 s of load at
100 records/s, one worker kill 5 s into the load (restarted after 3 s). The scenario runs ``--runs``
times in one pytest session after one unmeasured warm-up run, so the stack is warm. Each run's
timeline gives the breakdown:

    submit -> driver up (SparkContext) -> first executor -> query started -> starting offsets fixed
    -> first output -> steady state | load | drain (load end -> drain end) | verdict (drain end -> run returned)

``overhead`` = wall time of ``chaos.run`` minus the load. Run::

    python benchmarks/bench_time_to_verdict.py [--runs 5] [--backend docker]

Prints a table and writes ``benchmarks/results/time_to_verdict.json`` (``time_to_verdict-docker.json``
for the docker backend). Each run also records the peak RSS of the whole stack while it ran (every JVM
pytest started: Kafka nodes, Spark master and workers, driver, executors; and the Toxiproxy server).
The machine's load average is recorded with each run: on 2 shared cores the numbers move with
whatever else runs.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "time_to_verdict.json"

TEST = textwrap.dedent('''
    import json, os, threading, time
    import psutil
    import pytest
    from pytest_streamchaos import kill_worker

    RUNS = int(os.environ["TTV_RUNS"])

    def stack_rss_mb():
        """RSS of every JVM this pytest started (Kafka nodes, Spark daemons, driver, executors) and of
        the Toxiproxy server: all descendants of this process."""
        total = 0
        for p in psutil.Process().children(recursive=True):
            try:
                if p.name() in ("java", "toxiproxy-server"):
                    total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 1e6

    @pytest.mark.chaos
    @kill_worker(after=5, restart_after=3)
    @pytest.mark.parametrize("i", range(RUNS + 1))
    def test_time_to_verdict(chaos, i):
        peak, stop = [0.0], threading.Event()
        def sample():
            while not stop.wait(1.0):
                peak[0] = max(peak[0], stack_rss_mb())
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.time()
        run = chaos.run({script!r}, rate=100, duration=20, guarantee="at-least-once")
        t1 = time.time()
        stop.set()
        sampler.join()
        assert run.lost == 0
        row = {{"i": i, "warm": i > 0, "t0": t0, "t1": t1, "load_average": os.getloadavg()[0],
               "lost": run.lost, "duplicates": run.duplicates, "downtime": run.downtime,
               "stack_rss_peak_mb": round(peak[0]), "events": [(e.t, e.kind, e.target) for e in run.timeline]}}
        with open(os.environ["TTV_OUT"], "a") as f:
            f.write(json.dumps(row) + "\\n")
''')

#: breakdown steps: (name, event that ends it); each step starts where the previous ended
STEPS = [("submit_to_driver_up", "driver_started"), ("driver_up_to_executor", "executor_added"),
         ("executor_to_query_started", "query_started"), ("query_to_offsets_fixed", "starting_offsets_fixed"),
         ("offsets_to_first_output", "first_output"), ("first_output_to_steady", "steady_state")]


def first(events: list, kind: str, after: float = 0.0) -> float | None:
    return next((t for t, k, _ in sorted(events) if k == kind and t >= after), None)


def breakdown(row: dict) -> dict:
    """Seconds per step of one run (None when an event is missing)."""
    ev = row["events"]
    t = first(ev, "job_submitted") or row["t0"]
    out = {"before_submit": round(t - row["t0"], 3)}
    for name, kind in STEPS:
        nxt = first(ev, kind, t)
        out[name] = None if nxt is None else round(nxt - t, 3)
        t = nxt if nxt is not None else t
    steady, load_end, drain_end = (first(ev, k) for k in ("steady_state", "load_end", "drain_end"))
    out["load"] = round(load_end - steady, 3)
    out["drain"] = round(drain_end - load_end, 3)
    out["verdict"] = round(row["t1"] - drain_end, 3)
    out["wall"] = round(row["t1"] - row["t0"], 3)
    out["overhead"] = round(out["wall"] - out["load"], 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--backend", default="local", choices=("local", "docker"))
    args = ap.parse_args()
    results = RESULTS if args.backend == "local" else RESULTS.with_name(f"time_to_verdict-{args.backend}.json")
    with tempfile.TemporaryDirectory(prefix="bench-ttv-") as tmp:
        test = Path(tmp) / "test_ttv.py"
        test.write_text(TEST.format(script=str(ROOT / "pipelines" / "enrich_at_least_once.py")))
        out = Path(tmp) / "rows.jsonl"
        env = {**os.environ, "TTV_RUNS": str(args.runs), "TTV_OUT": str(out)}
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider",
                            "--rootdir", tmp, f"--chaos-backend={args.backend}"], cwd=tmp, env=env)
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    warm = [r for r in rows if r["warm"]]
    if not warm:
        print("no warm run completed", file=sys.stderr)
        return 1
    per_run = [breakdown(r) | {"load_average": r["load_average"], "downtime": r["downtime"],
                               "stack_rss_peak_mb": r["stack_rss_peak_mb"]} for r in warm]
    keys = [k for k in per_run[0] if k not in ("load_average",)]
    median = {k: round(statistics.median(r[k] for r in per_run if r[k] is not None), 3) for k in keys
              if any(r[k] is not None for r in per_run)}
    print(f"{'step':28s} " + " ".join(f"run{i + 1:>5d}" for i in range(len(per_run))) + "   median")
    for k in keys:
        vals = " ".join(f"{r[k]:8.2f}" if r[k] is not None else "       -" for r in per_run)
        print(f"{k:28s} {vals}   {median.get(k, float('nan')):6.2f}")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps({"scenario": "enrich_at_least_once, rate 100, 20 s load, kill_worker(after=5, "
                                   "restart_after=3)", "backend": args.backend, "runs": per_run, "median": median,
                                   "pytest_exit": p.returncode}, indent=1))
    print(f"wrote {results}")
    return 0 if p.returncode == 0 else p.returncode


if __name__ == "__main__":
    sys.exit(main())
