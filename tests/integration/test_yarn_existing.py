"""An existing YARN: brought up outside pytest (``python -m pytest_streamchaos.stack up yarn --conf-out
DIR``), then used only through that conf dir -- the job submitted to it, an executor's container killed
through YARN's API, every record through -- and a fault that needs host access refused in one line."""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest
from yarn_helpers import Traffic, processes_under

from pytest_streamchaos.faults.scheduler import Recorder
from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.spark.launcher import spark_home
from pytest_streamchaos.spark.yarn import YarnSubmitter
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.yarn.attach import attach
from pytest_streamchaos.stack.yarn.cli import STATE_FILE
from pytest_streamchaos.stack.yarn.cli import main as stack_cli
from pytest_streamchaos.stack.yarn.faults import YarnAppFaults
from pytest_streamchaos.stack.yarn.watcher import YarnWatcher

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "jobs" / "kafka_format_passthrough.py"


def test_a_job_on_a_yarn_known_only_by_its_conf_dir_survives_an_executor_kill(kafka, tmp_path: Path) -> None:
    conf = tmp_path / "hadoop-conf"
    up = ManagedProcess([sys.executable, "-m", "pytest_streamchaos.stack", "up", "yarn", "--conf-out", str(conf)],
                        env={**os.environ, "PYTHONPATH": str(ROOT)}, log_path=tmp_path / "up.log", cwd=ROOT)
    submitter = traffic = watcher = None
    try:
        wait_for(lambda: "YARN up in" in up.log_since_start() or not up.alive, 120, "`up` to report the cluster up",
                 lambda: up.tail_log(5))
        assert up.alive, up.tail_log(30)
        yarn = attach(conf)  # from here on: only the conf dir
        assert not yarn.host_access
        name = f"existing-{uuid.uuid4().hex[:6]}"
        src, out = kafka.create_topic(f"{name}-in", 2), kafka.create_topic(f"{name}-out", 2)
        env = {"STREAMCHAOS_BOOTSTRAP_SERVERS": kafka.job_bootstrap_servers, "STREAMCHAOS_INPUT_TOPIC": src,
               "STREAMCHAOS_OUTPUT_TOPIC": out, "STREAMCHAOS_CHECKPOINT_DIR": str(tmp_path / "checkpoint")}
        # what a user whose nodes have Spark installed sets (EMR does the same): Spark's jars are not uploaded
        submitter = YarnSubmitter(yarn, tmp_path / "jobs", conf={"spark.yarn.jars": f"local:{spark_home()}/jars/*"})
        job = submitter.submit(JOB, env=env)
        app = job.wait_for_state("RUNNING", timeout=120)
        recorder = Recorder()
        watcher = YarnWatcher(yarn.api, recorder, app_ids=(app.id,), interval=0.25).start()
        traffic = Traffic(kafka.bootstrap_servers, src, out)
        job.progress.wait_for(lambda p: len(p.batches) >= 1, 120, "the query's first micro-batch")
        traffic.send(range(0, 100))
        traffic.wait_all(range(0, 100), 60, "before the fault")
        faults = YarnAppFaults(yarn.api, app.id)
        faults.wait_executors(2, 60)
        kill = faults.kill_executor(1)
        wait_for(lambda: [e for e in recorder.events() if e.kind == "yarn_container_completed"
                          and e.target == kill.container.id], 15, "YARN to report the container completed")
        traffic.send(range(100, 200))
        last = traffic.wait_all(range(0, 200), 120, "after the executor's loss")
        print(f"\nexisting YARN: executor kill -> every record through in {last - kill.requested_at:.1f}s")
    finally:
        for thing in (traffic, watcher):
            if thing is not None:
                thing.close() if isinstance(thing, Traffic) else thing.stop()
        if submitter is not None:
            submitter.stop_all()
        workdir = json.loads((conf / STATE_FILE).read_text())["workdir"] if (conf / STATE_FILE).exists() else None
        if up.alive:
            assert stack_cli(["down", "yarn", "--conf-out", str(conf)]) == 0
        up.terminate()
    assert up.returncode == 0, up.tail_log(20)
    assert workdir and not processes_under(Path(workdir)), "`down` left a YARN daemon or container running"
    assert not Path(workdir).exists(), "`up` removed its temporary workdir"
