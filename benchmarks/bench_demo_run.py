"""Where the demo's run goes (issue 48: a newcomer's first verdict within 2 minutes): ``./dev demo``'s part after
its installs, ``python -m pytest_streamchaos.demo``, on this machine, with the caches ``./dev demo`` leaves.

Each run: the demo with the plugin's cache a temporary folder holding only what ``prepare --for demo`` fetches
(the machine's jars, linked: no class-data archives, no Toxiproxy, as on a fresh machine after ``./dev demo``'s
installs), ``--basetemp`` its own, and ``-p demo_stamps`` (``benchmarks/demo_stamps.py``): each step of the
stack's start stamped. Reported per run: the wall time; pytest's start; the stack's start (Kafka: links, format,
nodes up, round trip; the Spark cluster: master listening, workers registered) and the test's set-up; the run's
own timeline from its report (driver launched -> started -> executors -> query started -> first output ->
steady state -> the fault -> the load's end on recovery -> drain -> driver stopped); teardown and the end.
Run it under the heavy lock, before and after a change, alternating::

    flock /tmp/sc/heavy.lock python benchmarks/bench_demo_run.py --runs 3 --label after
    flock /tmp/sc/heavy.lock python benchmarks/bench_demo_run.py --runs 3 --commit 88795f9 --label before

``--commit C`` runs commit ``C``'s tree (``git archive`` into a temporary folder). Writes
``benchmarks/results/demo_run.json`` under ``--label`` (the other labels kept).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_first_verdict import run_stamped  # run as python benchmarks/<name>.py

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "demo_run.json"
STAMP = re.compile(r"\[t\]\s+(?P<t>[\d.]+) (?P<what>.+?)(?: \((?P<s>[\d.]+)s\))?$")
EVENT = re.compile(r"^\s+(?P<t>[+-][\d.]+)s\s+(?P<kind>[a-z_]+)\b")
#: the run's timeline, in the order its steps come: (name of the step, the event that ends it)
STEPS = [("driver launched -> started", "driver_started"), ("-> executors added", "executor_added"),
         ("-> query started", "query_started"), ("-> first output", "first_output"),
         ("-> steady state", "steady_state"), ("-> fault injected", "fault_injected"),
         ("-> load ended on recovery", "load_end"), ("-> drained", "drain_end"),
         ("-> driver stopped", "driver_stopped")]


def split(stamped: list[tuple[float, str]], wall: float) -> dict:
    """The run's steps from its stamped output (see the module docstring)."""
    stamps: dict[str, tuple[float, float | None]] = {}
    events: dict[str, float] = {}
    for t, line in stamped:
        if (m := STAMP.search(line)) and m["what"] not in stamps:
            stamps[m["what"]] = (t, float(m["s"]) if m["s"] else None)
        elif (m := EVENT.match(line)) and m["kind"] not in events:
            events[m["kind"]] = float(m["t"])
    at = {k: t for k, (t, _) in stamps.items()}
    took = {k.removesuffix(" end"): s for k, (_, s) in stamps.items() if s is not None}
    out: dict = {"wall_s": round(wall, 1), "pytest start": round(at.get("runtest_setup", 0.0), 1)}
    out["set-up (the stack's start)"] = round(at.get("runtest_call", 0.0) - at.get("runtest_setup", 0.0), 1)
    out["stack"] = {k: round(v, 1) for k, v in took.items() if k.startswith(("kafka.", "spark."))}
    if "kafka.start begin" in at and "spark.start begin" in at:
        out["stack"]["spark.start began after kafka.start began"] = round(
            at["spark.start begin"] - at["kafka.start begin"], 1)
    run = {}
    if "driver_launched" in events:
        prev = events["driver_launched"]
        for name, kind in STEPS:
            if kind in events:
                run[name] = round(events[kind] - prev, 1)
                prev = events[kind]
        run["driver launched -> stopped"] = round(prev - events["driver_launched"], 1)
    out["run"] = run
    if "runtest_call" in at and "runtest_teardown" in at:
        call = at["runtest_teardown"] - at["runtest_call"]
        out["call"] = round(call, 1)
        beside = call - run.get("driver launched -> stopped", 0)
        out["call beside the driver (topics, verdict, report)"] = round(beside, 1)
        out["teardown and end"] = round(wall - at["runtest_teardown"], 1)
    out["first_verdict_s"] = next((round(t, 1) for t, line in stamped if re.match(r"^sent \d+ records", line)), None)
    out["passed"] = any(re.search(r"\b1 passed\b", line) for _, line in stamped)
    return out


def one_run(tree: Path, base: Path) -> dict:
    cache = base / "cache" / "pytest-streamchaos"
    cache.mkdir(parents=True)
    jars = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pytest-streamchaos" / "jars"
    (cache / "jars").symlink_to(jars)
    env = {**os.environ, "XDG_CACHE_HOME": str(base / "cache"), "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join([str(tree), str(Path(__file__).parent)])}
    argv = [sys.executable, "-m", "pytest_streamchaos.demo", "-p", "demo_stamps", f"--basetemp={base / 'pytest'}"]
    _, wall, stamped = run_stamped(argv, tree, env, base / "demo.log")
    return split(stamped, wall)


def show(label: str, runs: list[dict]) -> dict:
    for i, r in enumerate(runs, 1):
        print(f"== {label} run {i}: {json.dumps(r)}")
    flat = [k for k, v in runs[0].items() if isinstance(v, float)]
    medians = {k: round(statistics.median(r[k] for r in runs if isinstance(r.get(k), float)), 1) for k in flat}
    for part in ("stack", "run"):
        for k in runs[0].get(part, {}):
            values = [r[part][k] for r in runs if k in r.get(part, {})]
            medians[f"{part}: {k}"] = round(statistics.median(values), 1)
    print(f"== {label}: medians of {len(runs)} run(s): {json.dumps(medians)}")
    return medians


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--commit", help="run this commit's tree (of this checkout's history) instead of the checkout")
    ap.add_argument("--label", default="after")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="sc-demo-run-") as tmp:
        tree = ROOT
        if args.commit:
            tree = Path(tmp) / "tree"
            tree.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.commit], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        for i in range(args.runs):
            base = Path(tmp) / f"run{i}"
            runs.append({**one_run(tree, base), "load_average": [round(x, 1) for x in os.getloadavg()]})
            shutil.rmtree(base, ignore_errors=True)
            print(f"run {i + 1}: {runs[-1]['wall_s']}s", file=sys.stderr, flush=True)
    medians = show(args.label, runs)
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    saved[args.label] = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         "commit": args.commit or "HEAD", "medians": medians, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(saved, indent=1))
    print(f"wrote {args.out} ({args.label})")
    return 0 if all(r["passed"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
