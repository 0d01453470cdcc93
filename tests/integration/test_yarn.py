"""The mini YARN (stack/yarn/) on real JVMs, without Spark: start-up to ready, what its REST API says,
memory, the loss of a NodeManager and an RM restart as YARN sees them, the `up` / `down` commands and
attaching to the conf dir they publish, and bad input.

Timings and memory are printed (``-s`` shows them), asserted only as generous bounds: the machine is shared."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest
from stack_helpers import processes_under

from pytest_streamchaos.faults.scheduler import Recorder
from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.yarn.attach import attach
from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster
from pytest_streamchaos.stack.yarn.conf import NM_EXPIRY_S
from pytest_streamchaos.stack.yarn.watcher import YarnWatcher

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def report(what: str, value: str) -> None:
    print(f"\nYARN: {what}: {value}")


def test_cluster_comes_up_on_loopback_reports_its_nodes_and_stop_leaves_nothing(tmp_path: Path) -> None:
    cluster = LocalYarnCluster(tmp_path / "yarn")
    started = time.monotonic()
    try:
        info = cluster.start()
        report("up (RM + 2 NMs, RM STARTED/ACTIVE, both nodes RUNNING)", f"{time.monotonic() - started:.1f}s")
        assert info.state == "STARTED" and info.ha_state == "ACTIVE" and info.version.startswith("3.5.0")
        nodes = cluster.api.nodes()
        assert all(any(nm.is_node(n.id) for n in nodes) for nm in cluster.nodemanagers) and len(nodes) == 2
        assert all(n.state == "RUNNING" and n.available_mb >= 3 * 896 for n in nodes), nodes
        total = 0
        for d in [cluster.resourcemanager, *cluster.nodemanagers]:
            proc = psutil.Process(d.pid)
            listening = {c.laddr.ip for c in proc.net_connections("inet") if c.status == psutil.CONN_LISTEN}
            assert listening == {"127.0.0.1"}, f"{d.name} listens on {listening}"
            rss = proc.memory_info().rss / 2**20
            total += rss
            report(f"RSS {d.name}", f"{rss:.0f} MB (threads {proc.num_threads()})")
        report("RSS of the idle cluster", f"{total:.0f} MB")
    finally:
        cluster.stop()
    assert not processes_under(tmp_path / "yarn"), "a daemon outlived stop()"


@pytest.fixture
def yarn(tmp_path: Path):
    cluster = LocalYarnCluster(tmp_path / "yarn")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        assert not processes_under(tmp_path / "yarn"), "a daemon outlived stop()"


def test_a_lost_nodemanager_is_declared_lost_and_comes_back_and_an_rm_restart_recovers(yarn: LocalYarnCluster) -> None:
    rec = Recorder()
    with YarnWatcher(yarn.api, rec, interval=0.25):
        killed_at = time.time()
        nm = yarn.kill_nodemanager(1)
        assert not nm.processes()
        lost = wait_for(lambda: [e for e in rec.events() if e.kind == "yarn_node_lost"], NM_EXPIRY_S + 15,
                        "the RM to declare the killed NodeManager LOST")
        assert nm.is_node(lost[0].target)
        report("NodeManager kill -> LOST at the RM", f"{lost[0].t - killed_at:.1f}s")
        assert NM_EXPIRY_S - 1 <= lost[0].t - killed_at <= NM_EXPIRY_S + 10
        yarn.restart_nodemanager(1)
        wait_for(lambda: [e for e in rec.events() if e.kind == "yarn_node_running" and nm.is_node(e.target)], 10,
                 "the watcher to see the NodeManager RUNNING again")
        first = yarn.api.info().id
        restarted_at = time.monotonic()
        yarn.restart_resourcemanager()
        report("RM restart to ready (both nodes RUNNING)", f"{time.monotonic() - restarted_at:.1f}s")
        assert yarn.api.info().id != first
        wait_for(lambda: [e for e in rec.events() if e.kind == "yarn_rm_started"], 10, "the watcher to see the new RM")


def test_up_publishes_a_conf_dir_an_attachment_finds_and_down_stops_it(tmp_path: Path, capsys) -> None:
    from pytest_streamchaos.stack.cli import main

    conf = tmp_path / "conf"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up = ManagedProcess([sys.executable, "-m", "pytest_streamchaos.stack", "up", "yarn", "--conf-out", str(conf),
                         "--workdir", str(tmp_path / "work")], env=env, log_path=tmp_path / "up.log", cwd=ROOT)
    try:
        wait_for(lambda: "YARN up in" in up.log_since_start() or not up.alive, 120, "`up` to report the cluster up",
                 lambda: up.tail_log(5))
        assert up.alive, up.tail_log(30)
        report("`up`", up.log_since_start().split("streamchaos: ", 1)[1].splitlines()[0])
        yarn = attach(conf)
        assert yarn.info.state == "STARTED" and len([n for n in yarn.api.nodes() if n.state == "RUNNING"]) == 2
        assert main(["up", "yarn", "--conf-out", str(conf)]) == 1  # a second `up` for the same dir: one line
        assert "a YARN is already up for" in capsys.readouterr().err
        assert main(["down", "yarn", "--conf-out", str(conf)]) == 0
        assert up.wait(30) == 0
    finally:
        up.terminate()
    assert not processes_under(tmp_path / "work"), "`down` left a daemon running"
    with pytest.raises(StackError, match="no active YARN ResourceManager answers"):
        attach(conf)


def test_attach_refuses_a_conf_dir_that_is_not_a_reachable_yarn_in_one_line(tmp_path: Path) -> None:
    from pytest_streamchaos.stack.host import current
    from pytest_streamchaos.stack.yarn.conf import site_xml

    with pytest.raises(StackError, match="has no yarn-site.xml"):
        attach(tmp_path)
    nobody = f"127.0.0.1:{current().ports.free()}"
    (tmp_path / "yarn-site.xml").write_text(site_xml({"yarn.resourcemanager.webapp.address": nobody}))
    started = time.monotonic()
    with pytest.raises(StackError, match="no active YARN ResourceManager answers .*fix: start the cluster") as exc:
        attach(tmp_path)
    assert "\n" not in str(exc.value) and time.monotonic() - started < 10
