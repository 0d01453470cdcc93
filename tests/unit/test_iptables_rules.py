"""Rule/argv generation for network faults, the delayer's scheduling, and capability reasons (no root)."""

from __future__ import annotations

import pytest

from pytest_streamchaos.faults.registry import kind
from pytest_streamchaos.netem import iptables as ipt
from pytest_streamchaos.netem import tcshaper
from pytest_streamchaos.netem.features import NetworkFeatures
from pytest_streamchaos.netem.nfq_delayer import Delayer
from pytest_streamchaos.netem.rules import NetworkDelay, PacketLoss, Partition, ports_of
from pytest_streamchaos.stack.base import Endpoint


def test_port_matches_directions():
    assert ipt.port_matches([9092], "both") == [["-p", "tcp", "-m", "multiport", "--ports", "9092"]]
    assert ipt.port_matches([9092, 7077], "to", "udp") == [
        ["-p", "udp", "-m", "multiport", "--dports", "7077,9092"]]
    assert ipt.port_matches({5}, "from")[0][-2:] == ["--sports", "5"]


def test_port_matches_chunks_at_15_ports():
    chunks = ipt.port_matches(range(1000, 1032))
    assert [len(c[-1].split(",")) for c in chunks] == [15, 15, 2]
    assert sorted(int(p) for c in chunks for p in c[-1].split(",")) == list(range(1000, 1032))


@pytest.mark.parametrize("bad", [[], [0], [65536], [-1]])
def test_bad_ports_rejected(bad):
    with pytest.raises(ValueError):
        ipt.port_matches(bad)


def test_bad_direction_and_proto_rejected():
    with pytest.raises(ValueError, match="direction"):
        ipt.port_matches([1], "sideways")
    with pytest.raises(ValueError, match="proto"):
        ipt.port_matches([1], "both", "icmp")


def test_drop_specs_full_and_statistic():
    full = ipt.drop_specs([80], tag="t1")
    assert full == [["-p", "tcp", "-m", "multiport", "--ports", "80", "-m", "comment", "--comment", "t1",
                     "-j", "DROP"]]
    half = ipt.drop_specs([80], percent=25, tag="t2")[0]
    i = half.index("--probability")
    assert half[i - 4:i] == ["-m", "statistic", "--mode", "random"] and half[i + 1] == "0.250000"
    with pytest.raises(ValueError):
        ipt.drop_specs([80], percent=0)
    with pytest.raises(ValueError):
        ipt.drop_specs([80], percent=101)


def test_nfqueue_specs_bypass():
    spec = ipt.nfqueue_specs([80], 42, direction="from", tag="d")[0]
    assert spec[-5:] == ["-j", "NFQUEUE", "--queue-num", "42", "--queue-bypass"]
    assert "--sports" in spec
    with pytest.raises(ValueError):
        ipt.nfqueue_specs([80], 70000)


def test_chain_name_fits_and_cleanup_script():
    name = ipt.chain_name(4194304)  # pid_max on 64-bit
    assert len(name) <= 28
    script = ipt.chain_cleanup_script(name)
    assert f"-D INPUT -i lo -j {name}" in script and f"-F {name}" in script and f"-X {name}" in script
    assert script.index("-D INPUT") < script.index("-F") < script.index("-X")  # jump first, or -X fails


def test_fault_specs_cover_protocols():
    specs = Partition([1, 2]).specs()
    assert [s[1] for s in specs] == ["tcp", "udp"]
    assert all(s[-2:] == ["-j", "DROP"] for s in specs)
    loss = PacketLoss([1], 10, direction="to", proto="udp").specs()
    assert len(loss) == 1 and "--dports" in loss[0] and "0.100000" in loss[0]


