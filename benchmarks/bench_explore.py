"""Benchmark of ``@explore`` on the planted-bug jobs (issues 33, 37): runs and seconds to the first
violation, against the same budget of uniformly random ``after=`` driver-kill times and against the
search's own space in a random order; seconds per schedule; silence on a correct job; replays.

Run under the heavy lock (it brings up the stack once per pytest session it starts)::

    flock /tmp/sc/heavy.lock python benchmarks/bench_explore.py [--budget 10] [--correct 22] [--replays 5] \
        [--trigger 5]

``--trigger S`` (default 5) runs the two planted jobs with ``.trigger(processingTime="S seconds")``
added before their ``.start()`` -- the way most production jobs are written, and a violation window
(the batch's output visible, its commit not written) that is a fraction of each trigger interval;
``--trigger 0`` runs them as written, batch after batch, where that window is most of the cycle.

Parts (``--parts``, default all):

- ``explore``: ``@explore(faults=["kill_driver", "kill_executor"], budget=N)`` on the non-idempotent
  ``foreachBatch`` lake writer and on the Kafka-sink ledger, both declared exactly-once and asserting
  no duplicate: the exploring run that first falsified, the runs in all (confirm, shrink), the minimal
  schedule, the wall time per schedule;
- ``random``: the same jobs and assertion, one run per kill of the driver at a time drawn uniformly
  from the load phase (``@kill_driver(after=U(0, duration))``, seeded), N runs: the first that
  violated, and how many did (the chance a random kill time finds the bug);
- ``order``: the ``foreachBatch`` lake whose replay guard is written before its data (it loses a batch
  only when its driver dies while the batch's tasks write), asserting nothing is lost, under
  ``@explore(..., order="fixed")`` and ``order="random"`` (the same space, the same budget, seeded by
  ``--seed``): the exploring run and the seconds to the first violation, the minimal schedule;
- ``correct``: ``@explore`` with budget ``--correct`` on the ledger (as written) held to at-least-once,
  asserting nothing is lost: falsified, flaky and inconclusive (want 0 each) over the schedules run;
- ``replay``: the explore part's replay lines, each run ``--replays`` times: how many reproduced.

Prints each part's numbers as JSON and writes ``benchmarks/results/explore.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "chaos"  # planted.py: the jobs' records, paths and runs
RESULTS = Path(__file__).parent / "results" / "explore.json"
DURATION = 20  # the load phase of each run (planted.py's default)

COMMON = '''
import pytest
from planted import guarded_lake, hardcoded_paths, lake, ledger  # noqa: F401  (an autouse fixture)
from pytest_streamchaos import explore, kill_driver

LAKE_JOB = {lake_job!r}
LEDGER_JOB = {ledger_job!r}
GUARDED_JOB = {guarded_job!r}
'''

EXPLORED = '''

@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@explore(faults=["kill_driver", "kill_executor"], budget={budget}, order="{order}")
def test_{job}_{order}(chaos):
    run = {fn}(chaos, job={job_upper}_JOB)
    assert run.{metric} == 0, f"{{run.{metric}}} records {what}"
'''
#: the planted jobs: the helper of planted.py that runs each, the count its bug makes non-zero
PLANTED_JOBS = {"lake": ("lake", "duplicates", "written twice"), "ledger": ("ledger", "duplicates", "written twice"),
                "guarded": ("guarded_lake", "lost", "lost")}

CORRECT = '''

@pytest.mark.chaos(backend="local")
@explore(faults=["kill_driver", "kill_executor"], budget={correct})
def test_ledger_at_least_once(chaos):
    assert ledger(chaos, "at-least-once").lost == 0
'''


def explored_tests(budget: int, correct: int) -> str:
    """Every planted job under the fixed and the random order, and the correct job."""
    out = [EXPLORED.format(budget=budget, order=order, job=job, job_upper=job.upper(), fn=fn, metric=metric,
                           what=what)
           for job, (fn, metric, what) in PLANTED_JOBS.items() for order in ("fixed", "random")]
    return "".join(out) + CORRECT.format(correct=correct)


RANDOM = '''

@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@pytest.mark.parametrize("k", [pytest.param(k, marks=kill_driver(after=t, restart_after=0)) for k, t in
                               enumerate({times!r})])
def test_{job}_random_kill(chaos, k):
    assert {job}(chaos, job={job_upper}_JOB).duplicates == 0
'''


def session(project: Path, tests: list[str], *args: str, timeout: float = 3600) -> dict[str, Any]:
    """One pytest session in ``project`` (this checkout's plugin first on the path): its exit code,
    output, wall time and JSON report."""
    report = project / f"report-{time.time_ns()}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PLANTED), os.environ.get("PYTHONPATH", "")])}
    t0 = time.time()
    # its temporary directories in the project, removed with it: pytest's own (/tmp/pytest-of-<user>) keeps only
    # its three newest sessions, and a benchmark's sessions would rotate out those of other work on the machine
    out = subprocess.run([sys.executable, "-m", "pytest", *tests, "-p", "no:cacheprovider", "-q",
                          f"--basetemp={project / 'basetemp'}", f"--chaos-report={report}", *args], cwd=project,
                         env=env, capture_output=True, text=True, timeout=timeout)
    runs = json.loads(report.read_text()) if report.exists() else []
    return {"rc": out.returncode, "stdout": out.stdout, "seconds": time.time() - t0, "report": runs}


def explored_numbers(entry: dict[str, Any]) -> dict[str, Any]:
    ex = entry["explore"]
    runs = ex["runs"]
    per = [r["seconds"] for r in runs if r["schedule"]]
    first = next((i for i, r in enumerate(runs) if r["falsified"] and r["purpose"] != "control"), None)
    to_first = None if first is None else round(sum(r["seconds"] for r in runs[:first + 1]), 1)
    purposes = {r["purpose"] for r in runs}
    return {"verdict": ex["verdict"], "stop": ex["stop"], "first_violation_at": ex["first_violation_at"],
            "seconds_to_first_violation": to_first, "runs": len(runs),
            "by_purpose": {p: sum(r["purpose"] == p for r in runs) for p in purposes},
            "found": ex["found"] and ex["found"]["words"], "message": ex["found"] and ex["found"]["message"],
            "token": ex["token"], "replay": ex["replay"], "flaky": len(ex["flaky"]),
            "seconds_per_schedule": per, "median_seconds_per_schedule": statistics.median(per) if per else None,
            "control_seconds": runs[0]["seconds"] if runs and runs[0]["purpose"] == "control" else None,
            "coverage": ex["coverage"], "verdicts": ex["verdicts"],
            "falsified": sum(r["falsified"] for r in runs if r["purpose"] != "control"),
            # each run as the search saw it: a missed step says where it landed (None: it never fired)
            "each": [{"purpose": r["purpose"], "seconds": r["seconds"], "hit": r["hit"], "error": r["error"],
                      "steps": [f"{x['kind']} {x['phase']} +{x['batch']}" for x in r["schedule"]],
                      "landed": [x["phase"] if x["hit"] else f"missed ({x['phase']})" for x in r["landed"]]}
                     for r in runs]}


def part_explore(project: Path, tests: list[str], log: Path | None = None, *args: str) -> dict[str, Any]:
    out = session(project, [f"test_bench.py::{t}" for t in tests], *args)
    if log is not None:  # the whole output: the failures' text with their replay lines
        log.write_text(out["stdout"])
    found = {e["test"].split("::")[-1]: explored_numbers(e) for e in out["report"] if "explore" in e}
    return {"session_seconds": out["seconds"], "rc": out["rc"], "tests": found, "tail": out["stdout"][-3000:]}


def part_random(project: Path, job: str, budget: int) -> dict[str, Any]:
    out = session(project, [f"test_bench.py::test_{job}_random_kill"])
    runs = [e for e in out["report"] if e["test"].split("::")[-1].startswith(f"test_{job}_random_kill")]
    first = next((i + 1 for i, e in enumerate(runs) if e["duplicates"] > 0), None)
    violated = sum(e["duplicates"] > 0 for e in runs)
    return {"runs": len(runs), "first_violation_at": first, "violated": violated, "budget": budget,
            "session_seconds": out["seconds"], "duplicates": [e["duplicates"] for e in runs],
            "after": [e["faults"][0].get("after") for e in runs if e.get("faults")],
            # the expected runs to a first violation when each random kill finds it with the chance seen
            "expected_runs": None if not violated else round(len(runs) / violated, 1)}


def job_variants(project: Path, trigger: float) -> dict[str, str | None]:
    """The planted jobs as the benchmark runs them: as written (None) or, with ``trigger`` > 0, a copy
    of each with ``.trigger(processingTime=...)`` added before its ``.start()``."""
    jobs = (("lake_job", "clicks_to_json_lake.py"), ("ledger_job", "payments_to_ledger.py"),
            ("guarded_job", "clicks_to_guarded_lake.py"))
    if trigger <= 0:
        return {key: None for key, _ in jobs}
    out: dict[str, str | None] = {}
    for key, name in jobs:
        text = (PLANTED / "jobs" / name).read_text()
        assert text.count(".start()") == 1, f"{name}: expected one .start() to put a trigger before"
        path = project / "jobs" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text.replace(".start()", f'.trigger(processingTime="{trigger:g} seconds")\n     .start()'))
        out[key] = str(path)
    return out


def part_replay(project: Path, token: str, test: str, times: int) -> dict[str, Any]:
    got = []
    for _ in range(times):
        out = session(project, [f"test_bench.py::{test}"], f"--chaos-replay={token}")
        got.append(bool(re.search(r"replayed kill_driver .*\(hit\)", out["stdout"])) and out["rc"] == 1)
    return {"reproduced": sum(got), "of": times, "each": got}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=10)
    ap.add_argument("--correct", type=int, default=22)  # >= 20 counted: one run learns what never comes
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--parts", default="explore,order,correct,replay")  # and random: time-based random kills
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--jobs", default=",".join(PLANTED_JOBS), help="the planted jobs the explore and order parts run")
    ap.add_argument("--trigger", type=float, default=5.0,
                    help="the planted jobs' processing-time trigger, seconds (0: as written)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    jobs = [j for j in a.jobs.split(",") if j in PLANTED_JOBS]
    rng = random.Random(a.seed)
    times = {job: [round(rng.uniform(0, DURATION), 2) for _ in range(a.budget)] for job in ("lake", "ledger")}
    a.out.parent.mkdir(parents=True, exist_ok=True)  # the logs are written beside it as each part ends
    project = Path(tempfile.mkdtemp(prefix="bench-explore-"))
    results: dict[str, Any] = {"budget": a.budget, "duration": DURATION, "seed": a.seed, "parts": sorted(parts),
                               "jobs": jobs,
                               "trigger_s": a.trigger}
    try:
        (project / "test_bench.py").write_text(
            COMMON.format(**job_variants(project, a.trigger)) + explored_tests(a.budget, a.correct)
            + "".join(RANDOM.format(job=job, job_upper=job.upper(), times=t) for job, t in times.items()))
        if "explore" in parts:
            results["explore"] = part_explore(project, [f"test_{j}_fixed" for j in jobs],
                                              a.out.with_suffix(".log"))
            print(json.dumps(results["explore"]["tests"], indent=1, default=str))
        if "order" in parts:
            results["order"] = part_explore(project, [f"test_{j}_random" for j in jobs],
                                            a.out.with_name("explore-order.log"), f"--chaos-seed={a.seed}")
            print(json.dumps(results["order"]["tests"], indent=1, default=str))
        if "random" in parts:
            results["random"] = {job: part_random(project, job, a.budget) for job in ("lake", "ledger")}
            print(json.dumps(results["random"], indent=1))
        if "correct" in parts:
            results["correct"] = part_explore(project, ["test_ledger_at_least_once"])
            print(json.dumps(results["correct"]["tests"], indent=1, default=str))
        if "replay" in parts and "explore" in parts:
            results["replay"] = {t: part_replay(project, n["token"], t, a.replays)
                                 for t, n in results["explore"]["tests"].items() if n["token"]}
            print(json.dumps(results["replay"], indent=1))
    finally:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(results, indent=1, default=str))
        shutil.rmtree(project, ignore_errors=True)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
