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
run; writes ``benchmarks/results/reference.json``. The figures come from each session's ``--chaos-report``
(every run's ``diverged`` and its reference check); ``--from-reports DIR`` summarises kept
``report-<job>.json`` files again without running.
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
import pytest
from test_reference_stateful import CASES, hardcoded_paths, run_case  # noqa: F401  (an autouse fixture)


@pytest.mark.chaos(backend="local")
@pytest.mark.parametrize("k", range({pairs}))
def test_clean(chaos, k):
    run_case(chaos, CASES[{case!r}])
'''


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one job's session from its ``--chaos-report`` runs: each run's ``diverged`` (0: as
    the reference; None: not comparable) and its reference check's lines (the rows compared, how the
    reference was made or that it was reused)."""
    reference = [r["checks"].get("reference") or {"lines": []} for r in runs]
    notes = [line for c in reference for line in c["lines"] if line.startswith("note: the reference")]
    rows = [int(m) for c in reference for line in c["lines"][:1] for m in re.findall(r"(\d+) in the reference", line)]
    return {"compared": len(runs),
            "diverged": sum(1 for r in runs if r["diverged"] not in (0, None)),
            "not_comparable": sum(1 for r in runs if r["diverged"] is None),
            "rows_in_reference": sorted(set(rows)), "sent": [r["sent"] for r in runs],
            "reference_made_s": [float(m) for n in notes for m in re.findall(r"made in (\d+)s", n)],
            "reference_reused": sum("reused" in n for n in notes),
            "results": [{"test": r["test"], "diverged": r["diverged"], "lines": c["lines"][:4]}
                        for r, c in zip(runs, reference, strict=True)]}


def session(project: Path, case: str, pairs: int) -> dict[str, Any]:
    (project / "test_bench_reference.py").write_text(TEST.format(pairs=pairs, case=case))
    report = project / f"report-{case}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(CHAOS), os.environ.get("PYTHONPATH", "")])}
    t0 = time.time()
    out = subprocess.run([sys.executable, "-m", "pytest", "test_bench_reference.py", "-p", "no:cacheprovider",
                          "-q", f"--chaos-report={report}"], cwd=project, env=env, capture_output=True,
                         text=True, timeout=7200)
    runs = json.loads(report.read_text()) if report.exists() else []
    seconds = time.time() - t0
    # the session's time over its runs: two reference runs and the compared ones (with the stack's start)
    return {"rc": out.returncode, "session_seconds": round(seconds, 1), **summary(runs),
            "seconds_per_run": round(seconds / max(1, len(runs) + 2), 1),
            "tail": out.stdout[-2000:] if out.returncode else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--jobs", default="windowed_count,dedup,join,sessions")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--from-reports", type=Path, metavar="DIR",
                    help="summarise the report-<job>.json files a run kept in DIR instead of running")
    a = ap.parse_args()
    if a.from_reports:
        jobs = {case: summary(json.loads((a.from_reports / f"report-{case}.json").read_text()))
                for case in a.jobs.split(",")}
        write(a.out, {"pairs_per_job": a.pairs, "jobs": jobs})
        return
    project = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    results: dict[str, Any] = {"pairs_per_job": a.pairs, "jobs": {}}
    try:
        for case in a.jobs.split(","):
            results["jobs"][case] = session(project, case, a.pairs)
            print(case, json.dumps({k: v for k, v in results["jobs"][case].items() if k != "results"}, indent=1))
    finally:
        write(a.out, results)
        shutil.rmtree(project, ignore_errors=True)


def write(out: Path, results: dict[str, Any]) -> None:
    """Add the totals over the jobs, print them and write ``out``."""
    jobs = results["jobs"].values()
    results["total"] = {k: sum(j[k] for j in jobs) for k in ("compared", "diverged", "not_comparable")}
    print("total", results["total"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
