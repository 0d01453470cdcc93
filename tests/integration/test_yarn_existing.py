"""An existing YARN and an existing Kafka: both brought up outside pytest (``python -m
pytest_streamchaos.stack up yarn --conf-out DIR`` and ``... up kafka --conf-out DIR --port 9092``), then a chaos
test run against them with only ``--chaos-yarn-conf DIR`` and ``--chaos-kafka-bootstrap HOST:PORT``: the
plugin starts no YARN and no broker, the user's job gets its verdict under an executor kill through YARN's API
with its records in that Kafka, and faults that need host access (``kill_worker``, ``kill_broker``) are
refused in one line each before the job starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stack_helpers import processes_under

from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.cli import STATE_FILE
from pytest_streamchaos.stack.cli import main as stack_cli
from pytest_streamchaos.stack.process import ManagedProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
INNER = '''
import pytest
from pytest_streamchaos import JobSetup, Load, Watch, kill_broker, kill_executor, kill_worker

RUN = dict(guarantee="at-least-once", setup=JobSetup(args=["{checkpoint_dir}"], kafka_port=9092),
           load=Load(rate=100, inputs={"orders": None}), watch=Watch(outputs={"shipments": None}))

@pytest.mark.chaos
@kill_executor(after=8)
def test_executor_kill(chaos, kafka):
    assert kafka.manager == "attached" and kafka.bootstrap_servers == "%(bootstrap)s"  # nothing started
    run = chaos.run("%(job)s", **RUN)
    print(run.describe())
    assert run.lost == 0 and any(e.kind == "yarn_container_completed" for e in run.timeline)
    assert not [e for e in run.timeline if e.kind == "controller_elected"], "no controller moves: none was made"

@pytest.mark.chaos
@kill_worker(after=8)
def test_worker_kill_is_refused(chaos):
    chaos.run("%(job)s", **RUN)

@pytest.mark.chaos
@kill_broker(after=8)
def test_broker_kill_is_refused(chaos):
    chaos.run("%(job)s", **RUN)
'''


def up(what: str, conf: Path, tmp_path: Path, env: dict, *extra: str) -> ManagedProcess:
    """``python -m pytest_streamchaos.stack up WHAT --conf-out CONF``, awaited until it says it is up."""
    proc = ManagedProcess([sys.executable, "-m", "pytest_streamchaos.stack", "up", what, "--conf-out", str(conf),
                           *extra], env=env, log_path=tmp_path / f"up-{what}.log", cwd=ROOT)
    wait_for(lambda: " up in " in proc.log_since_start() or not proc.alive, 120, f"`up {what}` to report it is up",
             lambda: proc.tail_log(5))
    assert proc.alive, proc.tail_log(30)
    return proc


def records_in(bootstrap: str, topic: str) -> int:
    """How many records ``topic`` holds on the Kafka at ``bootstrap`` (its partitions' high watermarks)."""
    from confluent_kafka import Consumer, TopicPartition

    from pytest_streamchaos.stack.kraft.attached import AttachedKafka

    parts = AttachedKafka(bootstrap).partition_states(topic) or {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "streamchaos-test-count"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts)
    finally:
        consumer.close()


def test_a_chaos_test_on_a_yarn_and_a_kafka_known_only_by_their_addresses(tmp_path: Path) -> None:
    yarn_conf, kafka_conf = tmp_path / "hadoop-conf", tmp_path / "kafka-conf"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs: list[tuple[str, Path, ManagedProcess]] = []
    workdirs = []
    try:
        for what, conf, extra in (("yarn", yarn_conf, ()), ("kafka", kafka_conf, ("--port", "9092"))):
            procs.append((what, conf, up(what, conf, tmp_path, env, *extra)))
            workdirs.append(json.loads((conf / STATE_FILE).read_text())["workdir"])
        bootstrap = json.loads((kafka_conf / STATE_FILE).read_text())["bootstrap"]
        test = tmp_path / "test_on_existing.py"
        test.write_text(INNER % {"job": ROOT / "tests" / "chaos" / "jobs" / "orders_to_shipments.py",
                                 "bootstrap": bootstrap})
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-p", "no:cacheprovider", "-q", "-s",
                            "--chaos-yarn-conf", str(yarn_conf), "--chaos-kafka-bootstrap", bootstrap,
                            "--rootdir", str(tmp_path)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        out = p.stdout + p.stderr
        print(out[-4000:])
        assert "1 passed" in out and "2 error" in out, out[-3000:]  # the refusals fail the tests at their setup
        for mark, why in (("@kill_worker cannot run on the yarn Spark cluster", "WorkerKill"),
                          ("@kill_broker cannot run on the attached Kafka", "BrokerKill")):
            assert [line for line in out.splitlines() if mark in line and why in line], \
                f"{mark} on an attached cluster is refused in one line, naming why"
        for refused in ("test_worker_kill_is_refused", "test_broker_kill_is_refused"):
            assert "job_submitted" not in out.split(refused)[-1], "refused before the job started"
        assert records_in(bootstrap, "shipments") > 0, "the job wrote its output to the attached Kafka"
    finally:
        for what, conf, proc in reversed(procs):
            if proc.alive:
                assert stack_cli(["down", what, "--conf-out", str(conf)]) == 0
            proc.terminate()
    for _, _, proc in procs:
        assert proc.returncode == 0, proc.tail_log(20)
    for workdir in workdirs:
        assert not processes_under(Path(workdir)), f"`down` left a process of {workdir} running"
        assert not Path(workdir).exists(), "`up` removed its temporary workdir"
