"""A newcomer's first hour (issue 32): the time from a fresh machine to the demo's first verdict, by
phase, and the test suite's time by directory.

**Fresh machine** (``--fresh``): a clean clone of this checkout's HEAD in a temporary folder, a fresh
venv, and empty caches of its own (``XDG_CACHE_HOME`` and ``HOME``: pip's, Go's and the plugin's; the
machine's own ``~/.cache/pytest-streamchaos`` is never touched), then ``./dev demo`` with every output
line stamped. The phases come from the lines ``./dev`` and the demo print: venv, Debian packages,
pip, the stack's preparation (each download and build with its own time), pytest's start and the
stack's start, the demo's warm-up, load and drain, and the verdict. Then ``./dev demo`` once more with
the network shut off (proxies to a closed port but for 127.0.0.1, ``GOPROXY=off``, ``PIP_NO_INDEX``):
it must pass, and its time is the second run's. Debian packages already installed are not installed by ``./dev``: with
``--apt`` the share of the ones the demo needs is measured apart, as ``apt-get install --reinstall``
downloading into an empty archive folder. Run it under the heavy lock::

    flock /tmp/sc/heavy.lock python benchmarks/bench_first_verdict.py --fresh --apt

``--commit C`` measures commit ``C`` of this checkout's history instead of its HEAD (a change's "before");
pip's cache is off in the first run (``PIP_NO_CACHE_DIR=1``: pyspark's sdist is built into a wheel again).
``--base DIR`` makes the temporary folder (clone, venv, caches) in ``DIR``; ``--no-offline`` leaves out the second
run. Each first run's result has ``run_steps``: the installs, pytest's start, the stack's start and the run's
timeline step by step (driver launched -> started -> executors -> query -> first output -> steady state -> the
fault -> the load's end -> drained -> the verdict printed), on the log's clock; ``--split LOG...`` prints them for
kept logs (``--keep``: ``<folder>/logs/first.log``).

**An old log** (``--log FILE --total S``): the phases a ``./dev demo`` log without stamps shows (the
durations it prints), the rest of ``S`` seconds as "apt + pip + other" (the "before" of issue 32).

**The suite** (``--junit FILE``): a JUnit XML of a run (``pytest --junitxml``), its time by directory
(tests/unit, tests/integration, tests/chaos, tests/papers) and its slowest tests; ``--project``: the same
without the tests this checkout marks ``slow`` (a projection from the XML's times, not a run).

Prints a table and writes ``benchmarks/results/first_verdict.json`` (``--out`` to choose; each part
given is replaced in it, the others kept).
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
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "first_verdict.json"
#: the Debian packages the demo needs (./dev demo installs them when missing)
DEMO_APT = ("openjdk-17-jre-headless",)

#: (phase, the first line that starts it); a phase ends where the next one found starts
MARKS = [
    ("apt", re.compile(r"^dev: installing Debian packages")),
    ("pip", re.compile(r"^dev: installing pytest-streamchaos")),
    ("prepare", re.compile(r"^prepare: ")),
    ("pytest start + stack start", re.compile(r"test session starts")),
    ("warm-up (job submitted to steady state)", re.compile(r"^\[chaos\] .* warm-up ")),
    ("load (faults, recovery)", re.compile(r"^\[chaos\] .* load ")),
    ("drain + verdict", re.compile(r"^\[chaos\] .* drain ")),
    ("report + teardown", re.compile(r"^sent \d+ records, read \d+ outputs")),
]
#: a download or build line (its own duration follows " in ")
TIMED = re.compile(r"^(?:pytest-streamchaos: |prepare: )(?:downloaded|resolved|built) (?P<rest>.+)$")


def phases(stamped: list[tuple[float, str]], total: float) -> dict[str, float]:
    """Seconds per phase of a stamped log (see :data:`MARKS`); ``first_verdict_s`` = when the verdict line came."""
    starts: list[tuple[str, float]] = []
    for name, mark in MARKS:
        t = next((t for t, line in stamped if mark.search(line)), None)
        if t is not None:
            starts.append((name, t))
    out: dict[str, float] = {}
    if starts and starts[0][1] > 0:
        out["checks before the first phase"] = round(starts[0][1], 1)
    for (name, t), nxt in zip(starts, [*starts[1:], ("end", total)], strict=True):
        out[name] = round(nxt[1] - t, 1)
    verdict = dict(starts).get("report + teardown")
    if verdict is not None:
        out["first_verdict_s"] = round(verdict, 1)
    out["total_s"] = round(total, 1)
    return out


def timed_steps(lines: list[str]) -> dict[str, float]:
    """Each download and build with the duration its line prints."""
    out = {}
    for line in lines:
        m = TIMED.match(line.strip())
        d = re.search(r" in ([\d.]+)s\b", m["rest"]) if m else None
        if m and d:
            out[re.split(r": \d+ jars| in [\d.]+s", m["rest"])[0]] = float(d[1])
    return out


#: the run's timeline in the report (``  +12.3s  kind ...``), and the drain's status line (``drain 1/60s``: a
#: phase's first one comes within a second of its start)
EVENT = re.compile(r"^\s+(?P<t>[+-][\d.]+)s\s+(?P<kind>[a-z_]+)\b")
DRAIN_STARTS = re.compile(r"^\[chaos\] .* drain (?P<s>\d+)/")
#: the demo's run, step by step: (name, the timeline event that ends the step)
RUN_STEPS = [("driver launched -> started", "driver_started"), ("-> executors added", "executor_added"),
             ("-> query started", "query_started"), ("-> starting offsets fixed (the load starts)",
                                                     "starting_offsets_fixed"),
             ("-> first output", "first_output"), ("-> steady state", "steady_state"),
             ("-> fault injected", "fault_injected"), ("-> load ended on recovery", "load_end"),
             ("-> drained", "drain_end")]


def run_split(stamped: list[tuple[float, str]]) -> dict[str, float]:
    """Where a ``./dev demo`` went: its installs, pytest's start and the stack's start (the test's set-up, from
    pytest's durations), then the run's steps from its report's timeline, placed on the log's clock by the load's
    end (the drain's first status line, less the seconds it says the drain has run: +-1 s), and the verdict's line
    after the drain."""
    session = next((t for t, line in stamped if "test session starts" in line), None)
    drain = next((t - float(m["s"]) for t, line in stamped if (m := DRAIN_STARTS.search(line))), None)
    verdict = next((t for t, line in stamped if re.match(r"^sent \d+ records", line)), None)
    events: dict[str, float] = {}
    setup = None
    for _, line in stamped:
        if (m := EVENT.match(line)) and m["kind"] not in events:
            events[m["kind"]] = float(m["t"])
        if (d := re.match(r"^([\d.]+)s setup ", line)):
            setup = float(d[1])
    if session is None or drain is None or verdict is None or not {"load_end", "driver_launched"} <= events.keys():
        return {}
    zero = drain - events["load_end"]
    launched = zero + events["driver_launched"]
    installed = max((t for t, line in stamped if line.startswith("prepare: ready")), default=0.0)
    out = {"the installs (packages, the jars)": round(installed, 1),
           "-> pytest's session started (the plugin imported)": round(session - installed, 1),
           "-> the test's set-up began (collection)": round(launched - session - (setup or 0.0), 1)}
    if setup is not None:
        out["the stack's start (the test's set-up)"] = setup
    prev = events["driver_launched"]
    for name, kind in RUN_STEPS:
        if kind in events:
            out[name] = round(events[kind] - prev, 1)
            prev = events[kind]
    out["-> the verdict printed"] = round(verdict - (zero + prev), 1)
    return out


def run_stamped(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, float, list]:
    """Run ``argv`` with stdout and stderr merged, each line stamped (seconds from the start) into ``log``."""
    started = time.monotonic()
    stamped = []
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as p, open(log, "w") as f:
        assert p.stdout is not None
        for line in p.stdout:
            t = time.monotonic() - started
            stamped.append((t, line.rstrip("\n")))
            f.write(f"{t:8.2f} {line}")
            f.flush()
        rc = p.wait()
    return rc, time.monotonic() - started, stamped


def fresh(keep: bool, apt: bool, commit: str | None = None, where: Path | None = None,
          offline_run: bool = True) -> dict:
    """The fresh-machine measurement (see the module docstring); ``commit``: of that commit of this checkout's
    history instead of its HEAD (the "before" of a change); ``where``: the folder the temporary one is made in;
    ``offline_run``: False leaves out the second, offline ``./dev demo``."""
    base = Path(tempfile.mkdtemp(prefix="sc-fresh-", dir=where))
    try:
        repo, venv, home, cache = base / "repo", base / "venv", base / "home", base / "cache"
        home.mkdir()
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo)], check=True)
        if commit:
            subprocess.run(["git", "-C", str(repo), "checkout", "-q", commit], check=True)
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        venv_s = time.monotonic() - t
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GO", "PIP_", "VIRTUAL_ENV", "PYTHON", "XDG_", "STREAMCHAOS_", "JAVA_TOOL"))}
        # pip's cache off too (nothing built before is reused: pyspark's sdist is built into a wheel every time)
        env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", HOME=str(home), XDG_CACHE_HOME=str(cache),
                   PYTHONUNBUFFERED="1", VIRTUAL_ENV=str(venv), PIP_NO_CACHE_DIR="1")
        results = base / "logs"
        results.mkdir()
        rc, total, stamped = run_stamped(["./dev", "demo"], repo, env, results / "first.log")
        first = {"commit": head, "exit": rc, "venv_s": round(venv_s, 1), **phases(stamped, total),
                 "prepare_steps": timed_steps([line for _, line in stamped]), "run_steps": run_split(stamped),
                 "load_average": [round(x, 1) for x in os.getloadavg()]}
        offline = {**{k: v for k, v in env.items() if k != "PIP_NO_CACHE_DIR"},
                   "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
                   "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "GOPROXY": "off",
                   "PIP_NO_INDEX": "1", "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}
        out = {"first_run": first, "logs": str(results) if keep else None}
        if offline_run:
            rc2, total2, stamped2 = run_stamped(["./dev", "demo"], repo, offline, results / "second.log")
            out["second_run_offline"] = {"exit": rc2, **phases(stamped2, total2)}
        if apt:
            out["apt_share"] = apt_share(base / "apt-archives")
        Path(RESULTS.parent).mkdir(parents=True, exist_ok=True)
        for name in ("first.log", "second.log") if offline_run else ("first.log",):
            shutil.copy(results / name, RESULTS.parent / f"first_verdict-{name}")
        return out
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def apt_share(archives: Path) -> dict:
    """``apt-get install --reinstall`` of :data:`DEMO_APT`, downloading into an empty archive folder."""
    (archives / "partial").mkdir(parents=True, exist_ok=True)
    t = time.monotonic()
    p = subprocess.run(["apt-get", "install", "--reinstall", "-y", "-qq", "--no-install-recommends",
                        "-o", f"Dir::Cache::archives={archives}", *DEMO_APT],
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, capture_output=True, text=True)
    return {"packages": list(DEMO_APT), "seconds": round(time.monotonic() - t, 1), "exit": p.returncode,
            "note": "reinstalled (the machine has them): download + unpack + configure, apt-get update not included"}


def from_log(log: Path, total: float) -> dict:
    """The phases an unstamped ``./dev demo`` log shows (the "before")."""
    lines = log.read_text().splitlines()
    steps = timed_steps(lines)
    demo = {}
    for line in lines:
        m = re.match(r"^([\d.]+)s (call|setup|teardown) ", line)
        if m:
            demo[f"pytest {m[2]}"] = float(m[1])
        m = re.search(r"=+ \d+ passed in ([\d.]+)s", line)
        if m:
            demo["pytest session"] = float(m[1])
    rest = total - sum(steps.values()) - demo.get("pytest session", 0.0)
    return {"total_s": total, "prepare_steps": steps, "demo": demo,
            "apt + pip + dockerd + other": round(rest, 1), "log": str(log)}


def slow_tests() -> set[str]:
    """The tests this checkout marks ``slow`` (left out of the default run), as ``classname::name``."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow", "-p",
                          "no:cacheprovider", "tests"], cwd=ROOT, capture_output=True, text=True).stdout
    ids = [line.split("::") for line in out.splitlines() if "::" in line]
    return {f"{path.removesuffix('.py').replace('/', '.')}::{name}" for path, name, *_ in ids}


