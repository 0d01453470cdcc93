"""Which network faults can be limited to the job's connections (pure: no rule is installed)."""

import pytest

from pytest_streamchaos.faults import iptables as ipt
from pytest_streamchaos.faults import network as net


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
