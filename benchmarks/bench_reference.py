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

``--sessions`` measures the reference kept in pytest's cache (issue 48) instead: one reference test of a
job (``--jobs``, the first) in two pytest sessions of one project sharing its ``.pytest_cache`` -- the
first makes the reference, the second reuses it -- and prints each session's wall time, the test's own
time (the body: reference and run, without the stack's start), how many runs it started and the
reference's line; writes ``benchmarks/results/reference_sessions.json``::

    flock /tmp/sc/heavy.lock python benchmarks/bench_reference.py --sessions --jobs windowed_count
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
SESSIONS_RESULTS = Path(__file__).parent / "results" / "reference_sessions.json"

TEST = '''
import pytest
from test_reference_stateful import CASES, hardcoded_paths, run_case  # noqa: F401  (an autouse fixture)


@pytest.mark.chaos(backend="local")
@pytest.mark.parametrize("k", range({pairs}))
def test_clean(chaos, k):
    run_case(chaos, CASES[{case!r}])
'''


#: one reference test whose body says what it cost: its time, the runs it started, the reference's line
ONE_TEST = '''
import json
import os
import time

import pytest
from test_reference_stateful import CASES, hardcoded_paths, run_case  # noqa: F401  (an autouse fixture)

from pytest_streamchaos import kill_executor


@pytest.mark.chaos(backend="local")
@kill_executor(after=5)
def test_reference(chaos):
    t0 = time.time()
    run = run_case(chaos, CASES[{case!r}])
    with open(os.environ["BENCH_RESULT"], "w") as f:
        json.dump({{"test_seconds": round(time.time() - t0, 1), "started": chaos.started, "diverged": run.diverged,
                   "sent": run.sent, "note": [n for n in run.reference.notes if n.startswith("the reference")]}}, f)
'''


def cached_sessions(case: str) -> dict[str, Any]:
    """Two sessions of one reference test sharing a project's pytest cache: the first makes the reference,
    the second reuses it. Each session's wall time, the test body's time, its runs, its reference line."""
    project = Path(tempfile.mkdtemp(prefix="bench-reference-sessions-"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(CHAOS), os.environ.get("PYTHONPATH", "")])}
    out: dict[str, Any] = {"job": case, "sessions": []}
    try:
        (project / "test_bench_sessions.py").write_text(ONE_TEST.format(case=case))
        for n in (1, 2):
            result = project / f"result-{n}.json"
            t0 = time.time()
            done = subprocess.run([sys.executable, "-m", "pytest", "test_bench_sessions.py", "-q", "--rootdir",
                                   str(project), "-o", f"cache_dir={project / '.pytest_cache'}"], cwd=project,
                                  env={**env, "BENCH_RESULT": str(result)}, capture_output=True, text=True,
                                  timeout=3600)
            got = json.loads(result.read_text()) if result.exists() else {}
            out["sessions"].append({"session": n, "rc": done.returncode, "wall_seconds": round(time.time() - t0, 1),
                                    **got, "tail": done.stdout[-2000:] if done.returncode else ""})
            print(f"session {n}", json.dumps(out["sessions"][-1], indent=1))
    finally:
        shutil.rmtree(project, ignore_errors=True)
    first, second = out["sessions"]
    out["saved_seconds"] = round(first["wall_seconds"] - second["wall_seconds"], 1)
    return out


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
    ap.add_argument("--sessions", action="store_true",
                    help="first vs second session of one reference test, the reference kept in pytest's cache")
    a = ap.parse_args()
    if a.sessions:
        results = cached_sessions(a.jobs.split(",")[0])
        SESSIONS_RESULTS.parent.mkdir(parents=True, exist_ok=True)
        SESSIONS_RESULTS.write_text(json.dumps(results, indent=1))
        first, second = (r["wall_seconds"] for r in results["sessions"])
        print(f"first session {first}s, second {second}s; wrote {SESSIONS_RESULTS}")
        return
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
