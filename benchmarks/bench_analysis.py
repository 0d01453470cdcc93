"""Analysis speed: guarantee validation + metrics on 10 million ids (stateless and windowed).

Run: ``python benchmarks/bench_analysis.py [--ids 10000000]``. Prints ids/s per stage and writes
``benchmarks/results/analysis.json``. Goal (from issue 4): >= 2 million ids/s end to end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from synthetic import Outage, stateless_trace, windowed_trace

from pytest_streamchaos.analysis.metrics import compute_metrics
from pytest_streamchaos.analysis.oracle import IdentityOracle, TumblingWindowOracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.validate import validate

RESULTS = Path(__file__).parent / "results" / "analysis.json"


def timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t


def cpu_timed(fn, *a, **kw):
    """(result, wall s, CPU s of this process): CPU time is robust to other jobs sharing the cores."""
    c, t = time.process_time(), time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t, time.process_time() - c


def bench(name: str, trace, oracle) -> dict:
    n = int(trace.outputs.ids.size)
    report, t_val = timed(validate, trace, oracle)
    metrics, t_met = timed(compute_metrics, trace, report, oracle)
    # the machine is shared: report the best of 3 end-to-end runs (and all of them)
    reps = [cpu_timed(ChaosRun.from_trace, trace, oracle, "exactly-once") for _ in range(3)]
    run, t_all, c_all = min(reps, key=lambda x: x[1])
    c_best = min(x[2] for x in reps)
    row = {
        "case": name,
        "ids": n,
        "outputs": len(trace.outputs),
        "validate_s": round(t_val, 3),
        "metrics_s": round(t_met, 3),
        "from_trace_s": round(t_all, 3),
        "from_trace_all_s": [round(x[1], 3) for x in reps],
        "ids_per_s_end_to_end": round(n / t_all),
        "from_trace_cpu_s": round(c_best, 3),
        "ids_per_cpu_s_end_to_end": round(n / c_best),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "ids_per_s_validate": round(n / t_val),
        "check": {"lost": run.lost, "duplicates": run.duplicates, "downtime": round(run.downtime, 3),
                  "recovery_time": str(run.recovery_time)},
    }
    print(
        f"{name:<10} {n:>11,} ids  validate {t_val:6.2f}s  metrics {t_met:6.2f}s  from_trace {t_all:6.2f}s"
        f"  -> {n / t_all / 1e6:5.2f} M ids/s end to end (wall), {n / c_best / 1e6:5.2f} M ids/CPU-s;"
        f" validation alone {n / t_val / 1e6:5.2f} M ids/s; load avg {os.getloadavg()[0]:.1f}"
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ids", type=int, default=10_000_000)
    args = ap.parse_args()
    rate = 100_000.0
    duration = args.ids / rate
    rows = []
    drop = np.arange(1000, 2000)
    tr, t_gen = timed(
        stateless_trace, rate=rate, duration=duration, faults=[duration / 2],
        outages=[Outage(duration / 2 + 1, 5, catch_up_rate=3 * rate)], drop=drop, duplicate=np.arange(5000, 6000),
    )
    print(f"(stateless trace generated in {t_gen:.1f}s)")
    rows.append(bench("stateless", tr, IdentityOracle()))
    del tr
    tw, t_gen = timed(windowed_trace, rate=rate, duration=duration, keys=100, size=5.0, faults=[duration / 2])
    print(f"(windowed trace generated in {t_gen:.1f}s)")
    rows.append(bench("windowed", tw, TumblingWindowOracle(5.0)))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = {
        "benchmark": "analysis",
        "machine": {"python": platform.python_version(), "numpy": np.__version__, "cpu": platform.processor()},
        "goal_ids_per_s": 2_000_000,
        "results": rows,
    }
    RESULTS.write_text(json.dumps(out, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
