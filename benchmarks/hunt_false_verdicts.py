"""The false-verdict hunt (issue 47): every verdict path, a correct job and its planted twin under the same
fault, several runs; then the table of docs/false-verdict-hunt.md.

Runs ``tests/chaos/test_false_verdict_hunt.py`` (the cases, each a ``slow`` chaos test that writes one row)
``--runs`` times (default 3), one pytest session per run so that each starts on a fresh stack, and prints per
path and twin: the runs, the verdicts (``caught`` / ``silent``, or ``missed`` / ``false alarm``: a false green or a
false alarm) and the numbers of each run. A case that failed without writing its row counts as ``no verdict``.
Then, once, the name checks a running job must confirm (:data:`NAMES`, each a typo the run must refuse).
Writes ``benchmarks/results/hunt_false_verdicts.json``. Run under the machine's heavy lock::

    python benchmarks/hunt_false_verdicts.py [--runs 3] [-k "kafka or delta"]

The first run takes about 40 minutes on 2 cores (14 cases, the reference paths making their reference runs), each
next one about 23 (the references reused from the hunt's pytest cache).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "hunt_false_verdicts.json"
CASES = "tests/chaos/test_false_verdict_hunt.py"
#: every name a running job must confirm, misspelt once on a real job (the rest of docs/names.md's table is
#: refused before anything starts: tests/unit/test_names.py makes each row's typo)
NAMES = "tests/chaos/test_chaos_names.py"
GOOD = ("caught", "silent")


def one_session(k: str | None, timeout: float, cache: Path) -> tuple[list[dict[str, Any]], int, float]:
    """One pytest session of the hunt's cases (``cache``: pytest's cache directory, shared by the hunt's sessions
    as a CI keeps it: the reference runs are made once), the rows they wrote, pytest's exit code, its seconds."""
    with tempfile.TemporaryDirectory(prefix="hunt-") as tmp:
        out = Path(tmp) / "rows.jsonl"
        cmd = [sys.executable, "-m", "pytest", CASES, "-m", "slow", "-q", "-o", f"cache_dir={cache}"] \
            + (["-k", k] if k else [])
        started = time.monotonic()
        p = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "HUNT_OUT": str(out)}, capture_output=True, text=True,
                           timeout=timeout)
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if p.returncode != 0:
        print((p.stdout + p.stderr)[-4000:], file=sys.stderr)
    return rows, p.returncode, time.monotonic() - started


def names_session(timeout: float) -> list[dict[str, Any]]:
    """One pytest session of :data:`NAMES` (its ``slow`` checks too): per test, ``refused`` when the run stopped
    on the refusal the test expects, else what pytest said."""
    with tempfile.TemporaryDirectory(prefix="hunt-names-") as tmp:
        report = Path(tmp) / "names.xml"
        cmd = [sys.executable, "-m", "pytest", NAMES, "-m", "slow or not slow", "-q", "-p", "no:cacheprovider",
               f"--junitxml={report}"]
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        if not report.exists():
            print((p.stdout + p.stderr)[-4000:], file=sys.stderr)
            return [{"test": NAMES, "verdict": f"no report (pytest exit {p.returncode})", "seconds": 0.0}]
        out = []
        for case in ET.parse(report).getroot().iter("testcase"):
            bad = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
            out.append({"test": case.get("name"), "verdict": "refused" if not bad else bad[0],
                        "seconds": round(float(case.get("time") or 0), 1)})
    return out


def table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (path, twin): runs, verdicts, and the numbers of each run."""
    by: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["path"], r["twin"])].append(r)
    out = []
    for (path, twin), rs in sorted(by.items()):
        verdicts = [r["verdict"] for r in rs]
        if "planted_lost" in rs[0] and twin == "planted":
            numbers = [f"lost {r['found_lost']}/{r['planted_lost']}, dup {r['found_dup']}/{r['planted_dup']}"
                       + (f" (+{r['other_dup']} replayed)" if r["other_dup"] else "") for r in rs]
        elif "planted_lost" in rs[0]:
            numbers = [f"lost {r['lost']}, dup {r['duplicates']}" for r in rs]
        else:
            numbers = [f"found {r['found']} of {r['planted_size']}, {r['compared']} compared, {r['left_out']} left out"
                       for r in rs]
        out.append({"path": path, "twin": twin, "runs": len(rs), "verdicts": verdicts,
                    "good": sum(v in GOOD for v in verdicts), "numbers": numbers})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-k", default=None, help="pytest -k over the cases (e.g. 'kafka or stateful')")
    ap.add_argument("--timeout", type=float, default=5400.0, help="seconds per session")
    ap.add_argument("--no-names", action="store_true", help=f"leave out the session of {NAMES}")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    sessions = []
    cache = Path(tempfile.mkdtemp(prefix="hunt-cache-"))
    for i in range(args.runs):
        got, code, took = one_session(args.k, args.timeout, cache)
        for r in got:
            r["run"] = i + 1
        rows += got
        sessions.append({"run": i + 1, "rows": len(got), "pytest_exit": code, "seconds": round(took, 1)})
        print(f"run {i + 1}: {len(got)} cases in {took:.0f}s (pytest exit {code})", flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    names = [] if args.no_names else names_session(args.timeout)
    for n in names:
        print(f"name check {n['test']}: {n['verdict']} ({n['seconds']} s)", flush=True)
    lines = table(rows)
    for t in lines:
        print(f"{t['path']:14s} {t['twin']:8s} {t['good']}/{t['runs']} {','.join(t['verdicts'])}: "
              + "; ".join(t["numbers"]))
    false_green = sum(v == "missed" for t in lines for v in t["verdicts"])
    false_alarm = sum(v == "false alarm" for t in lines for v in t["verdicts"])
    not_refused = sum(n["verdict"] != "refused" for n in names)
    summary = {"runs": args.runs, "cases": len(rows), "false_greens": false_green, "false_alarms": false_alarm,
               "names": len(names), "names_not_refused": not_refused, "sessions": sessions}
    print(json.dumps(summary))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"summary": summary, "table": lines, "rows": rows, "names": names}, indent=1))
    return 0 if not false_green and not false_alarm and not not_refused else 1


if __name__ == "__main__":
    sys.exit(main())
