"""The job group: a network fault scoped to the job's connections cuts a process started as part of the
job and leaves the harness's own connections to the same port alone (the observer outside the blast
radius), and its probes cross the faulted path."""

import socket
import sys
import threading

import pytest

from pytest_streamchaos.netem import rules as net
from pytest_streamchaos.netem.features import network_features
from pytest_streamchaos.stack import jobgroup
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.testing import wait_for

# A client of the job: one TCP connect per line of stdin, answering "ok" or "fail".
CLIENT = r"""
import socket, sys
port = int(sys.argv[1])
for line in sys.stdin:
    s = socket.socket(); s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", port)); print("ok", flush=True)
    except OSError:
        print("fail", flush=True)
    finally:
        s.close()
"""


@pytest.fixture
def group(streamchaos_host):
    g = streamchaos_host.job_group
    if not g.available:
        pytest.skip(f"no job group on this host: {g.reason}")
    if network_features().missing("drop", "network_partition"):
        pytest.skip(network_features().missing("drop", "network_partition"))
    return g


@pytest.fixture
def server(streamchaos_host):
    srv = socket.socket()
    srv.bind(("127.0.0.1", streamchaos_host.ports.free()))
    srv.listen(64)
    stop = threading.Event()

    def serve():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
                c.close()
            except OSError:
                continue

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield srv.getsockname()[1]
    stop.set()
    th.join(2)
    srv.close()


def harness_connects(port: int) -> bool:
    s = socket.socket()
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


class JobClient:
    """A process of the job (started in the job group) that connects to ``port`` on request."""

    def __init__(self, port: int, group: jobgroup.JobGroup) -> None:
        import subprocess

        argv = group.wrap([sys.executable, "-c", CLIENT, str(port)])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def connects(self) -> bool:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip() == "ok"

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)


def test_a_partition_scoped_to_the_job_spares_the_harness(group, server, tmp_path):
    client = JobClient(server, group)
    try:
        wait_for(lambda: client.proc.pid in group.members(), timeout=5, what="the job's client in the group")
        assert client.connects() and harness_connects(server)
        fault = net.Partition([server]).only_marked(jobgroup.MARK, jobgroup.MASK)
        with fault:
            assert not client.connects(), "the job's connection should be cut"
            assert harness_connects(server), "the harness's connection to the same port must not be cut"
            assert fault.measure()["measured_loss"] == 1.0  # the probe crosses the job's path
        assert client.connects()
    finally:
        client.close()


def test_an_unscoped_partition_cuts_everyone(group, server, tmp_path):
    client = JobClient(server, group)
    try:
        with net.Partition([server]):
            assert not client.connects() and not harness_connects(server)
    finally:
        client.close()


def test_a_delay_scoped_to_the_job_delays_only_the_job(group, server):
    if network_features().missing("delay", "network_delay"):
        pytest.skip(network_features().missing("delay", "network_delay"))
    from pytest_streamchaos.netem import probe

    fault = net.NetworkDelay([server], ms=300, direction="both").only_marked(jobgroup.MARK, jobgroup.MASK)
    with fault:
        marked = probe.round_trip_ms(server, n=3, timeout=5, mark=jobgroup.MARK)
        unmarked = probe.round_trip_ms(server, n=3, timeout=5)
    assert marked is not None and marked >= 500, marked  # SYN and SYN-ACK held 300 ms each
    assert unmarked is not None and unmarked < 100, unmarked


def test_managed_job_processes_are_in_the_group(group, tmp_path):
    p = ManagedProcess([sys.executable, "-c", "import time; time.sleep(60)"], env={"PATH": "/usr/bin:/bin"},
                       log_path=tmp_path / "p.log", job=True)
    try:
        wait_for(lambda: p.pid in group.members(), timeout=5, what="the job process in the job group")
        assert p.alive
    finally:
        p.kill()
