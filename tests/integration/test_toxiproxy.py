"""The real Toxiproxy (server 2.12, built from the Go module once per machine) and the faults on it.

Traffic goes to small threaded TCP echo servers on 127.0.0.1. Timing bounds are loose around
physical facts (a 300 ms toxic cannot make a round trip faster than ~300 ms); each test's server is
its own, stopped at teardown, and checked to leave no process and no listening port.
"""

from __future__ import annotations

import os
import signal
import socket
import socketserver
import statistics
import threading
import time

import pytest

from pytest_streamchaos.faults.registry import kind
from pytest_streamchaos.machine import ports
from pytest_streamchaos.netem import probe
from pytest_streamchaos.netem.links import Drops, ToxiproxyLink, able
from pytest_streamchaos.netem.rules import PacketLoss
from pytest_streamchaos.netem.toxics import (
    ToxicBandwidth,
    ToxicDelay,
    ToxicLimitData,
    ToxicPartition,
    ToxicResetPeer,
    ToxicSlicer,
)
from pytest_streamchaos.stack.base import NetFaultError
from pytest_streamchaos.stack.toxiproxy import TOXIPROXY_VERSION, ToxiproxyServer, toxiproxy_server_binary
from pytest_streamchaos.testing import pid_alive, wait_for

pytestmark = pytest.mark.integration


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.server.connections += 1  # type: ignore[attr-defined]
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except OSError:
            pass