def suite(junit: Path, top: int, without: frozenset[str] | set[str] = frozenset()) -> dict:
    """The suite's time by directory and its slowest tests, from a JUnit XML; ``without``: tests left out
    (the run as it would be with this checkout's ``slow`` marks: a projection from the XML's times)."""
    by_dir: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    tests = []
    for case in ET.parse(junit).iter("testcase"):
        cls = case.get("classname", "")
        if f"{cls}::{case.get('name')}" in without:
            continue
        t = float(case.get("time", 0))
        d = "/".join(cls.split(".")[:2]) if cls.startswith("tests.") else cls.split(".")[0]
        by_dir[d] += t
        count[d] += 1
        tests.append((t, f"{cls}::{case.get('name')}"))
    tests.sort(reverse=True)
    return {"junit": str(junit), "left_out": sorted(without), "total_s": round(sum(by_dir.values()), 1),
            "tests": sum(count.values()),
            "by_directory": {d: {"seconds": round(s, 1), "tests": count[d]} for d, s in sorted(by_dir.items())},
            "slowest": [{"test": name, "seconds": round(t, 1)} for t, name in tests[:top]]}


def show(result: dict) -> None:
    for part in ("before", "first_run", "second_run_offline", "apt_share"):
        if part in result:
            print(f"== {part}")
            for k, v in result[part].items():
                print(f"  {k:45s} {v}")
    for part in ("suite", "suite_without_slow"):
        if part not in result:
            continue
        s = result[part]
        print(f"== {part} ({s['tests']} tests, {s['total_s'] / 60:.1f} min of test time)")
        for d, v in s["by_directory"].items():
            print(f"  {d:30s} {v['seconds'] / 60:6.1f} min  {v['tests']:4d} tests")
        for row in s["slowest"]:
            print(f"  {row['seconds']:7.1f}s  {row['test']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", action="store_true", help="measure ./dev demo on a fresh machine (under the lock)")
    ap.add_argument("--apt", action="store_true", help="with --fresh: the demo's Debian packages, apart")
    ap.add_argument("--keep", action="store_true", help="keep the fresh clone, venv and caches")
    ap.add_argument("--commit", help="with --fresh: measure this commit (of this checkout's history), not HEAD")
    ap.add_argument("--base", type=Path, help="with --fresh: make the temporary folder in BASE (default: TMPDIR)")
    ap.add_argument("--no-offline", action="store_true", help="with --fresh: no second, offline ./dev demo")
    ap.add_argument("--log", type=Path, help="an unstamped ./dev demo log (the before)")
    ap.add_argument("--total", type=float, help="with --log: its wall time in seconds")
    ap.add_argument("--junit", type=Path, help="a JUnit XML of a suite run")
    ap.add_argument("--project", action="store_true",
                    help="with --junit: also the XML's run without the tests this checkout marks slow")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--split", type=Path, nargs="+", help="the run's steps of stamped ./dev demo logs (first.log)")
    ap.add_argument("--label", default="after", help="the key the results go under (before, after)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.split:
        for log in args.split:
            stamped = [(float(line[:8]), line[9:].rstrip("\n")) for line in log.read_text().splitlines(True)
                       if line[:8].strip()]
            print(f"== {log}: {json.dumps(run_split(stamped))}")
        return 0
    if not (args.fresh or args.log or args.junit):
        ap.error("give --fresh, --log FILE --total S, --split LOG..., and/or --junit FILE")
    result: dict = {}
    if args.log:
        if args.total is None:
            ap.error("--log needs --total")
        result["before"] = from_log(args.log, args.total)
    if args.fresh:
        result.update(fresh(args.keep, args.apt, args.commit, args.base, not args.no_offline))
    if args.junit:
        result["suite"] = suite(args.junit, args.top)
        if args.project:
            result["suite_without_slow"] = suite(args.junit, args.top, slow_tests())
    show(result)
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    saved.setdefault(args.label, {}).update(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(saved, indent=1))
    print(f"wrote {args.out} ({args.label})")
    failed = [p for p in ("first_run", "second_run_offline") if result.get(p, {}).get("exit")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
