"""The pods' network: a local bridge (made before the cluster starts, so the node and the API server can
advertise its address; the CNI bridge plugin then finds and uses it) and a FORWARD chain of the cluster's own
that lets pods talk to each other and drops the rest of what they send or receive through the host's routing:
nothing of theirs leaves the machine (they reach the host itself, the bridge's address, without forwarding).
Removed by :mod:`.cleanup` (the bridge, the chain and its jump)."""

from __future__ import annotations

import ipaddress

from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.netfilter import run_ipt

#: candidates for the pods' subnet, the first one no route of this host overlaps taken
SUBNETS = ("10.244.0.0/24", "10.245.0.0/24", "10.246.0.0/24")


def routed() -> list[ipaddress.IPv4Network]:
    out = commands.run(["ip", "-4", "route", "show", "table", "all"], error=StackError)
    nets = []
    for line in out.splitlines():
        dest = line.split()[0] if line.split() else ""
        try:
            nets.append(ipaddress.ip_network(dest, strict=False))
        except ValueError:
            continue
    return [n for n in nets if isinstance(n, ipaddress.IPv4Network) and n.prefixlen > 0]


def free_subnet() -> ipaddress.IPv4Network:
    taken = routed()
    for s in SUBNETS:
        net = ipaddress.IPv4Network(s)
        if not any(net.overlaps(t) for t in taken):
            return net
    raise StackError(f"every candidate pod subnet ({', '.join(SUBNETS)}) overlaps a route of this host; "
                     f"fix: free one of them")


def add_bridge(name: str, gateway: str, prefixlen: int) -> None:
    """The bridge ``name`` with address ``gateway/prefixlen``, up."""
    for argv in (["ip", "link", "add", name, "type", "bridge"], ["ip", "addr", "add", f"{gateway}/{prefixlen}",
                                                                  "dev", name], ["ip", "link", "set", name, "up"]):
        commands.run(argv, error=StackError, fix="the cluster needs root (CAP_NET_ADMIN)")


def add_forward_chain(chain: str, subnet: str) -> None:
    """Chain ``chain``, first in FORWARD: pod to pod accepted, any other forwarded packet from or to a pod
    dropped."""
    run_ipt(["-N", chain])
    for rule in (["-s", subnet, "-d", subnet, "-j", "ACCEPT"], ["-s", subnet, "-j", "DROP"],
                 ["-d", subnet, "-j", "DROP"]):
        run_ipt(["-A", chain, *rule])
    run_ipt(["-I", "FORWARD", "1", "-j", chain])


def bridge_exists(name: str) -> bool:
    return commands.completed(["ip", "link", "show", name], timeout=30, error=StackError).returncode == 0
