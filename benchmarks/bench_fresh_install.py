"""What ``./dev demo`` installs before its run on a fresh machine, step by step (issue 48: the first verdict
on a fresh machine within 2 minutes, every install included). The install side only: no Spark, no stack.

Each run: a clone of this checkout (``--commit``: of that commit, the "before" of a change) in a temporary
folder, a fresh venv (``python -m venv``), and empty caches of its own -- ``HOME``, ``XDG_CACHE_HOME`` (the
plugin's jars and uv's cache), ``PIP_CACHE_DIR`` -- so nothing this machine built or downloaded before is
reused; then ``./dev demo --collect-only -q`` with every output line stamped: ``./dev`` installs what the
demo needs and pytest only collects the demo (no stack starts). The install part ends at ``prepare``'s last
line. Then the same command once more with the network shut off (proxies to a closed port, pip's and uv's
index off): it must install nothing and fetch nothing, and its install part is the second run's time.

Reported per run: the clone, the venv, the install part and its steps (pip or uv with the lines ``./dev``
prints; each jar set with the time its line prints), what the caches hold afterwards, and the second run.
Every step runs under ``nice -n 19 ionice -c3`` (``--no-nice`` to run them plainly)::

    python benchmarks/bench_fresh_install.py --runs 3 --label after
    python benchmarks/bench_fresh_install.py --runs 3 --commit 36ad4b2 --label before

Prints each run's split and the medians, and writes them to ``benchmarks/results/fresh_install.json`` under
``--label`` (the other labels kept).
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

from bench_first_verdict import run_stamped  # the whole demo's split (run as python benchmarks/<name>.py)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "fresh_install.json"
NICE = ["nice", "-n", "19", "ionice", "-c3"]
#: the line that ends a prepare run (it prints one whatever it did); the last one ends the install part
PREPARED = re.compile(r"^prepare: (ready|\d+ step\(s\) failed) in ")
#: the line that starts the packages' install, and the one that ends it when ./dev prints one
INSTALLING = re.compile(r"^dev: installing pytest-streamchaos")
INSTALLED = re.compile(r"^dev: installed .* in (?P<s>[\d.]+)s")
#: a jar set's line: its name and the seconds it took
JARS = re.compile(r"^pytest-streamchaos: (?:downloaded|resolved) (?P<what>.+?): \d+ jars, .* in (?P<s>[\d.]+)s")
#: what a second run must not print: an install or a download
FETCHED = re.compile(r"^(dev: installing|pytest-streamchaos: (downloaded|resolved)|prepare: fetching)")
#: offline: every proxy a closed port but for the loopback, pip's and uv's index off
OFFLINE = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost",
           "PIP_NO_INDEX": "1", "UV_OFFLINE": "1", "GOPROXY": "off"}


def timed(argv: list[str]) -> float:
    """Run ``argv`` (checked); its wall time."""
    started = time.monotonic()
    subprocess.run(argv, check=True)
    return time.monotonic() - started


def split(stamped: list[tuple[float, str]]) -> dict:
    """The install part of a stamped ``./dev demo`` log: its end, the packages' install and each jar set."""
    end = max((t for t, line in stamped if PREPARED.search(line)), default=None)  # ./dev may prepare twice
    start_pkgs = next((t for t, line in stamped if INSTALLING.search(line)), None)
    pkgs = next((float(m["s"]) for _, line in stamped if (m := INSTALLED.search(line))), None)
    if pkgs is None and start_pkgs is not None:  # a ./dev that prints no end line: until prepare's first line
        after = (t for t, line in stamped if line.startswith("prepare: ") and t > start_pkgs)
        pkgs = next(after, end or 0) - start_pkgs
    return {"install_s": None if end is None else round(end, 1),
            "packages_s": None if pkgs is None else round(pkgs, 1),
            "jars": {m["what"]: float(m["s"]) for _, line in stamped if (m := JARS.search(line))},
            "lines": [f"{t:7.1f} {line}" for t, line in stamped
                      if line.startswith(("dev:", "prepare:", "pytest-streamchaos:"))]}


