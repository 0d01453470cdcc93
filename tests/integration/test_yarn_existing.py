"""An existing YARN: brought up outside pytest (``python -m pytest_streamchaos.stack up yarn --conf-out
DIR``), then a chaos test run against it with only that conf dir (``--chaos-yarn-conf DIR``): the plugin
starts no YARN, the user's job gets its verdict under an executor kill through YARN's API, and a fault that
needs host access (``kill_worker``) is refused in one line before the job starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stack_helpers import processes_under

from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.yarn.cli import STATE_FILE
from pytest_streamchaos.stack.yarn.cli import main as stack_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
INNER = '''
import pytest
from pytest_streamchaos import JobSetup, Load, Watch, kill_executor, kill_worker

RUN = dict(guarantee="at-least-once", setup=JobSetup(args=["{checkpoint_dir}"], kafka_port=9092),
           load=Load(rate=100, inputs={"orders": None}), watch=Watch(outputs={"shipments": None}))

@pytest.mark.chaos
@kill_executor(after=8)
def test_executor_kill(chaos):
    run = chaos.run("%(job)s", **RUN)
    print(run.describe())
    assert run.lost == 0 and any(e.kind == "yarn_container_completed" for e in run.timeline)

@pytest.mark.chaos
@kill_worker(after=8)
def test_worker_kill_is_refused(chaos):
    chaos.run("%(job)s", **RUN)
'''


def test_a_chaos_test_on_a_yarn_known_only_by_its_conf_dir(tmp_path: Path) -> None:
    conf = tmp_path / "hadoop-conf"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up = ManagedProcess([sys.executable, "-m", "pytest_streamchaos.stack", "up", "yarn", "--conf-out", str(conf)],
                        env=env, log_path=tmp_path / "up.log", cwd=ROOT)
    workdir = None
    try:
        wait_for(lambda: "YARN up in" in up.log_since_start() or not up.alive, 120, "`up` to report the cluster up",
                 lambda: up.tail_log(5))
        assert up.alive, up.tail_log(30)
        workdir = json.loads((conf / STATE_FILE).read_text())["workdir"]
        test = tmp_path / "test_on_existing.py"
        test.write_text(INNER % {"job": ROOT / "tests" / "chaos" / "jobs" / "orders_to_shipments.py"})
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-p", "no:cacheprovider", "-q", "-s",
                            "--chaos-yarn-conf", str(conf), "--rootdir", str(tmp_path)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        out = p.stdout + p.stderr
        print(out[-4000:])
        assert "1 passed" in out and "1 error" in out, out[-3000:]  # the refusal fails the test at its setup
        refusal = [line for line in out.splitlines() if "@kill_worker:" in line and "attached" in line]
        assert refusal, "kill_worker on an attached YARN is refused in one line, naming why"
        assert "job_submitted" not in out.split("test_worker_kill_is_refused")[-1], "refused before the job started"
    finally:
        if up.alive:
            assert stack_cli(["down", "yarn", "--conf-out", str(conf)]) == 0
        up.terminate()
    assert up.returncode == 0, up.tail_log(20)
    assert workdir and not processes_under(Path(workdir)), "`down` left a YARN daemon or container running"
    assert not Path(workdir).exists(), "`up` removed its temporary workdir"
