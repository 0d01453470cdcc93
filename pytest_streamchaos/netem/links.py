"""What breaking one link takes, whatever breaks it: one small protocol per operation, and the mechanisms
that serve each where they can.

Every operation returns a :class:`~.rules.NetworkFault` not yet injected: ``inject()`` / ``heal()`` are
idempotent and ``with fault:`` heals on every way out, so *heal* is the fault's, never the link's.

======================  ===========  ==========  =========  ===========
link (mechanism)        partition    slow        drop       throttle
======================  ===========  ==========  =========  ===========
:class:`IptablesLink`   DROP         --          statistic  --
:class:`TcLink`         --           netem       --         htb + tbf
:class:`NfqueueLink`    --           delayer     --         --
:class:`HostLink`       iptables     netem or    iptables   tc
                                     NFQUEUE
:class:`ToxiproxyLink`  timeout 0 /  latency     --         bandwidth
                        disabled
======================  ===========  ==========  =========  ===========

A mechanism without an operation has no method for it, so ``isinstance(link, Drops)`` says whether a
link can (the protocols are runtime-checkable): Toxiproxy 2.12 has no loss toxic (and through a TCP proxy
a lost segment would only be resent), iptables cannot hold a packet, tc here has no classifier for a
plain drop. Nothing here corrupts packets -- netem's ``corrupt`` needs netem, which this project's kernels
lack, and neither iptables nor Toxiproxy can -- so there is no ``Corrupts`` protocol. Whether *this
host* has a mechanism's kernel parts is :mod:`.features`' answer, asked when a fault is injected (and by
the kinds' ``unavailable`` before a test starts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from pytest_streamchaos.netem.rules import BandwidthLimit, NetworkDelay, NetworkFault, PacketLoss, Partition
from pytest_streamchaos.netem.toxics import ToxicBandwidth, ToxicDelay, ToxicPartition
from pytest_streamchaos.stack.base import LinkProxy, NetFaultError

__all__ = ["Partitions", "Slows", "Drops", "Throttles", "IptablesLink", "TcLink", "NfqueueLink", "HostLink",
           "ToxiproxyLink", "able"]


@runtime_checkable
class Partitions(Protocol):
    def partition(self) -> NetworkFault:
        """The link cut: no byte crosses it until heal."""
        ...


@runtime_checkable
class Slows(Protocol):
    def slow(self, ms: float, jitter_ms: float = 0.0) -> NetworkFault:
        """Every packet (or chunk) on the link held ``ms`` ± ``jitter_ms``."""
        ...


@runtime_checkable
class Drops(Protocol):
    def drop(self, percent: float) -> NetworkFault:
        """Each packet on the link dropped with probability ``percent`` / 100."""
        ...


@runtime_checkable
class Throttles(Protocol):
    def throttle(self, kbit: float) -> NetworkFault:
        """The link limited to ``kbit`` kbit/s each way."""
        ...


Op = TypeVar("Op")


def able(link: object, operation: type[Op]) -> Op:
    """``link`` as one that can ``operation`` (one of the protocols above); :class:`NetFaultError` naming the
    link and the operation when its mechanism cannot."""
    if not isinstance(link, operation):
        raise NetFaultError(f"{link!r} cannot {operation.__name__.lower()[:-1]} a link: its mechanism has no "
                            f"such operation (see pytest_streamchaos.netem.links)")
    return link


class _PortLink:
    """A link as this host's ports (:func:`~.rules.ports_of`): rules match the packets to and from them."""

    def __init__(self, ports: Iterable[int], *, direction: str = "both") -> None:
        self.ports, self.direction = frozenset(ports), direction

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ports={sorted(self.ports)}, direction={self.direction!r})"


class IptablesLink(_PortLink):
    """iptables rules in this process's chain: a DROP cuts, ``-m statistic`` drops a share."""

    def partition(self) -> Partition:
        return Partition(self.ports, direction=self.direction)

    def drop(self, percent: float) -> PacketLoss:
        return PacketLoss(self.ports, percent, direction=self.direction)


class TcLink(_PortLink):
    """tc on ``lo``: an htb class per shaped direction, a tbf leaf limits, a netem leaf delays (where the
    kernel has netem)."""

    def slow(self, ms: float, jitter_ms: float = 0.0) -> NetworkDelay:
        return NetworkDelay(self.ports, ms, jitter_ms, direction=self.direction, backend="netem")

    def throttle(self, kbit: float) -> BandwidthLimit:
        return BandwidthLimit(self.ports, kbit, direction=self.direction)


class NfqueueLink(_PortLink):
    """An NFQUEUE rule and the user-space delayer behind it (hosts without netem)."""

    def slow(self, ms: float, jitter_ms: float = 0.0) -> NetworkDelay:
        return NetworkDelay(self.ports, ms, jitter_ms, direction=self.direction, backend="nfqueue")


class HostLink(IptablesLink):
    """This host's rules, each operation by the mechanism that has it: iptables cuts and drops, tc throttles,
    a delay is netem's where the kernel has it, else NFQUEUE's (:attr:`.features.NetworkFeatures.delay_backend`)."""

    def slow(self, ms: float, jitter_ms: float = 0.0) -> NetworkDelay:
        return NetworkDelay(self.ports, ms, jitter_ms, direction=self.direction)

    def throttle(self, kbit: float) -> BandwidthLimit:
        return TcLink(self.ports, direction=self.direction).throttle(kbit)


class ToxiproxyLink:
    """Toxiproxy's proxies of a link (the job's Kafka links, its object store's): toxics on every proxy at
    once, touching only the connections routed through them (:mod:`.toxics`)."""

    def __init__(self, proxies: Sequence[LinkProxy]) -> None:
        self.proxies = list(proxies)

    def partition(self, mode: str = "blackhole") -> ToxicPartition:
        """``mode="blackhole"``: every byte discarded, connections kept; ``"refuse"``: the proxies disabled."""
        return ToxicPartition(self.proxies, mode)

    def slow(self, ms: float, jitter_ms: float = 0.0) -> ToxicDelay:
        """Each way: a round trip grows by 2·``ms``."""
        return ToxicDelay(self.proxies, ms, jitter_ms)

    def throttle(self, kbit: float) -> ToxicBandwidth:
        return ToxicBandwidth(self.proxies, kbit)

    def __repr__(self) -> str:
        return f"ToxiproxyLink({[p.name for p in self.proxies]})"
