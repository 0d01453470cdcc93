"""The harness's own overhead (issue 48): where each second of a fault-free run goes, beyond its load.

One pytest session (the stack started once), one unmeasured warm-up run, then ``--runs`` measured runs
of a user's Kafka-to-Kafka job written as people write it (``tests/chaos/jobs/orders_to_shipments.py``:
``format("kafka")``, Spark's defaults, hard-coded broker and topics), no fault, ``--rate`` records/s for
``--duration`` s of load. ``overhead`` = the run's wall time (``chaos.run``) minus its load (steady
state to the load's end). Each run is split into steps from its own timeline (the runner's and Spark's
events: driver launched, SparkContext up, first executor, query started, starting offsets fixed, first
output, steady state, load end, caught up, drain end) and from the phases of the runner timed in the
pytest process (topics, the job's preparation, the observers, their start, the job's stop, the
verdict, the topics' deletion); the stack's heal before each test (fixture set-up) is apart. Run it
under the heavy lock::

    flock /tmp/sc/heavy.lock python benchmarks/bench_overhead.py --runs 3 [--label after]

``--spark k8s`` runs the same job on the one-node Kubernetes (``@pytest.mark.chaos(spark="k8s")``, after
``python -m pytest_streamchaos.prepare --k8s``; ``--deploy-mode cluster``: the driver a pod too); the cluster's
start (each of its steps, from its own clock) is printed as ``k8s_start_*``, the warm-up run's set-up (the stack's
cold start) as ``cold_stack_setup``.

``--history shared`` runs the session with ``--chaos-history=shared`` (docs/shared-history.md): the warm-up run
starts the job, each measured run is a window of its history -- its load, the wait for the window's outputs,
its judgement (``window_load``, ``window_outputs``, ``window_judged``); the job's start is the warm-up run's
(``history_start``).

Prints each step's min / median / max over the measured runs and writes
``benchmarks/results/overhead.json`` (under ``--label``; the other labels kept).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "overhead.json"

TEST = textwrap.dedent('''
    import functools, json, os, threading, time
    import psutil
    import pytest
    from pytest_streamchaos import JobSetup, Load, Watch
    from pytest_streamchaos.runner.phases import drain, job, load, observers, segment, topics, verdict
    from pytest_streamchaos.runner.one_history import OneHistory
    from pytest_streamchaos.stack.driver.job import SparkJob

    SPANS = []

    def timed(cls, name, label=None):
        """Record (label, start, end) of every call of cls.name."""
        inner = getattr(cls, name)

        @functools.wraps(inner)
        def wrapper(self, *a, **k):
            t = time.time()
            try:
                return inner(self, *a, **k)
            finally:
                what = label(self, *a) if callable(label) else (label or name)
                SPANS.append((what, t, time.time()))
        setattr(cls, name, wrapper)

    timed(topics.MakeTopics, "run", "topics")
    timed(topics.MakeTopics, "forget", "topics_deleted")
    timed(job.PrepareJob, "run", "job_prepared")
    timed(observers.WireObservers, "run", "observers_built")
    timed(observers.Observers, "start", lambda self, what: "start_" + type(what).__name__)
    timed(observers.Observers, "cleanup", "cleanup")
    timed(SparkJob, "start", "driver_spawn")
    timed(SparkJob, "stop", "driver_stop")
    timed(drain.Drain, "run", "drain")
    timed(verdict.Verdict, "run", "verdict")
    # a window of a shared history (--history shared): the job started once, then each run's load and close
    timed(OneHistory, "start", "history_start")
    timed(segment.SegmentLoad, "run", "window_load")
    timed(OneHistory, "_await_window", "window_outputs")
    timed(OneHistory, "_view", "window_judged")

    SET_UP = {{}}

    #: CPU seconds by category, sampled every half second: every process this pytest started and the
    #: machine's total (``other``: whatever else runs on it)
    CPU = []

    def category(p):
        try:
            if p.pid == os.getpid():
                return "pytest"
            cmd = " ".join(p.cmdline())
        except psutil.Error:
            return None
        for needle, cat in (("kafka.Kafka", "brokers"), ("deploy.master", "spark_master"),
                            ("deploy.worker", "spark_workers"), ("CoarseGrainedExecutorBackend", "executors"),
                            ("SparkSubmit", "driver_jvm"), ("launcher.Main", "spark_submit_launcher"),
                            ("toxiproxy", "toxiproxy"), ("pyspark.daemon", "python_workers"),
                            ("job.daemon", "python_workers"), ("pyspark/worker", "python_workers")):
            if needle in cmd:
                return cat
        return "driver_python" if "python" in cmd else "other_children"

    def sample_cpu():
        seen = {{}}
        me = psutil.Process()
        while True:
            for p in [me, *me.children(recursive=True)]:
                try:
                    if p.pid not in seen or seen[p.pid][0] is None:
                        seen[p.pid] = [category(p), 0.0]
                    t = p.cpu_times()
                    seen[p.pid][1] = t.user + t.system
                except psutil.Error:
                    pass
            cats = {{}}
            for cat, c in seen.values():
                cats[cat or "other_children"] = cats.get(cat or "other_children", 0.0) + c
            m = psutil.cpu_times()
            cats["machine"] = m.user + m.system + m.nice + m.irq + m.softirq + m.steal
            CPU.append((time.time(), cats))
            time.sleep(0.5)  # a sampling period, not a wait for anything

    if os.environ.get("OVH_CPU") == "1":
        threading.Thread(target=sample_cpu, daemon=True).start()

    @pytest.fixture
    def before_stack():
        SET_UP["t"] = time.time()

    @pytest.mark.chaos{mark}
    @pytest.mark.parametrize("i", range(int(os.environ["OVH_RUNS"]) + 1))
    def test_overhead(before_stack, chaos, i):
        t_body = time.time()
        SPANS.clear()
        CPU.clear()
        t0 = time.time()
        run = chaos.run({job!r}, guarantee="at-least-once",
                        setup=JobSetup(args=["{{checkpoint_dir}}"], kafka_port=9092, deploy_mode={mode!r}),
                        load=Load(rate={rate}, duration={duration}, inputs={{"orders": None}}),
                        watch=Watch(outputs={{"shipments": None}}))
        t1 = time.time()
        assert run.lost == 0
        row = {{"i": i, "warm": i > 0, "setup_s": t_body - SET_UP["t"], "t0": t0, "t1": t1,
               "load_average": os.getloadavg()[0], "expected": run.expected, "lost": run.lost,
               "duplicates": run.duplicates, "spans": SPANS[:], "cpu": CPU[:],
               "events": [(e.t, str(e.kind), e.target) for e in run.timeline],
               "stack_start": dict(getattr(getattr(chaos.cluster, "kube", None), "timings", {{}}))}}
        with open(os.environ["OVH_OUT"], "a") as f:
            f.write(json.dumps(row) + "\\n")
''')

#: the steps of a run in order: (name, where it ends); each starts where the previous one ended.
#: ``("span", label)`` ends where that span of the runner ended, ``("event", kind)`` at that timeline event
STEPS = [
    ("topics", ("span", "topics")),
    ("job_prepared", ("span", "job_prepared")),
    ("observers_built", ("span", "observers_built")),
    ("observers_started", ("span", "start_KafkaWatcher")),
    ("driver_spawn", ("span", "driver_spawn")),
    ("driver_started", ("event", "driver_started")),
    ("executor_added", ("event", "executor_added")),
    ("query_started", ("event", "query_started")),
    ("starting_offsets", ("event", "starting_offsets_fixed")),
    ("first_output", ("event", "first_output")),
    ("steady_state", ("event", "steady_state")),
    ("load", ("event", "load_end")),
    ("drain_caught_up", ("event", "caught_up")),
    ("drain_settle", ("event", "drain_end")),
    ("stop", ("span", "cleanup")),
    ("verdict", ("span", "verdict")),
    ("topics_deleted", ("span", "topics_deleted")),
]


def bounds(row: dict) -> list[tuple[str, float, float | None]]:
    """Each step of one run as (name, start, end); end None when the step's end is missing."""
    ends = {("span", what): end for what, _, end in row["spans"]}
    for t, kind, _ in sorted(row["events"], reverse=True):
        ends[("event", kind)] = t  # the first of each kind
    out: list[tuple[str, float, float | None]] = []
    t = row["t0"]
    for name, end in STEPS:
        nxt = ends.get(end)
        out.append((name, t, nxt))
        t = nxt if nxt is not None else t
    out.append(("rest", t, row["t1"]))
    return out


