"""The mini YARN's cost: from nothing to an accepted application (the RM and two NodeManagers started
and ready, a job submitted ``--master yarn``, YARN's ACCEPTED / RUNNING), the memory of the daemons and
of a running application's containers. Run it under the heavy lock:

    flock /tmp/sc/heavy.lock python benchmarks/bench_yarn.py

The recovery numbers (AM kill, executor kill) come from the chaos tests' runs (docs/yarn.md)."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_streamchaos.poll import wait_for  # noqa: E402
from pytest_streamchaos.spark.launcher import JobLauncher  # noqa: E402
from pytest_streamchaos.stack.yarn.spark import YarnSparkCluster  # noqa: E402

JOB = ROOT / "tests" / "integration" / "jobs" / "batch_count.py"


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-yarn-") as tmp:
        t0 = time.monotonic()
        cluster = YarnSparkCluster.mini(Path(tmp) / "yarn")
        try:
            cluster.start()
            ready = time.monotonic() - t0
            local = cluster.local
            assert local is not None
            idle = rss_mb([p.pid for p in local.processes()])
            job = JobLauncher.for_cluster(cluster, Path(tmp) / "jobs").submit(JOB)
            wait_for(lambda: job.app_id is not None and cluster.api.app(job.app_id).state in ("ACCEPTED", "RUNNING"),
                     120, "YARN to accept the application")
            accepted = time.monotonic() - t0
            wait_for(lambda: cluster.api.app(job.app_id or "").state == "RUNNING" or not job.alive, 120,
                     "the application to run")
            containers = rss_mb([p for nm in local.nodemanagers for p in nm.container_processes()])
            job.inner.wait_for_exit(180)
            done = time.monotonic() - t0
        finally:
            cluster.stop()
    result = {"yarn_ready_s": round(ready, 1), "accepted_s": round(accepted, 1), "batch_job_done_s": round(done, 1),
              "daemons_rss_mb": round(idle), "containers_rss_mb_running": round(containers)}
    print(json.dumps(result))
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "yarn.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
