"""A user's Kafka-to-Kafka PySpark job (``format("kafka")``, unchanged) submitted ``--master yarn`` to the
mini YARN, in client and cluster deploy mode, with the stack's real brokers; and the faults through YARN:
an executor's container signalled, the ApplicationMaster's container signalled (cluster mode: YARN's
re-attempt is the driver's recovery), the loss of a NodeManager with its containers, an RM restart with
recovery -- each with YARN's own events on the timeline and every record through.

Timings are printed (``-s``), bounds are generous: the machine is shared."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from yarn_helpers import Traffic

from pytest_streamchaos.faults.scheduler import Recorder
from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.spark.yarn import YarnJob, YarnSubmitter
from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster
from pytest_streamchaos.stack.yarn.conf import NM_EXPIRY_S
from pytest_streamchaos.stack.yarn.faults import YarnAppFaults
from pytest_streamchaos.stack.yarn.watcher import YarnWatcher

pytestmark = pytest.mark.integration

JOB = Path(__file__).resolve().parent / "jobs" / "kafka_format_passthrough.py"


def report(what: str, value: str) -> None:
    print(f"\nYARN+Spark: {what}: {value}")


def memory(cluster: LocalYarnCluster, job: YarnJob) -> str:
    """RSS of the YARN daemons, of the containers (AM, executors and their Python workers) and of the
    driver (client mode: spark-submit's group here)."""
    def rss(pids: list[int]) -> float:
        total = 0
        for pid in pids:
            try:
                total += psutil.Process(pid).memory_info().rss
            except psutil.Error:
                continue
        return total / 2**20

    daemons = rss([p.pid for p in cluster.processes()])
    containers = rss([pid for nm in cluster.nodemanagers for pid in nm.container_processes()])
    driver = rss(job.process.members() if job.process is not None else [])
    return f"daemons {daemons:.0f} MB, containers {containers:.0f} MB, driver {driver:.0f} MB"


class Yarn:
    """The module's mini YARN and when its start began."""

    def __init__(self, cluster: LocalYarnCluster, started: float) -> None:
        self.cluster, self.started = cluster, started


@pytest.fixture(scope="module")
def yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Yarn]:
    cluster = LocalYarnCluster(tmp_path_factory.mktemp("yarn"))
    started = time.monotonic()
    try:
        cluster.start()
        yield Yarn(cluster, started)
    finally:
        cluster.stop()


@pytest.fixture
def healed(yarn: Yarn) -> LocalYarnCluster:
    yarn.cluster.heal()
    return yarn.cluster


class Run:
    """One submitted job with its traffic and YARN's timeline."""

    def __init__(self, job: YarnJob, traffic: Traffic, recorder: Recorder, faults: YarnAppFaults) -> None:
        self.job, self.traffic, self.recorder, self.faults = job, traffic, recorder, faults

    def events(self, kind: str) -> list:
        return [e for e in self.recorder.events() if e.kind == kind]


@pytest.fixture
def run_job(healed: LocalYarnCluster, kafka, tmp_path: Path):
    """Submit the job in a deploy mode, wait for its first micro-batch; everything stopped afterwards."""
    started: list = []

    def submit(deploy_mode: str, **conf: str) -> Run:
        name = f"yarn-{deploy_mode}-{uuid.uuid4().hex[:6]}"
        src, out = kafka.create_topic(f"{name}-in", 2), kafka.create_topic(f"{name}-out", 2)
        env = {"STREAMCHAOS_BOOTSTRAP_SERVERS": kafka.job_bootstrap_servers, "STREAMCHAOS_INPUT_TOPIC": src,
               "STREAMCHAOS_OUTPUT_TOPIC": out, "STREAMCHAOS_CHECKPOINT_DIR": str(tmp_path / "checkpoint")}
        job = YarnSubmitter(healed, tmp_path / "jobs").submit(JOB, deploy_mode=deploy_mode, env=env, conf=conf)
        started.append(job)
        app = job.wait_for_state("RUNNING", timeout=120)
        recorder = Recorder()
        watcher = YarnWatcher(healed.api, recorder, app_ids=(app.id,), interval=0.25).start()
        started.append(watcher)
        traffic = Traffic(kafka.bootstrap_servers, src, out)
        started.append(traffic)
        # startingOffsets latest: records count once the query has fixed where it starts (its first batch)
        job.progress.wait_for(lambda p: len(p.batches) >= 1, 120, "the query's first micro-batch")
        return Run(job, traffic, recorder, YarnAppFaults(healed.api, app.id))

    yield submit
    for thing in reversed(started):
        thing.stop() if not isinstance(thing, Traffic) else thing.close()