def breakdown(row: dict) -> dict:
    """Seconds per step of one run (None when its end is missing); ``overhead`` = wall - load."""
    out: dict = {"stack_heal": round(row["setup_s"], 3)}
    for name, start, end in bounds(row):
        out[name] = None if end is None else round(end - start, 3)
    out["wall"] = round(row["t1"] - row["t0"], 3)
    out["overhead"] = round(out["wall"] - (out["load"] or 0.0), 3)
    spans = {what: e - s for what, s, e in row["spans"]}
    out["driver_stop (in stop)"] = round(spans.get("driver_stop", 0.0), 3)
    return out


def cpu_at(samples: list, t: float) -> dict[str, float]:
    """The cumulative CPU seconds by category of the last sample at or before ``t``."""
    before = [c for ts, c in samples if ts <= t]
    return before[-1] if before else (samples[0][1] if samples else {})


def cpu_breakdown(row: dict) -> dict[str, dict[str, float]]:
    """CPU seconds by category in each step of one run (half-second samples: rough for short steps)."""
    out: dict[str, dict[str, float]] = {}
    samples = row.get("cpu") or []
    if not samples:
        return out
    for name, start, end in bounds(row):
        if end is None:
            continue
        a, b = cpu_at(samples, start), cpu_at(samples, end)
        step = {k: round(b.get(k, 0.0) - a.get(k, 0.0), 2) for k in b}
        ours = sum(v for k, v in step.items() if k != "machine")
        step["other_on_machine"] = round(step.pop("machine", 0.0) - ours, 2)
        out[name] = {k: v for k, v in step.items() if abs(v) >= 0.05}
    return out