class Echo(socketserver.ThreadingTCPServer):
    """A TCP echo server on 127.0.0.1 (a thread per connection); ``connections`` counts accepts."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.connections = 0
        self.port = self.server_address[1]
        self.address = f"127.0.0.1:{self.port}"
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture
def echo():
    e = Echo()
    yield e
    e.close()


@pytest.fixture
def server(tmp_path):
    s = ToxiproxyServer(tmp_path)
    yield s
    s.stop()
    assert_gone(s)


@pytest.fixture
def proxy(server, echo):
    return server.create_proxy("echo", echo.address)


def assert_gone(server: ToxiproxyServer, *listen_ports: int) -> None:
    assert not pid_alive(server.pid), f"toxiproxy-server pid {server.pid} still runs"
    for port in (server.port, *listen_ports):
        assert ports.port_holder(port) is None, f"port {port} still held by {ports.port_holder(port)}"


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def median_rtt_ms(port: int, n: int = 5) -> float:
    """Median of ``n`` request/reply round trips (one connection each; the connect is not counted)."""
    results = [probe.exchange(port, timeout=5.0) for _ in range(n)]
    assert all(outcome == "reply" for outcome, _ in results), results
    return statistics.median(ms for _, ms in results)


def echo_through(port: int, payload: bytes, timeout: float = 30.0) -> tuple[bytes, int, float]:
    """Send ``payload`` (from a thread) and read it all back: (bytes read, recv calls, seconds)."""
    got, reads = bytearray(), 0
    with connect(port, timeout) as c:
        t = time.perf_counter()
        threading.Thread(target=c.sendall, args=(payload,), daemon=True).start()
        while len(got) < len(payload):
            chunk = c.recv(65536)
            if not chunk:
                break
            got += chunk
            reads += 1
        return bytes(got), reads, time.perf_counter() - t


# -- the binary and the server ---------------------------------------------------------------------

def test_binary_second_call_is_offline_and_instant(monkeypatch, tmp_path):
    first = toxiproxy_server_binary()
    monkeypatch.setenv("PATH", str(tmp_path))  # no go, no toxiproxy-server: only the cache can answer
    monkeypatch.delenv("STREAMCHAOS_TOXIPROXY_SERVER", raising=False)
    t = time.perf_counter()
    assert toxiproxy_server_binary() == first
    assert time.perf_counter() - t < 0.5


def test_server_starts_answers_and_stops_leaving_nothing(tmp_path, echo):
    s = ToxiproxyServer(tmp_path)
    try:
        assert s.alive and s.version() == TOXIPROXY_VERSION
        assert s.url == f"http://127.0.0.1:{s.port}"
        p = s.create_proxy("echo", echo.address)
        assert median_rtt_ms(p.listen_port, 1) > 0
    finally:
        s.stop()
    s.stop()  # idempotent
    assert not s.alive
    assert_gone(s, p.listen_port)


def test_a_stopped_server_starts_again_on_its_port_as_a_service(tmp_path):
    with ToxiproxyServer(tmp_path) as s:  # the stack's Service: ``with`` stops it on every exit path
        first = s.pid
        s.stop()
        assert not s.alive and s.returncode is not None
        s.start()
        assert s.alive and s.pid != first and s.version() == TOXIPROXY_VERSION
        assert s.start() is s and s.pid != first  # running: start does nothing
    assert not s.alive


def test_server_reset_enables_and_removes_toxics(server, proxy):
    proxy.add_toxic("latency", "downstream", {"latency": 100})
    proxy.disable()
    server.reset()
    assert proxy.enabled and proxy.toxics() == {}


# -- toxics on a proxy -----------------------------------------------------------------------------

def test_latency_toxic_adds_its_delay_both_ways_of_the_comparison(proxy, echo):
    base = median_rtt_ms(proxy.listen_port)
    direct = median_rtt_ms(echo.port)
    toxic = proxy.add_toxic("latency", "downstream", {"latency": 300, "jitter": 0})
    slow = median_rtt_ms(proxy.listen_port, 3)
    direct_meanwhile = median_rtt_ms(echo.port)
    proxy.remove_toxic(toxic.name)
    again = median_rtt_ms(proxy.listen_port)
    assert 290 <= slow - base <= 450, (base, slow)  # with the toxic: ~300 ms more
    assert again < base + 50, (base, again)  # without it: as before
    assert direct_meanwhile < direct + 50, (direct, direct_meanwhile)  # the direct path never had it


def test_disabled_proxy_refuses_and_enabling_restores(proxy):
    c = connect(proxy.listen_port)
    proxy.disable()
    assert not proxy.enabled
    try:
        assert c.recv(8) == b""  # its connection was closed
    except ConnectionResetError:
        pass  # or reset: either way it is gone
    finally:
        c.close()
    with pytest.raises(ConnectionRefusedError):
        connect(proxy.listen_port)
    proxy.enable()
    assert median_rtt_ms(proxy.listen_port, 1) > 0  # the same port again


def test_set_upstream_moves_traffic_to_another_server(proxy, echo):
    other = Echo()
    try:
        median_rtt_ms(proxy.listen_port, 1)
        proxy.set_upstream(other.address)
        assert proxy.upstream == other.address and proxy.enabled
        before = echo.connections
        assert median_rtt_ms(proxy.listen_port, 1) > 0
        assert other.connections == 1 and echo.connections == before
    finally:
        other.close()


# -- the faults ------------------------------------------------------------------------------------

def test_delay_fault_holds_each_direction_and_measures_it(proxy, echo):
    base = median_rtt_ms(proxy.listen_port)
    fault = ToxicDelay([proxy], ms=150)
    with fault:
        fault.inject()  # idempotent: still two toxics
        assert sorted(t.stream for t in proxy.toxics().values()) == ["downstream", "upstream"]
        slow = median_rtt_ms(proxy.listen_port, 3)
        m = fault.measure(budget_s=10)
        skipped = fault.measure(budget_s=0.2)
    fault.heal()
    assert proxy.toxics() == {}
    assert 290 <= slow - base <= 450, (base, slow)  # 150 ms each way
    assert 130 <= m["measured_delay_ms"] <= 250 and m["measured_rtt_added_ms"] >= 270, m
    assert "does not fit" in skipped["probe_skipped"], skipped
    assert repr(fault) == "ToxicDelay(proxies=['echo'], ms=150.0, jitter_ms=0.0)"
    assert fault.scope_limit() is None


def test_refusing_partition_cuts_and_heals(proxy):
    fault = ToxicPartition([proxy], mode="refuse")
    with fault:
        m = fault.measure(budget_s=5)
        assert not proxy.enabled
    assert m["measured_refused"] == 1.0 and m["measured_loss"] == 1.0, m
    assert probe.exchange(proxy.listen_port)[0] == "reply"


def test_blackhole_partition_keeps_connections_and_discards_bytes(proxy):
    c = connect(proxy.listen_port)
    fault = ToxicPartition([proxy])  # the default
    with fault:
        m = fault.measure(budget_s=5)
        c.settimeout(0.8)
        c.sendall(b"lost")
        with pytest.raises(TimeoutError):
            c.recv(8)  # the connection is open, nothing comes back
        assert probe.exchange(proxy.listen_port, timeout=0.5)[0] == "timeout"  # new ones are accepted, unanswered
    c.settimeout(5)
    assert c.recv(8) == b""  # the heal closed it: what was sent during the cut was discarded, not held
    c.close()
    assert probe.exchange(proxy.listen_port)[0] == "reply"
    assert fault.mode == "blackhole" and m["measured_refused"] == 0.0 and m["measured_loss"] == 1.0, m
    assert set(m["probe_outcomes"]) == {"timeout"}, m


def test_bandwidth_fault_caps_throughput(proxy):
    payload = os.urandom(60_000)
    _, _, free_s = echo_through(proxy.listen_port, payload)
    with ToxicBandwidth([proxy], kbit=400) as fault:  # 50 KB/s each way
        assert fault.rate == 50
        got, _, capped_s = echo_through(proxy.listen_port, payload)
    rate = len(got) / capped_s
    assert got == payload
    assert 35_000 <= rate <= 60_000, f"{rate:.0f} B/s through a 50 KB/s toxic (free: {len(got) / free_s:.0f} B/s)"
    assert free_s < capped_s / 5, (free_s, capped_s)


def test_reset_peer_resets_connections(proxy):
    with ToxicResetPeer([proxy]) as fault:
        m = fault.measure(budget_s=5)
    assert m["measured_reset"] == 1.0, m
    assert probe.exchange(proxy.listen_port)[0] == "reply"


def test_slicer_still_delivers_every_byte(proxy):
    payload = os.urandom(4000)
    with ToxicSlicer([proxy], average_size=16, size_variation=8, delay_us=50):
        got, reads, _ = echo_through(proxy.listen_port, payload)
    assert got == payload
    assert reads > 20, f"{reads} reads: the reply was not sliced"


def test_limit_data_closes_after_the_limit(proxy):
    with ToxicLimitData([proxy], bytes=1000):
        got, _, _ = echo_through(proxy.listen_port, os.urandom(5000))
    assert len(got) == 1000


def test_stopped_acting_sees_a_toxic_removed_behind_its_back(proxy):
    fault = ToxicDelay([proxy], ms=50)
    fault.inject()
    assert fault.stopped_acting() is None
    proxy.remove_toxic(next(n for n, t in proxy.toxics().items() if t.stream == "upstream"))
    why = fault.stopped_acting()
    assert why and "removed" in why and "echo" in why, why
    with pytest.raises(NetFaultError, match="not in effect"):
        fault.measure()
    fault.heal()  # the other toxic goes; the missing one is no error
    assert proxy.toxics() == {}


def test_stopped_acting_sees_a_reenabled_proxy(proxy):
    with ToxicPartition([proxy], mode="refuse") as fault:
        proxy.enable()
        assert "enabled again" in (fault.stopped_acting() or "")


def test_killed_server_is_reported_and_heal_does_not_fail(server, proxy):
    fault = ToxicDelay([proxy], ms=50)
    fault.inject()
    os.kill(server.pid, signal.SIGKILL)  # the server this test started
    wait_for(lambda: not server.alive, 5, "toxiproxy-server to exit after SIGKILL")
    why = fault.stopped_acting()
    assert why and f"pid {server.pid}" in why and "-9" in why, why
    fault.heal()


def test_partial_inject_is_undone(server, proxy, echo):
    other = server.create_proxy("other", echo.address)
    fault = ToxicDelay([proxy, other], ms=10)
    # the second proxy already has a toxic by the fault's name: it refuses the fault's
    other.add_toxic("latency", "downstream", {"latency": 1}, name=fault._name("latency", "downstream"))
    with pytest.raises(NetFaultError, match="HTTP 409"):
        fault.inject()
    assert not fault.active and proxy.toxics() == {}


def test_marks_map_to_toxic_faults(proxy):
    """The network kinds act through a real proxy where it has their operation; a loss (Toxiproxy has no loss
    toxic) goes to the host's rules on the proxy's own port."""
    ports = frozenset({proxy.listen_port})

    def act(name, params):
        k = kind(name)
        return k.act(k.link([proxy], ports), params)

    assert isinstance(act("network_delay", {"ms": 10, "jitter_ms": 0}), ToxicDelay)
    assert act("network_partition", {}).mode == "blackhole"
    assert act("bandwidth_limit", {"kbit": 800}).rate == 100
    loss = act("packet_loss", {"percent": 10})
    assert isinstance(loss, PacketLoss) and tuple(loss.ports) == (proxy.listen_port,)
    with pytest.raises(NetFaultError, match="cannot drop a link: its mechanism has no such operation"):
        able(ToxiproxyLink([proxy]), Drops)


def test_api_versions_probe_is_answered_by_a_real_broker(kafka):
    """The probe's request is real Kafka: a broker's job listener answers it, directly and through its
    proxy, and the delay measured through the proxy is the toxic's."""
    proxies = kafka.job_links([1])
    if not proxies:
        pytest.skip(f"no Toxiproxy on this stack: {kafka.links.reason}")
    node = kafka.node(1)
    assert probe.exchange(node.ports["job"])[0] == "reply"
    assert probe.exchange(proxies[0].listen_port)[0] == "reply"
    with ToxicDelay(proxies, ms=100) as fault:
        m = fault.measure(budget_s=5)
    assert 80 <= m["measured_delay_ms"] <= 200, m