def test_client_mode_job_runs_and_an_executor_container_kill_is_replaced(yarn: Yarn, run_job) -> None:
    run = run_job("client")
    app = run.job.app()
    report("from nothing to RUNNING (cluster start, spark-submit, AM up)", f"{time.monotonic() - yarn.started:.1f}s")
    accepted = run.job.submitted_at
    assert app.state == "RUNNING" and run.job.tag in app.tags
    run.traffic.send(range(0, 200))
    run.traffic.wait_all(range(0, 200), 60, "before the fault")
    before = run.faults.wait_executors(2, 60)
    report("memory (RSS) with the job running", memory(yarn.cluster, run.job))
    kill = run.faults.kill_executor(0)
    report("executor container signal -> gone at the RM", f"{kill.gone_at - kill.requested_at:.2f}s")
    done = wait_for(lambda: [e for e in run.events("yarn_container_completed") if e.target == kill.container.id], 15,
                    "the watcher to see the killed container completed")
    report("its exit status", f"{done[0].detail['exit_status']} ({done[0].detail['diagnostics'][:80]!r})")
    assert done[0].detail["exit_status"] not in (None, 0) and not done[0].detail["am"]
    assert kill.requested_at - 1 <= done[0].t  # stamped when seen, never before the cause
    after = run.faults.wait_executors(2, 90)
    assert {c.id for c in after} - {c.id for c in before}, "YARN started a replacement executor container"
    run.traffic.send(range(200, 400))
    last = run.traffic.wait_all(range(0, 400), 120, "after the executor's loss")
    report("executor kill -> every record through", f"{last - kill.requested_at:.1f}s")
    assert accepted is not None


@pytest.mark.slow
def test_cluster_mode_am_kill_is_a_new_attempt_and_the_query_resumes(run_job) -> None:
    run = run_job("cluster")
    assert run.faults.attempt().number == 1
    run.traffic.send(range(0, 200))
    run.traffic.wait_all(range(0, 200), 60, "before the fault")
    kill, attempt = run.faults.kill_am()
    assert attempt is not None and attempt.number == 2, "YARN re-attempted the application"
    report("AM kill -> attempt 2 started", f"{attempt.start_time / 1000 - kill.requested_at:.1f}s")
    am_done = wait_for(lambda: [e for e in run.events("yarn_container_completed") if e.detail["am"]], 30,
                       "the watcher to see the AM's container completed")
    assert am_done[0].target == kill.container.id and am_done[0].detail["exit_status"] not in (None, 0)
    started = wait_for(lambda: [e for e in run.events("yarn_attempt_started") if e.detail["attempt"] == 2], 30,
                       "the watcher to see attempt 2")
    assert started[0].t >= kill.requested_at
    run.traffic.send(range(200, 400))
    last = run.traffic.wait_all(range(0, 400), 180, "after the driver's re-attempt")
    report("AM kill -> every record through (driver restarted by YARN, query from its checkpoint)",
           f"{last - kill.requested_at:.1f}s")


@pytest.mark.slow
def test_a_lost_nodemanager_moves_its_executors_and_an_rm_restart_keeps_the_application(healed, run_job) -> None:
    run = run_job("client")
    run.traffic.send(range(0, 100))
    run.traffic.wait_all(range(0, 100), 60, "before the faults")
    execs = run.faults.wait_executors(2, 60)
    am_node = run.faults.attempt().node_id
    victims = [nm for nm in healed.nodemanagers
               if not nm.is_node(am_node) and any(nm.is_node(c.node_id) for c in execs)]
    victim = victims[0] if victims else healed.nodemanager_of(execs[0].node_id)
    killed_at = time.time()
    healed.kill_nodemanager(victim.index)
    lost = wait_for(lambda: [e for e in run.events("yarn_node_lost") if victim.is_node(e.target)],
                    NM_EXPIRY_S + 20, "the watcher to see the node LOST")
    report("NodeManager loss -> LOST", f"{lost[0].t - killed_at:.1f}s")
    gone = [e for e in run.events("yarn_container_completed") if victim.is_node(e.detail["node"])]
    assert gone, "the lost node's containers completed"
    run.traffic.send(range(100, 200))
    run.traffic.wait_all(range(0, 200), 120, "after the node's loss")
    assert not any(victim.is_node(c.node_id) for c in run.faults.wait_executors(2, 60))
    app_id = run.job.app_id
    restart = time.monotonic()
    healed.restart_resourcemanager()
    report("RM restart -> ready", f"{time.monotonic() - restart:.1f}s")
    wait_for(lambda: run.events("yarn_rm_started"), 10, "the watcher to see the new RM")
    assert run.job.app().id == app_id and run.job.app().state == "RUNNING", "the application survived the restart"
    run.traffic.send(range(200, 300))
    run.traffic.wait_all(range(0, 300), 120, "after the RM restart")