def window_breakdown(row: dict, duration: float) -> dict:
    """Seconds per step of one window of a shared history; ``overhead`` = wall - load (the ``duration`` asked:
    a window's load lasts that long from its arming)."""
    spans: dict[str, float] = {}
    for what, start, end in row["spans"]:
        spans[what] = spans.get(what, 0.0) + end - start
    wall = row["t1"] - row["t0"]
    out = {"stack_heal": round(row["setup_s"], 3), "history_start": round(spans.get("history_start", 0.0), 3),
           "window_load": round(spans.get("window_load", 0.0), 3),
           "window_outputs": round(spans.get("window_outputs", 0.0), 3),
           "window_judged": round(spans.get("window_judged", 0.0), 3), "wall": round(wall, 3), "load": duration}
    out["rest"] = round(wall - sum(v for k, v in out.items() if k.startswith(("history", "window"))), 3)
    out["overhead"] = round(wall - duration, 3)
    return out


def summary(per_run: list[dict]) -> dict:
    keys = list(per_run[0])
    out = {}
    for k in keys:
        vals = [r[k] for r in per_run if r.get(k) is not None]
        if vals:
            out[k] = {"min": round(min(vals), 2), "median": round(statistics.median(vals), 2),
                      "max": round(max(vals), 2)}
    return out


