"""The local Spark standalone cluster with real JVMs: shape, a real batch job, worker faults, healing,
HA failover, and nothing left behind when pytest itself is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from stack_helpers import inner_pytest

from pytest_streamchaos.stack.local import LocalSparkCluster
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.testing import pid_alive, wait_for

pytestmark = pytest.mark.integration

JOB = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.appName("streamchaos-smoke").getOrCreate()
    total = spark.range(0, 1000, numPartitions=4).selectExpr("sum(id) AS s").collect()[0]["s"]
    hosts = spark.sparkContext.parallelize(range(4), 4).map(lambda _: __import__("os").getpid()).distinct().count()
    print(f"RESULT sum={total} python_worker_pids={hosts}", flush=True)
    spark.stop()
""")






def test_master_and_workers_alive_on_loopback(spark_cluster: LocalSparkCluster):
    assert spark_cluster.master_url.startswith("spark://127.0.0.1:")
    master = spark_cluster.active_master()
    assert master.state()["status"] == "ALIVE"
    alive = spark_cluster.alive_workers()
    assert len(alive) == 2
    assert {w["port"] for w in alive} == {w.port for w in spark_cluster.workers}
    assert spark_cluster.effective_conf["spark.worker.timeout"] == "10"
    endpoints = {e.name: e for e in spark_cluster.endpoints()}
    assert set(endpoints) == {"master-0", "worker-0", "worker-1"}
    # Every listening socket of every daemon is on 127.0.0.1 and is one of the pinned ports.
    pinned = {p for e in endpoints.values() for p in e.ports.values()}
    for d in [*spark_cluster.masters, *spark_cluster.workers]:
        listening = [c.laddr for c in psutil.Process(d.pid).net_connections("inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening, f"{d.name} listens nowhere"
        assert all(a.ip == "127.0.0.1" for a in listening), (d.name, listening)
        assert {a.port for a in listening} <= pinned, (d.name, listening, pinned)
    assert all(w.pgid == w.pid for w in spark_cluster.workers)


def test_batch_job_runs_on_the_workers(spark_cluster: LocalSparkCluster, tmp_path: Path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = spark_cluster.driver_env()
    argv = [str(spark_cluster.env.spark_home / "bin" / "spark-submit"), "--master", spark_cluster.master_url,
            "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m",
            "--conf", "spark.executor.cores=1", "--conf", "spark.cores.max=2",
            "--conf", "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "--driver-memory", "512m", str(script)]
    driver = ManagedProcess(argv, env=env, log_path=tmp_path / "driver.log", name="driver")
    try:
        executors = wait_for(lambda: [p for w in spark_cluster.workers for p in w.executor_pids()]
                              or (not driver.alive and ["driver exited"]), 120, "executors on the workers")
        assert executors != ["driver exited"], driver.tail_log()
        code = driver.wait(240)
    finally:
        driver.terminate(5)
    log = driver.tail_log(200)
    assert code == 0, log
    assert "RESULT sum=499500 " in log, log
    apps = spark_cluster.active_master().state()["completedapps"]
    assert any(a["name"] == "streamchaos-smoke" for a in apps)


def test_kill_worker_then_heal(spark_cluster: LocalSparkCluster):
    victim = spark_cluster.workers[1]
    old_pid = victim.pid
    spark_cluster.kill_worker(1)
    assert not victim.alive and not pid_alive(old_pid)
    spark_cluster.wait_for_workers(1, timeout=30, exactly=True)  # a dropped connection is noticed at once
    spark_cluster.heal(timeout=90)
    assert len(spark_cluster.alive_workers()) == 2
    assert victim.alive and victim.pid != old_pid


def test_pause_resume_worker(spark_cluster: LocalSparkCluster):
    w = spark_cluster.workers[0]
    spark_cluster.pause_worker(0)
    try:
        assert psutil.Process(w.pid).status() == psutil.STATUS_STOPPED
        # A frozen worker keeps its connection open; only the heartbeat timeout (10 s, checked every
        # 10 s) declares it dead.
        spark_cluster.wait_for_workers(1, timeout=60, exactly=True)
    finally:
        spark_cluster.resume_worker(0)
    assert psutil.Process(w.pid).status() != psutil.STATUS_STOPPED
    spark_cluster.wait_for_workers(2, timeout=60)  # it heartbeats again and is asked to re-register


def test_restart_worker_keeps_ports(spark_cluster: LocalSparkCluster):
    w = spark_cluster.workers[0]
    port, old = w.port, w.pid
    spark_cluster.restart_worker(0)
    spark_cluster.wait_for_workers(2, timeout=60)
    assert w.pid != old and w.port == port
    assert port in {x["port"] for x in spark_cluster.alive_workers()}


INNER = """
import json, os, time
from pathlib import Path

def test_hold_cluster(spark_cluster):
    procs = spark_cluster.processes()
    Path(os.environ["SC_RECORD"]).write_text(json.dumps(
        {"pids": [p.pid for p in procs], "pgids": [p.pgid for p in procs], "pytest": os.getpid()}))
    # Held until the outer test SIGKILLs this pytest process.
    while True:
        time.sleep(1)
"""


def test_sigkilled_pytest_leaves_no_jvm(pytester: pytest.Pytester, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch):
    pytester.makepyfile(test_inner=INNER)
    record = tmp_path / "record.json"
    inner, recorded = inner_pytest(pytester, tmp_path, monkeypatch, "--chaos-workers", "1")
    try:
        info = json.loads(wait_for(recorded, 150, "the inner pytest to start its cluster"))
        assert len(info["pids"]) == 2 and all(pid_alive(p) for p in info["pids"])
        os.kill(info["pytest"], signal.SIGKILL)
        inner.wait(10)

        def leftovers():
            pids = [p.pid for p in psutil.process_iter()
                    if p.pid in info["pids"] or _pgid(p.pid) in info["pgids"]]
            return [p for p in pids if pid_alive(p)]

        wait_for(lambda: not leftovers(), 15, "every JVM of the killed pytest to be gone")
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait()
        for pgid in json.loads(record.read_text())["pgids"] if record.exists() else []:
            try:
                os.killpg(pgid, signal.SIGKILL)  # only our own recorded groups; normally already gone
            except ProcessLookupError:
                pass


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def test_ha_failover(tmp_path: Path):
    # ~30 s on the shared 2-core machine (cold start of ZooKeeper + 2 masters + 2 workers, then a
    # failover of ~3-5 s bounded by ZooKeeper's 4 s session cap), so not marked slow.
    with LocalSparkCluster(tmp_path, workers=2, ha=True, start_timeout=120) as cluster:
        assert "," in cluster.master_url
        first = cluster.active_master()
        standby = next(m for m in cluster.masters if m is not first)
        assert standby.state()["status"] == "STANDBY"
        t0 = time.monotonic()
        cluster.kill_master()
        assert not first.alive
        wait_for(lambda: (standby.state() or {}).get("status") == "ALIVE", 90,
                  "the standby master to become ALIVE")
        cluster.wait_for_workers(2, timeout=60)
        assert cluster.active_master() is standby
        failover_s = time.monotonic() - t0
        print(f"HA failover: standby ALIVE with 2 workers after {failover_s:.1f}s")
        cluster.heal(timeout=90)  # the killed master comes back as the new standby
        wait_for(lambda: (first.state() or {}).get("status") == "STANDBY", 60, "the old master as STANDBY")
    assert not any(pid_alive(p.pid) for p in cluster.processes())
