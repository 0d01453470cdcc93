"""Port allocation: free on 127.0.0.1, below the ephemeral range, never handed out twice."""

from __future__ import annotations

import socket

from pytest_streamchaos.stack import ports


def test_ports_are_free_distinct_and_bindable():
    got = ports.free_ports(20)
    assert len(set(got)) == 20
    for p in got:
        assert p in ports.handed_out()
        with socket.socket() as s:  # each one can really be bound by a server
            s.bind(("127.0.0.1", p))


def test_below_ephemeral_range():
    low = ports._ephemeral_low()
    assert all(ports._LOW <= p < low for p in ports.free_ports(5))


def test_busy_port_is_detected_and_never_returned():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        assert not ports.port_is_free(busy)
        assert busy not in ports.free_ports(50)


def test_reserved_port_is_never_handed_out():
    p = ports.free_port()
    ports.reserve(p + 1)
    assert p + 1 in ports.handed_out()