def du(path: Path) -> float:
    """MB under ``path`` (0 when absent)."""
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6, 1) \
        if path.exists() else 0.0


def one_run(commit: str | None, nice: list[str], keep: bool) -> dict:
    """One fresh machine (see the module docstring)."""
    base = Path(tempfile.mkdtemp(prefix="sc-fresh-install-"))
    try:
        repo, venv, home, cache, pip_cache = (base / n for n in ("repo", "venv", "home", "cache", "pip-cache"))
        home.mkdir()
        clone_s = timed([*nice, "git", "clone", "-q", "--no-hardlinks", str(ROOT), str(repo)])
        if commit:
            subprocess.run(["git", "-C", str(repo), "checkout", "-q", commit], check=True)
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        venv_s = timed([*nice, sys.executable, "-m", "venv", str(venv)])
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GO", "PIP_", "UV_", "VIRTUAL_ENV", "PYTHON", "XDG_", "STREAMCHAOS_", "JAVA_TOOL"))}
        env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", HOME=str(home), XDG_CACHE_HOME=str(cache),
                   PIP_CACHE_DIR=str(pip_cache), PYTHONUNBUFFERED="1", VIRTUAL_ENV=str(venv))
        argv = [*nice, "./dev", "demo", "--collect-only", "-q"]
        rc, _, stamped = run_stamped(argv, repo, env, base / "first.log")
        first = {"commit": head, "exit": rc, "clone_s": round(clone_s, 1), "venv_s": round(venv_s, 1),
                 **split(stamped), "cache_mb": {"xdg": du(cache), "pip": du(pip_cache)}, "venv_mb": du(venv)}
        rc2, _, stamped2 = run_stamped(argv, repo, {**env, **OFFLINE}, base / "second.log")
        second = {"exit": rc2, **split(stamped2),
                  "fetched": [line for _, line in stamped2 if FETCHED.search(line)]}
        if keep:
            print(f"kept {base}", file=sys.stderr)
        return {"first": first, "second_offline": second}
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def median(runs: list[dict], part: str, key: str) -> float | None:
    values = [r[part][key] for r in runs if r[part].get(key) is not None]
    return round(statistics.median(values), 1) if values else None


def show(runs: list[dict]) -> dict:
    """Print each run's split; the medians."""
    for i, r in enumerate(runs, 1):
        f, s = r["first"], r["second_offline"]
        print(f"== run {i} ({f['commit']}, exit {f['exit']}/{s['exit']}): clone {f['clone_s']}s, venv {f['venv_s']}s, "
              f"install {f['install_s']}s (packages {f['packages_s']}s, jars {f['jars']}); caches {f['cache_mb']} MB; "
              f"second run offline: install {s['install_s']}s, fetched {s['fetched'] or 'nothing'}")
        for line in f["lines"]:
            print(f"   {line}")
    medians = {key: median(runs, "first", key) for key in ("clone_s", "venv_s", "install_s", "packages_s")}
    medians["second_install_s"] = median(runs, "second_offline", "install_s")
    print(f"== medians of {len(runs)} run(s): {medians}")
    return medians


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--commit", help="measure this commit of this checkout's history instead of its HEAD")
    ap.add_argument("--label", default="after", help="the key the results go under (before, after)")
    ap.add_argument("--no-nice", action="store_true", help="run the steps at normal priority")
    ap.add_argument("--keep", action="store_true", help="keep each run's clone, venv, caches and logs")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    nice = [] if args.no_nice else NICE
    runs = []
    for _ in range(args.runs):
        runs.append(one_run(args.commit, nice, args.keep))
        load = os.getloadavg()
        runs[-1]["load_average"] = [round(x, 1) for x in load]
        print(f"run {len(runs)}: install {runs[-1]['first']['install_s']}s", file=sys.stderr, flush=True)
    medians = show(runs)
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    saved[args.label] = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "nice": not args.no_nice,
                         "medians": medians, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(saved, indent=1))
    print(f"wrote {args.out} ({args.label})")
    bad = [r for r in runs if r["first"]["exit"] or r["second_offline"]["exit"] or r["second_offline"]["fetched"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
