"""Benchmark of ``@explore``'s one history (issue 48): what a schedule costs when the schedules play one after
another on one running job (``history="shared"``, the default) against a job per schedule (``"fresh"``, the
engine before), on the planted-bug jobs of ``benchmarks/bench_explore.py`` (``tests/chaos/planted.py``), the
same jobs, budget and trigger for both engines.

Per schedule: its wall time, its faults' own recovery (from the first injection until the last fault was
back in band and the system's own reactions to it were over: ``exploration/histories.schedule_cost``), and
the rest, the harness's share. Goal: median harness share <= 10 s with the shared engine.

Parts, one pytest session each (each under 25 minutes, so that the heavy lock is shared between them; run
each under it)::

    flock /tmp/sc/heavy.lock python benchmarks/bench_explore_history.py --part cost --job ledger --engine shared
    flock /tmp/sc/heavy.lock python benchmarks/bench_explore_history.py --part cost --job ledger --engine fresh
    flock /tmp/sc/heavy.lock python benchmarks/bench_explore_history.py --part find --job lake --engine shared
    python benchmarks/bench_explore_history.py --table        # every part's numbers side by side

- ``cost``: the planted job held to what it delivers (at-least-once, asserting nothing is lost), so that the
  search runs its whole ``--budget`` (10): the cost of each schedule.
- ``find``: the planted job declared exactly-once (the lake, the ledger: no duplicate) or asserting nothing is
  lost (the guarded lake): the exploring run that first falsified, the runs in all, the minimal schedule.
- ``correct``: the ledger held to at-least-once over ``--budget`` schedules (22 by default for this part):
  green, how many schedules gave a verdict, how many histories.

Each part's numbers are printed and merged into ``benchmarks/results/explore-history.json`` (keyed by part,
job and engine).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench_explore import COMMON, explored_numbers, job_variants, session

RESULTS = Path(__file__).parent / "results" / "explore-history.json"

#: per job: the helper of planted.py that runs it, its planted property (the count its bug makes non-zero, the
#: declared guarantee) and its twin (a property it holds)
JOBS = {"lake": ("lake", ("duplicates", "exactly-once")), "ledger": ("ledger", ("duplicates", "exactly-once")),
        "guarded": ("guarded_lake", ("lost", "exactly-once"))}
TWIN = ("lost", "at-least-once")

TEST = '''

@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)
@explore(faults=["kill_driver", "kill_executor"], budget={budget}, history="{engine}")
def test_bench(chaos):
    run = {fn}(chaos, "{guarantee}", job={job_upper}_JOB)
    assert run.{metric} == 0, f"{{run.{metric}}} records {metric}"
'''


def costs(entry: dict[str, Any]) -> dict[str, Any]:
    """The per-schedule costs of an explored test's report entry: every exploring run's (the control run and
    the confirming and shrinking runs apart), medians."""
    runs = entry["explore"]["runs"]
    explored = [r for r in runs if r["schedule"] and r["purpose"] in ("explore", "retry", "memory")]
    each = [{"purpose": r["purpose"], "history": r.get("history"), **(r.get("cost") or {}),
             "steps": [f"{s['kind']} {s['phase']} +{s['batch']}" for s in r["schedule"]], "hit": r["hit"]}
            for r in explored]
    measured = [c for c in each if c.get("harness") is not None]

    def median(key: str, rows: list[dict[str, Any]]) -> float | None:
        values = [c[key] for c in rows if c.get(key) is not None]
        return round(statistics.median(values), 1) if values else None

    control = next((r for r in runs if r["purpose"] == "control"), None)
    return {"schedules": len(each), "measured": len(measured), "median_wall": median("wall", each),
            "median_recovery": median("recovery", measured), "median_harness": median("harness", measured),
            "median_recovered_in": median("recovered_in", measured),
            # of the harness's share: the wait for the aimed moment, the recovery's confirmation and the window read,
            # and of the confirmation what came after the history could show the recovery (the ask, the close)
            "median_moment": median("moment", measured), "median_confirm": median("confirm", measured),
            "median_close": median("close", measured),
            "control_seconds": control["seconds"] if control else None,
            "histories": len(entry["explore"].get("histories") or []), "each": each}


def run_part(part: str, job: str, engine: str, budget: int, trigger: float, seed: int) -> dict[str, Any]:
    fn, planted = JOBS[job]
    metric, guarantee = TWIN if part in ("cost", "correct") else planted
    project = Path(tempfile.mkdtemp(prefix="bench-explore-history-"))
    try:
        text = COMMON.format(**job_variants(project, trigger)) + TEST.format(
            budget=budget, engine=engine, fn=fn, guarantee=guarantee, job_upper="GUARDED" if job == "guarded"
            else job.upper(), metric=metric)
        (project / "test_bench.py").write_text(text)
        out = session(project, ["test_bench.py::test_bench"], f"--chaos-seed={seed}", timeout=1500)
    finally:
        shutil.rmtree(project, ignore_errors=True)
    entry = next((e for e in out["report"] if "explore" in e), None)
    row: dict[str, Any] = {"part": part, "job": job, "engine": engine, "budget": budget, "trigger_s": trigger,
                           "seed": seed, "property": f"{metric} == 0, {guarantee} declared", "rc": out["rc"],
                           "session_seconds": round(out["seconds"], 1)}
    if entry is None:
        row["tail"] = out["stdout"][-3000:]
        return row
    numbers = explored_numbers(entry)
    row.update({k: numbers[k] for k in ("verdict", "stop", "first_violation_at", "seconds_to_first_violation",
                                        "runs", "by_purpose", "found", "verdicts", "falsified", "flaky")})
    row["cost"] = costs(entry)
    row["histories"] = entry["explore"].get("histories")
    row["summary"] = [line for line in out["stdout"].splitlines() if "one history" in line or "per schedule" in line
                      or "history #" in line]
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """Every part's headline numbers, the engines side by side (``meas``: of the ``sched`` schedules, those whose
    faults' recovery was measured; ``recov`` and ``harness`` are their medians, ``wall`` all schedules')."""
    head = (f"{'part':8} {'job':8} {'engine':7} {'verdict':12} {'1st viol':>8} {'runs':>5} {'sched':>5} "
            f"{'meas':>5} {'wall':>6} {'recov':>6} {'harness':>8} {'hist':>5} {'session':>8}")
    lines = [head, "-" * len(head)]
    for r in sorted(rows, key=lambda r: (r["part"], r["job"], r["engine"])):
        c = r.get("cost") or {}
        lines.append(f"{r['part']:8} {r['job']:8} {r['engine']:7} {str(r.get('verdict')):12} "
                     f"{str(r.get('first_violation_at')):>8} {str(r.get('runs')):>5} {str(c.get('schedules')):>5} "
                     f"{str(c.get('measured')):>5} {str(c.get('median_wall')):>6} {str(c.get('median_recovery')):>6} "
                     f"{str(c.get('median_harness')):>8} {str(c.get('histories')):>5} {r['session_seconds']:>8}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("cost", "find", "correct"))
    ap.add_argument("--job", choices=tuple(JOBS), default="ledger")
    ap.add_argument("--engine", choices=("shared", "fresh"), default="shared")
    ap.add_argument("--budget", type=int, default=None, help="default: 10 (22 for correct)")
    ap.add_argument("--trigger", type=float, default=5.0, help="the jobs' processing-time trigger, s (0: as written)")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--table", action="store_true", help="print the parts' numbers side by side")
    ap.add_argument("--out", type=Path, default=RESULTS)
    a = ap.parse_args()
    rows: list[dict[str, Any]] = json.loads(a.out.read_text()) if a.out.exists() else []
    if a.part:
        budget = a.budget or (22 if a.part == "correct" else 10)
        row = run_part(a.part, a.job, a.engine, budget, a.trigger, a.seed)
        print(json.dumps({k: v for k, v in row.items() if k != "histories"}, indent=1, default=str))
        rows = [r for r in rows if (r["part"], r["job"], r["engine"]) != (a.part, a.job, a.engine)] + [row]
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(rows, indent=1, default=str))
        print(f"wrote {a.out}")
    if a.table or not a.part:
        print(table(rows))


if __name__ == "__main__":
    main()
