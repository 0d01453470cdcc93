"""Port allocation: free on 127.0.0.1, below the ephemeral range, never handed out twice by one registry."""

from __future__ import annotations

import socket

from pytest_streamchaos.machine import ports


def test_ports_are_free_distinct_and_bindable():
    registry = ports.PortRegistry()
    got = registry.free_many(20)
    assert len(set(got)) == 20
    for p in got:
        assert p in registry.handed_out()
        with socket.socket() as s:  # each one can really be bound by a server
            s.bind(("127.0.0.1", p))


def test_below_ephemeral_range():
    low = ports._ephemeral_low()
    assert all(ports._LOW <= p < low for p in ports.PortRegistry().free_many(5))


def test_busy_port_is_detected_and_never_returned():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        assert not ports.port_is_free(busy)
        assert busy not in ports.PortRegistry().free_many(50)


def test_reserved_port_is_never_handed_out():
    registry = ports.PortRegistry()
    p = registry.free()
    registry.reserve(p + 1)
    assert p + 1 in registry.handed_out()
