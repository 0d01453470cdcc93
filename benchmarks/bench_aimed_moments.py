"""Hit rates of aimed faults per micro-batch phase: the checkpoint gate against polling (issue 33).

One warm job (``tests/integration/jobs/rate_counts_to_files.py``: a stateful aggregation written per
micro-batch by ``foreachBatch``, local-filesystem checkpoint) on a 2-worker standalone cluster; the
fault is fired ``--trials`` times per phase, the driver restarted after each driver kill. Whether a
fault landed in its phase is judged from what the fault left, never from the detector's own word:

- driver kills: the checkpoint and output files once the driver is gone -- ``commits/N`` there and
  ``offsets/N+1`` not (between batches); ``offsets/N`` and not ``commits/N`` with batch N's output
  visible (``_SUCCESS``: output visible, not committed), or with neither output nor state written
  (offsets logged, no task yet);
- executor kills: the state file the held task was renaming is not there when the executor is gone
  (state commit); Spark's event log shows a task lost with the executor (tasks running).

Aimers: ``gate`` (the checkpoint gate holds the thread in the rename); ``poll`` (what
``faults/actions.py`` does today: poll the checkpoint and output every 5 ms, SIGSTOP the driver when
the moment shows, check, kill or resume and try the next batch). Run under the heavy lock::

    flock /tmp/sc/heavy.lock python benchmarks/bench_aimed_moments.py [--trials 20] [--phases ...]

Prints a table and writes ``benchmarks/results/aimed_moments.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_streamchaos.faults.gate_moments import GATED, base_batch
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.poll import poll
from pytest_streamchaos.spark.launcher import JobLauncher
from pytest_streamchaos.stack.checkpoint_gate import CheckpointGate
from pytest_streamchaos.stack.local import LocalSparkCluster
from pytest_streamchaos.testing import wait_for

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests/integration/jobs/rate_counts_to_files.py"
RESULTS = Path(__file__).parent / "results" / "aimed_moments.json"
POLL_S = 0.005


class Bench:
    """The warm job, its gate, its checkpoint and output."""

    def __init__(self, cluster: LocalSparkCluster, wd: Path) -> None:
        self.cluster = cluster
        self.gate = CheckpointGate(wd / "gate")
        self.out, self.cp = wd / "out", wd / "cp"
        self.out.mkdir()
        self.launcher = JobLauncher.for_cluster(cluster, wd / "jobs")
        env = {**self.gate.env(), "RATE_OUT_DIR": str(self.out), "STREAMCHAOS_CHECKPOINT_DIR": str(self.cp)}
        self.job = self.launcher.submit(JOB, env=env, conf=self.gate.executor_conf())
        self.watcher = CheckpointWatcher(self.cp)
        self.committed_past(-1)

    def committed_past(self, n: int, timeout: float = 180) -> None:
        wait_for(lambda: (self.watcher.latest_committed_batch() or -1) > n, timeout, f"a batch after {n} committed",
                 lambda: self.job.tail_log(5))

    def has(self, *parts: str) -> bool:
        return self.cp.joinpath(*parts).exists()

    def landed(self, n: int) -> str:
        """The phase batch ``n`` was in when the driver died, from the files it left."""
        if self.has("commits", str(n)):
            return "between_batches" if not self.has("offsets", str(n + 1)) else "later"
        if not self.has("offsets", str(n)):
            return "earlier"
        if (self.out / f"batch={n}" / "_SUCCESS").exists():
            return "output_visible_uncommitted"
        state = self.cp / "state"
        deltas = list(state.rglob(f"{n + 1}.delta")) if state.exists() else []
        return "tasks_running" if deltas or (self.out / f"batch={n}").exists() else "offsets_logged"

    def restart_after(self, n: int) -> None:
        self.gate.disarm()
        self.job.restart()
        self.committed_past(n)

    def close(self) -> None:
        self.gate.close()
        self.launcher.stop_all()


def gate_driver(b: Bench, phase: str) -> dict[str, Any]:
    log, when, shift = GATED[phase]
    b.gate.arm(log, when, base_batch(b.watcher) + shift)
    held = b.gate.wait_held(60)
    if held is None:
        return {"hit": False, "landed": "no hold within 60 s"}
    t_kill = time.time()
    b.job.kill(wait=False)
    b.gate.release()
    b.job.wait_gone(15)
    n = held.batch - shift
    landed = b.landed(n)
    b.restart_after(n)
    return {"hit": landed == phase, "landed": landed, "batch": n, "attempts": 1,
            "hold_to_kill_ms": round((t_kill - held.t) * 1000, 2)}


def _first(found, timeout: float) -> Any:
    """Poll ``found`` every 5 ms (as the aimed faults do) until it returns something; None at the timeout."""
    try:
        return poll(found, timeout, lambda _: TimeoutError(), interval=POLL_S)
    except TimeoutError:
        return None


def poll_output_uncommitted(b: Bench, phase: str) -> dict[str, Any]:
    """Today's detector on a file sink: batch N's ``_SUCCESS`` seen and ``commits/N`` not: SIGSTOP, check,
    then kill, or resume and try the next batch (at most 5)."""
    tried: list[int] = []

    def moment() -> tuple[int] | None:
        n = b.watcher.uncommitted_batch()
        if n is None or n in tried or not (b.out / f"batch={n}" / "_SUCCESS").exists():
            return None
        b.job.pause()
        tried.append(n)
        if not b.has("commits", str(n)) or len(tried) >= 5:
            return (n,)
        b.job.resume()
        return None

    got = _first(moment, 120)
    if got is None:
        return {"hit": False, "landed": "moment not seen within 120 s", "attempts": len(tried)}
    (n,) = got
    b.job.kill(wait=False)
    b.job.wait_gone(15)
    landed = b.landed(n)
    b.restart_after(n)
    return {"hit": landed == phase, "landed": landed, "batch": n, "attempts": len(tried)}


def gate_executor(b: Bench, phase: str) -> dict[str, Any]:
    """A task held by the gate in an executor (a state store's delta, or its output's rename): kill that
    executor. Hit: the held file never got its name (state commit) / Spark lost a task with it (tasks running)."""
    log, when, shift = GATED[phase]
    n = base_batch(b.watcher)
    b.gate.arm(log, when, 0 if shift is None else n + shift)
    held = b.gate.wait_held(60)
    if held is None:
        return {"hit": False, "landed": "no hold within 60 s"}
    executors = [e for i in range(len(b.cluster.workers)) for e in b.cluster.executors(i)]
    if held.pid not in executors:
        b.gate.release()
        return {"hit": False, "landed": f"held by pid {held.pid}, not an executor {executors}"}
    t_kill = time.time()
    b.cluster.kill_executor(held.pid, signal.SIGKILL)
    b.gate.release()
    wait_for(lambda: b.cluster.executor_state(held.pid) is None, 15, f"executor {held.pid} gone")
    gone = not Path(held.path).exists()
    b.gate.disarm()
    batch = n if shift is None else held.batch - shift
    b.committed_past(batch, timeout=240)  # the batch's tasks retried elsewhere, the batch committed
    hit = gone if phase == "state_commit" else lost_tasks_since(b, t_kill) > 0
    return {"hit": hit, "landed": phase if hit else "not in flight", "batch": batch, "attempts": 1}


def lost_tasks_since(b: Bench, t: float) -> int:
    """Tasks Spark reports lost with their executor (``ExecutorLostFailure``) that ended after ``t``."""
    n = 0
    for f in b.job.event_log_dir.iterdir():
        for line in f.read_text(errors="replace").splitlines():
            if '"ExecutorLostFailure"' in line:
                ev = json.loads(line)
                if (ev.get("Task Info") or {}).get("Finish Time", 0) / 1000 >= t:
                    n += 1
    return n


def poll_tasks_running(b: Bench, phase: str) -> dict[str, Any]:
    """Today's detector: a batch planned, not committed, the worker runs an executor: kill it."""
    def moment() -> tuple[int, int] | None:
        n, found = b.watcher.uncommitted_batch(), b.cluster.executors(0)
        return (n, found[0]) if n is not None and found else None

    got = _first(moment, 120)
    if got is None:
        return {"hit": False, "landed": "moment not seen within 120 s"}
    n, executor = got
    t_kill = time.time()
    b.cluster.kill_executor(executor, signal.SIGKILL)
    b.committed_past(n, timeout=240)
    lost = lost_tasks_since(b, t_kill)
    return {"hit": lost > 0, "landed": "tasks_running" if lost else "no task lost", "batch": n, "attempts": 1}


