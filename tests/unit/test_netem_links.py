"""netem/'s interface: which mechanism serves which operation of a link (the table of
pytest_streamchaos/netem/links.py), and the network family asking it for the same faults as before."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_streamchaos.faults.families import network as family
from pytest_streamchaos.netem.links import (
    Drops,
    HostLink,
    IptablesLink,
    NfqueueLink,
    Partitions,
    Slows,
    TcLink,
    Throttles,
    ToxiproxyLink,
    able,
)
from pytest_streamchaos.netem.rules import BandwidthLimit, NetworkDelay, PacketLoss, Partition
from pytest_streamchaos.netem.toxics import ToxicBandwidth, ToxicDelay, ToxicPartition
from pytest_streamchaos.stack.base import NetFaultError

PORTS = frozenset({9092, 9093})
OPERATIONS = (Partitions, Slows, Drops, Throttles)


@dataclass
class Proxy:
    """What a toxic fault reads of a proxy before it is injected."""

    name: str
    listen_port: int


def _served(link: object) -> set[str]:
    return {op.__name__ for op in OPERATIONS if isinstance(link, op)}


def test_each_mechanism_has_the_operations_it_can_do_and_no_other():
    assert _served(IptablesLink(PORTS)) == {"Partitions", "Drops"}
    assert _served(TcLink(PORTS)) == {"Slows", "Throttles"}
    assert _served(NfqueueLink(PORTS)) == {"Slows"}
    assert _served(HostLink(PORTS)) == {"Partitions", "Slows", "Drops", "Throttles"}
    # Toxiproxy 2.12 has no loss toxic
    assert _served(ToxiproxyLink([Proxy("broker-0", 20001)])) == {"Partitions", "Slows", "Throttles"}


def test_a_link_refuses_an_operation_it_lacks_naming_it():
    with pytest.raises(NetFaultError, match=r"ToxiproxyLink\(\['broker-0'\]\) cannot drop"):
        able(ToxiproxyLink([Proxy("broker-0", 20001)]), Drops)
    link = HostLink(PORTS)
    assert able(link, Drops) is link


def test_host_rules_are_the_faults_the_family_made_before():
    host = HostLink(PORTS)
    delay = host.slow(200, 10)
    assert isinstance(delay, NetworkDelay)
    assert (delay.ports, delay.ms, delay.jitter_ms, delay.direction, delay.backend) == ((9092, 9093), 200, 10,
                                                                                        "both", None)
    loss = host.drop(30)
    assert isinstance(loss, PacketLoss) and (loss.percent, loss.direction, loss.proto) == (30, "both", "tcp")
    cut = host.partition()
    assert isinstance(cut, Partition) and (cut.percent, cut.direction, cut.proto) == (100, "both", "all")
    limit = host.throttle(512)
    assert isinstance(limit, BandwidthLimit) and (limit.kbit, limit.direction) == (512, "both")
    assert TcLink(PORTS).slow(5).backend == "netem" and NfqueueLink(PORTS).slow(5).backend == "nfqueue"


def test_the_family_asks_the_proxies_where_they_can_and_the_host_elsewhere():
    proxies = [Proxy("broker-0", 20001), Proxy("broker-1", 20002)]
    ports = frozenset({20001, 20002})
    for kind, made in ((family.NetworkDelay, ToxicDelay), (family.NetworkPartition, ToxicPartition),
                       (family.BandwidthLimit, ToxicBandwidth)):
        params = {"ms": 100, "jitter_ms": 0, "kbit": 64}
        fault = kind.act(kind.link(proxies, ports), params)
        assert isinstance(fault, made), kind.name
    loss = family.PacketLoss.act(family.PacketLoss.link(proxies, ports), {"percent": 10})
    assert isinstance(loss, PacketLoss) and loss.ports == (20001, 20002)  # iptables on the proxies' ports
    no_proxies = family.NetworkPartition.link([], PORTS)
    assert isinstance(no_proxies, HostLink) and no_proxies.ports == PORTS
    blackhole = family.NetworkPartition.act(family.NetworkPartition.link(proxies, ports), {})
    assert isinstance(blackhole, ToxicPartition) and blackhole.mode == "blackhole"
