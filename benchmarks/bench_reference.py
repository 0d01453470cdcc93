"""Benchmark of the reference run (issue 38): its false-alarm rate on event-time stateful jobs, what it
costs and whether it is reused.

For each stateful job of ``tests/chaos/jobs/stateful`` (a windowed count, a deduplication within the
watermark, a stream-stream join, sessions), one pytest session runs ``--pairs`` fault-free runs of the
job compared with its reference (``chaos.run(..., reference=True)``; the variants of one parametrized
test share their input, so the reference pair is made once and reused by every variant). A fault-free
run that diverges from its reference is a false alarm: the goal is 0 over >= 20 pairs. Run it under the
heavy lock::

    flock /tmp/sc/heavy.lock python benchmarks/bench_reference.py [--pairs 5] [--jobs windowed_count,join]

Prints per job: the compared runs, how many diverged (want 0), how many could not be compared, the
reference's cost (seconds for its two runs) and reuse, the rows compared and the seconds per compared
run; writes ``benchmarks/results/reference.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHAOS = ROOT / "tests" / "chaos"
RESULTS = Path(__file__).parent / "results" / "reference.json"

TEST = '''
import json

import pytest
from test_reference_stateful import CASES, hardcoded_paths, run_case  # noqa: F401  (an autouse fixture)


@pytest.mark.chaos(backend="local")
@pytest.mark.parametrize("k", range({pairs}))
def test_clean(chaos, k):
    run = run_case(chaos, CASES[{case!r}])
    print("RESULT", json.dumps({{"k": k, "diverged": run.diverged, "expected": run.reference.outputs[0].expected,
                                "lines": run.reference.lines()[:4]}}))
'''


def session(project: Path, case: str, pairs: int) -> dict[str, Any]:
    (project / "test_bench_reference.py").write_text(TEST.format(pairs=pairs, case=case))
    report = project / f"report-{case}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(CHAOS), os.environ.get("PYTHONPATH", "")])}
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "pytest", "test_bench_reference.py", "-p", "no:cacheprovider",
                          "-s", "-q", f"--chaos-report={report}"], cwd=project, env=env, capture_output=True,
                         text=True, timeout=7200)
    runs = json.loads(report.read_text()) if report.exists() else []
    results = [json.loads(m) for m in re.findall(r"^RESULT (\{.*\})$", out.stdout, re.M)]
    reference = [c for r in runs for c in [r["checks"].get("reference")] if c]
    notes = [line for c in reference for line in c["lines"] if line.startswith("note: the reference")]
    made = [float(m) for n in notes for m in re.findall(r"made in (\d+)s", n)]
    return {"rc": out.returncode, "session_seconds": round(time.time() - t0, 1), "compared": len(results),
            "diverged": sum(1 for r in results if r["diverged"] not in (0, None)),
            "not_comparable": sum(1 for r in results if r["diverged"] is None),
            "rows_in_reference": [r["expected"] for r in results][:1],
            "reference_made_s": made, "reference_reused": sum("reused" in n for n in notes),
            # the session's time over its runs: two reference runs and the compared ones (with the stack's start)
            "seconds_per_run": round((time.time() - t0) / max(1, len(results) + 2), 1),
            "results": results, "tail": out.stdout[-2000:] if out.returncode else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--jobs", default="windowed_count,dedup,join,sessions")
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args()
    project = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    results: dict[str, Any] = {"pairs_per_job": a.pairs, "jobs": {}}
    try:
        for case in a.jobs.split(","):
            results["jobs"][case] = session(project, case, a.pairs)
            print(case, json.dumps({k: v for k, v in results["jobs"][case].items() if k != "results"}, indent=1))
        jobs = results["jobs"].values()
        results["total"] = {"compared": sum(j["compared"] for j in jobs), "diverged": sum(j["diverged"] for j in jobs),
                            "not_comparable": sum(j["not_comparable"] for j in jobs)}
        print("total", results["total"])
    finally:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(results, indent=1, default=str))
        shutil.rmtree(project, ignore_errors=True)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
