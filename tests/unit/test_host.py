"""The session's host resources (stack/host.py): one Host per session, made current while the session
runs, its host-wide machinery made once and cleaned up when it closes; no module-level singleton."""

from __future__ import annotations

from pytest_streamchaos.stack import netfilter
from pytest_streamchaos.stack.host import Host, activate, current


def test_shared_machinery_is_made_once_remade_when_stale_and_cleaned_up_on_close():
    h = Host()
    made, closed = [], []

    def make() -> dict:
        made.append(1)
        return {"n": len(made)}

    first = h.shared("chain", make, close=closed.append)
    assert h.shared("chain", make, close=closed.append) is first and len(made) == 1
    again = h.shared("chain", make, valid=lambda thing: False, close=closed.append)
    assert again is not first and len(made) == 2
    h.close()
    assert closed == [again] and h.closed
    h.close()  # idempotent
    assert closed == [again]


def test_a_session_host_is_current_while_it_is_active_and_the_ports_are_its_own():
    outer, session = current(), Host()
    with activate(session):
        assert current() is session
        port = session.ports.free()
        assert port in session.ports.handed_out() and port not in outer.ports.handed_out()
    assert current() is outer


def test_the_job_groups_marking_chain_is_removed_by_the_one_iptables_wrapper():
    script = netfilter.chain_cleanup_script("SC-JOB-1", None, "lo", hook="OUTPUT", table="mangle")
    assert script.startswith("while iptables -w 5 -t mangle -D OUTPUT -o lo -j SC-JOB-1 ")
    assert "iptables -w 5 -t mangle -X SC-JOB-1" in script
    assert netfilter.jump_spec("C", "lo") == ["-i", "lo", "-j", "C"]  # INPUT takes the input interface