def show(per_run: list[dict], stats: dict, cpu: list[dict], cold: dict[str, float]) -> None:
    """Print the CPU by step (with ``--cpu``), each step run by run with its min / median / max, and the cold start."""
    if any(cpu):
        print("CPU seconds by step and process (half-second samples; run by run):")
        for name, _ in [*STEPS, ("rest", None)]:
            for i, c in enumerate(cpu):
                if c.get(name):
                    print(f"  {name:20s} run{i + 1} " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                                sorted(c[name].items(), key=lambda kv: -kv[1])))
    print(f"{'step':24s} " + " ".join(f"run{i + 1:>5d}" for i in range(len(per_run))) + "      min  median     max")
    for k, s in stats.items():
        vals = " ".join(f"{r[k]:8.2f}" if r.get(k) is not None else "       -" for r in per_run)
        print(f"{k:24s} {vals}  {s['min']:7.2f} {s['median']:7.2f} {s['max']:7.2f}")
    for k, v in cold.items():
        print(f"{k:24s} {v:8.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--label", default="after", help="the key the results go under (before, after)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--cpu", action="store_true", help="also the CPU seconds of each step by process")
    ap.add_argument("--keep", type=Path, help="pytest's --basetemp: keep the runs' directories (driver logs) there")
    ap.add_argument("--spark", choices=("standalone", "k8s"), default="standalone", help="the cluster manager")
    ap.add_argument("--deploy-mode", choices=("client", "cluster"), default="client")
    ap.add_argument("--history", choices=("fresh", "shared"), default="fresh",
                    help="shared: the runs are windows of one running job (--chaos-history=shared)")
    args = ap.parse_args()
    job = str(ROOT / "tests" / "chaos" / "jobs" / "orders_to_shipments.py")
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        test = Path(tmp) / "test_overhead.py"
        mark = f"(spark={args.spark!r})" if args.spark != "standalone" else ""
        test.write_text(TEST.format(job=job, rate=args.rate, duration=args.duration, mark=mark,
                                    mode=args.deploy_mode))
        out = Path(tmp) / "rows.jsonl"
        env = {**os.environ, "OVH_RUNS": str(args.runs), "OVH_OUT": str(out), "PYTHONPATH": str(ROOT),
               "OVH_CPU": "1" if args.cpu else "0"}
        started = time.monotonic()
        keep = [f"--basetemp={args.keep}"] if args.keep else []
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider",
                            "--rootdir", tmp, f"--chaos-history={args.history}", *keep], cwd=ROOT, env=env)
        session_s = time.monotonic() - started
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    warm = [r for r in rows if r["warm"]]
    if not warm:
        print("no measured run completed", file=sys.stderr)
        return 1
    shared = args.history == "shared"
    per_run = [window_breakdown(r, args.duration) if shared else breakdown(r) for r in warm]
    stats = summary(per_run)
    cold = {"cold_stack_setup": round(rows[0]["setup_s"], 2)} if not rows[0]["warm"] else {}
    cold |= {f"k8s_start_{k}": round(v, 2) for k, v in rows[0].get("stack_start", {}).items()}
    cpu = [cpu_breakdown(r) for r in warm]
    show(per_run, stats, cpu, cold)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    saved[args.label] = {
        "scenario": f"tests/chaos/jobs/orders_to_shipments.py, no fault, rate {args.rate}, {args.duration:g} s load, "
                    f"warm stack (one unmeasured run first), spark {args.spark}, {args.deploy_mode} mode, "
                    f"history {args.history}",
        "first_run": window_breakdown(rows[0], args.duration) if shared else breakdown(rows[0]),
        "stack_start": cold,
        "commit": commit, "date": time.strftime("%Y-%m-%d"), "session_s": round(session_s, 1),
        "load_average": [round(r["load_average"], 1) for r in warm], "runs": per_run, "summary": stats, "cpu": cpu,
        "pytest_exit": p.returncode}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(saved, indent=1))
    print(f"wrote {args.out} ({args.label})")
    return 0 if p.returncode == 0 else p.returncode


if __name__ == "__main__":
    sys.exit(main())
