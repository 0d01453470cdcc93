"""The docker backend's machinery on a real Docker daemon: clean-up after a SIGKILLed pytest, the
sweep of an earlier session's leftovers, and one-line errors for no daemon and an absent image.
Skipped without a daemon (``./dev`` starts one)."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.base import StackError

docker = pytest.importorskip("docker")

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client():
    from pytest_streamchaos.stack.docker.engine import connect

    try:
        c = connect()
    except StackError as exc:
        pytest.skip(str(exc))
    yield c
    c.close()


def _labelled(client, session_id):
    from pytest_streamchaos.stack.docker.engine import LABEL

    sel = {"label": f"{LABEL}={session_id}"}
    return ([c.name for c in client.containers.list(all=True, ignore_removed=True, filters=sel)]
            + [n.name for n in client.networks.list(filters=sel)])


_OWNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from pytest_streamchaos.stack.docker import engine, images
    from pytest_streamchaos.stack.docker.container import ContainerProcess
    from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster
    s = engine.DockerSession(engine.connect()).open()
    k = DockerKafkaCluster(sys.argv[1] + "/kafka", brokers=1, session=s)
    k.start()
    mounts = images.host_mounts(Path("/usr"), rw=(sys.argv[1],))
    ContainerProcess(s, images.host_runtime_image(s.client), ["sleep", "600"], env={}, name=s.id + "-sleeper",
                     log_path=sys.argv[1] + "/x.log", ip=s.next_ip(), volumes=mounts)
    print(s.id, flush=True)
    sys.stdin.read()
""")


def test_a_sigkilled_owner_leaves_no_container_or_network(client, tmp_path):
    """pytest dies by SIGKILL with a broker's container, a daemon's container and the network up:
    the reaper removes them all."""
    proc = subprocess.Popen([sys.executable, "-c", _OWNER, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        session_id = proc.stdout.readline().strip()
        assert session_id.startswith("sc-"), session_id
        assert len(_labelled(client, session_id)) == 3  # brokers, sleeper, network
        assert client.containers.get(f"{session_id}-sleeper").status == "running"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        wait_for(lambda: not _labelled(client, session_id), 30, "the session's containers and network removed",
                 lambda: _labelled(client, session_id))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_the_next_session_sweeps_what_a_dead_owner_left(client):
    """A reaper that was itself killed leaves containers behind; the next session removes those whose
    owner process is gone, and nothing of a live owner."""
    from pytest_streamchaos.stack.docker import engine, images

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    image = images.host_runtime_image(client)
    mine = {engine.LABEL: "sc-test-sweep-dead", engine.OWNER: engine.owner_id(dead.pid)}
    alive = {engine.LABEL: "sc-test-sweep-alive", engine.OWNER: engine.owner_id()}
    created = [client.containers.create(image, ["true"], labels=labels) for labels in (mine, alive)]
    try:
        removed = engine.sweep_orphans(client)
        assert created[0].name in removed and created[1].name not in removed
        assert not _labelled(client, "sc-test-sweep-dead")
        assert _labelled(client, "sc-test-sweep-alive") == [created[1].name]
    finally:
        for c in created:
            try:
                c.remove(force=True)
            except docker.errors.NotFound:
                pass


def test_no_daemon_is_one_line_naming_the_fix(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    pytester.makepyfile("def test_never_runs(): raise AssertionError('ran')\n")
    result = pytester.runpytest("--chaos-backend=docker")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(lines) == 1 and "no Docker daemon answers at unix:///nonexistent.sock" in lines[0], result.stderr.lines
    assert "fix: start the Docker daemon" in lines[0]


def test_an_absent_image_that_cannot_be_pulled_is_one_line(client, pytester: pytest.Pytester):
    pytester.makepyfile("def test_never_runs(): raise AssertionError('ran')\n")
    result = pytester.runpytest("--chaos-backend=docker", "--chaos-docker-image=streamchaos-test/absent:0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert len(lines) == 1 and "image 'streamchaos-test/absent:0' is not on this Docker host" in lines[0], lines
    assert "cannot be pulled; fix:" in lines[0]



def test_a_hard_coded_localhost_port_is_refused_naming_the_fix(client, tmp_path):
    """A job that hard-codes localhost:9092 cannot reach brokers from executors in containers: the
    docker brokers refuse the fixed port at once rather than let the job wait for nothing."""
    from pytest_streamchaos.stack.docker import engine
    from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster

    session = engine.DockerSession(client).open()
    try:
        k = DockerKafkaCluster(tmp_path / "kafka", brokers=1, session=session)
        with pytest.raises(StackError, match=r"cannot serve a job that hard-codes localhost:9092.*fix: pass the "
                                             r"bootstrap servers"):
            k.listen(9092)
    finally:
        session.close()
    assert not _labelled(client, session.id)
