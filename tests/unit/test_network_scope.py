"""Which network faults can be limited to the job's connections (pure: no rule is installed)."""

import pytest

from pytest_streamchaos.netem import iptables as ipt
from pytest_streamchaos.netem import rules as net


def test_drop_faults_match_the_mark_in_their_rules():
    f = net.Partition([9092]).only_marked(0x5C0000, 0xFF0000)
    assert all(["-m", "connmark", "--mark", "0x5c0000/0xff0000"] == s[s.index("connmark") - 1:
               s.index("connmark") + 3] for s in f.specs())
    assert f.probe_mark == 0x5C0000


def test_tc_shaped_faults_cannot_be_limited_and_say_why():
    f = net.BandwidthLimit([9092], kbit=100)
    assert f.scope_limit() == net.TC_UNSCOPED
    with pytest.raises(ipt.NetFaultError, match="cannot act on some connections only: it is shaped by tc"):
        f.only_marked(0x5C0000, 0xFF0000)


def test_a_fault_in_a_namespace_matches_the_peer_and_probes_from_there():
    """The docker backend's faults: rules in the node's namespace match the peer's address; the
    probes start in that namespace and aim at the peer, not at 127.0.0.1."""
    f = net.Partition([9091, 9092]).in_namespace("/proc/42/ns/net", "10.213.0.10")
    assert all(s[s.index("-s"):s.index("-s") + 2] == ["-s", "10.213.0.10"] for s in f.specs())
    assert "connmark" not in " ".join(" ".join(s) for s in f.specs())
    assert f.probe_where == {"host": "10.213.0.10", "netns": "/proc/42/ns/net"}
    assert net.Partition([9092]).probe_where == {"mark": None}


def test_rules_in_a_namespace_run_through_nsenter_and_jump_from_every_interface():
    assert ipt.nsenter(None) == []
    assert ipt.nsenter("/proc/42/ns/net") == ["nsenter", "--net=/proc/42/ns/net"]
    assert ipt.jump_spec("C") == ["-i", "lo", "-j", "C"]
    assert ipt.jump_spec("C", None) == ["-j", "C"]
    script = ipt.chain_cleanup_script("C", "/proc/42/ns/net", None)
    assert script.startswith("while nsenter --net=/proc/42/ns/net iptables -w 5 -D INPUT -j C ")
    mgr = ipt.RuleManager(chain="C", netns="/proc/42/ns/net")
    assert (mgr.netns, mgr.iface) == ("/proc/42/ns/net", None)


def test_a_bandwidth_limit_in_a_namespace_fails_naming_why():
    f = net.BandwidthLimit([9092], kbit=100).in_namespace("/proc/42/ns/net", "10.213.0.10")
    with pytest.raises(ipt.NetFaultError, match="inside a container's namespace is not implemented"):
        f.inject()
    assert not f.active


class _Fake(net.NetworkFault):
    def __init__(self, fail=False, why=None):
        super().__init__([9092])
        self.fail, self.why, self.healed = fail, why, 0

    def _inject(self):
        if self.fail:
            raise ipt.NetFaultError("no")

    def _heal(self):
        self.healed += 1

    def stopped_acting(self):
        return self.why

    def measure(self, budget_s=None):
        return {"measured_loss": 1.0 if not self.why else 0.0}


def test_a_fault_group_injects_all_or_none_and_reports_per_node():
    ok, bad = _Fake(), _Fake(fail=True)
    with pytest.raises(ipt.NetFaultError):
        net.FaultGroup([ok, bad], ["worker-0", "worker-1"]).inject()
    assert ok.healed == 1 and not ok.active  # the first was healed again when the second failed
    a, b = _Fake(), _Fake(why="rule gone")
    g = net.FaultGroup([a, b], ["worker-0", "worker-1"])
    g.inject()
    assert g.active and g.stopped_acting() == "on worker-1: rule gone"
    assert g.measure()["per_node"] == {"worker-0": {"measured_loss": 1.0}, "worker-1": {"measured_loss": 0.0}}
    g.heal()
    assert not g.active and a.healed == b.healed == 1