def test_u32_filter_and_leaf_args():
    f = tcshaper.u32_filter_args("1a2b", 3, 9092, "dport", "tcp", "1a2b:4")
    assert f[f.index("prio") + 1] == "3"
    m = f.index("u32")
    assert f[m + 1:m + 5] == ["match", "ip", "protocol", "6"]  # TCP only, not UDP on the same port
    assert f[-5:] == ["dport", "9092", "0xffff", "flowid", "1a2b:4"]
    tbf = tcshaper.tbf_leaf_args(800)
    assert tbf[:3] == ["tbf", "rate", "800kbit"]
    assert int(tbf[tbf.index("burst") + 1]) >= 65536  # at least one lo-MTU packet
    assert tcshaper.netem_leaf_args(100, 10)[:4] == ["netem", "delay", "100ms", "10ms"]
    assert 0x1000 <= int(tcshaper.root_major(123), 16) < 0xF000


def test_ports_of():
    a = Endpoint("broker-0", "broker", ports={"kafka": 9092, "ctl": 9093})
    assert ports_of(a) == {9092, 9093}
    assert ports_of(a, names=["ctl"]) == {9093}
    assert ports_of([a, 7077]) == {9092, 9093, 7077}
    with pytest.raises(ValueError):
        ports_of(Endpoint("d", "driver"))
    with pytest.raises(TypeError):
        ports_of("9092")


def test_fault_argument_validation():
    with pytest.raises(ValueError):
        NetworkDelay([1], ms=-1)
    with pytest.raises(ValueError):
        NetworkDelay([1], ms=1, backend="qdisc")
    with pytest.raises(ValueError):
        PacketLoss([1], percent=150)


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_delayer_fifo_keeps_order_under_jitter():
    clock = FakeClock()
    d = Delayer(100, jitter_ms=80, seed=1, clock=clock)
    for i in range(50):
        d.push(i)
        clock.t += 0.001
    released = []
    clock.t += 1.0
    d.release_due(accept=released.append)
    assert released == list(range(50))  # no reordering
    assert d.stats()["received"] == d.stats()["released"] == 50


def test_delayer_holds_until_due():
    clock = FakeClock()
    d = Delayer(200, clock=clock)
    d.push("a")
    out = []
    clock.t += 0.199
    assert d.release_due(accept=out.append) == 0
    clock.t += 0.002
    assert d.release_due(accept=out.append) == 1 and out == ["a"]
    assert d.max_held == 1 and d.next_due() is None


def test_delayer_reorder_releases_by_time():
    clock = FakeClock()
    d = Delayer(100, jitter_ms=90, reorder=True, seed=3, clock=clock)
    for i in range(30):
        d.push(i)
    out = []
    clock.t += 1
    d.release_due(accept=out.append)
    assert sorted(out) == list(range(30)) and out != list(range(30))  # jitter reordered some


def test_delayer_flush_releases_everything_now():
    clock = FakeClock()
    d = Delayer(10_000, clock=clock)
    for i in range(5):
        d.push(i)
    out = []
    assert d.release_due(accept=out.append, flush=True) == 5 and out == list(range(5))


def test_capability_reasons_name_the_fix():
    caps = NetworkFeatures(net_admin=True, iptables=True, statistic=True, tc=True, tbf=True,
                        reasons={"netem": "netem unknown", "netfilterqueue": "not importable",
                                 "htb": "no htb"})
    assert kind("network_partition").host_missing(caps) is None and kind("packet_loss").host_missing(caps) is None
    why = kind("network_delay").host_missing(caps)
    assert "netem or NFQUEUE+NetfilterQueue" in why and "pip install NetfilterQueue" in why
    assert "no htb" in kind("bandwidth_limit").host_missing(caps)
    assert "CAP_NET_ADMIN" in kind("packet_loss").host_missing(NetworkFeatures())
    caps.nfqueue_target = caps.netfilterqueue = True
    assert caps.delay_backend == "nfqueue" and kind("network_delay").host_missing(caps) is None
    with pytest.raises(ValueError):
        caps.missing("earthquake")