AIMERS = {
    ("gate", "output_visible_uncommitted"): gate_driver,
    ("gate", "between_batches"): gate_driver,
    ("gate", "offsets_logged"): gate_driver,
    ("gate", "state_commit"): gate_executor,
    ("gate", "tasks_running"): gate_executor,
    ("poll", "output_visible_uncommitted"): poll_output_uncommitted,
    ("poll", "tasks_running"): poll_tasks_running,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--aimers", nargs="*", default=[f"{a}:{p}" for a, p in AIMERS])
    args = ap.parse_args()
    chosen = [tuple(x.split(":", 1)) for x in args.aimers]
    results: dict[str, Any] = {"trials": args.trials, "load_avg_1m": os.getloadavg()[0], "rows": []}
    with tempfile.TemporaryDirectory(prefix="bench-aim-") as wd:
        cluster = LocalSparkCluster(wd, workers=2)
        cluster.start()
        try:
            bench = Bench(cluster, Path(wd))
            try:
                for aimer, phase in chosen:
                    trials = []
                    for _ in range(args.trials):
                        t0 = time.time()
                        trials.append({**AIMERS[(aimer, phase)](bench, phase), "s": round(time.time() - t0, 1)})
                        print(aimer, phase, trials[-1], flush=True)
                    hits = sum(t["hit"] for t in trials)
                    results["rows"].append({"aimer": aimer, "phase": phase, "hits": hits, "trials": len(trials),
                                            "attempts": sum(t.get("attempts", 1) for t in trials), "runs": trials})
            finally:
                bench.close()
        finally:
            cluster.stop()
    # rows of earlier runs (other aimers) are kept: the phases can be measured in several locked sessions
    earlier = json.loads(RESULTS.read_text()).get("rows", []) if RESULTS.exists() else []
    done = {(r["aimer"], r["phase"]) for r in results["rows"]}
    results["rows"] = [r for r in earlier if (r["aimer"], r["phase"]) not in done] + results["rows"]
    print(f"\n{'aimer':6} {'phase':28} {'hits':>10} {'attempts':>9}")
    for r in results["rows"]:
        print(f"{r['aimer']:6} {r['phase']:28} {r['hits']:>4}/{r['trials']:<5} {r['attempts']:>9}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
