"""Network faults through Toxiproxy: toxics and proxy state on the proxies of a link.

The job reaches each Kafka broker through one proxy (:mod:`pytest_streamchaos.stack.toxiproxy`), so a
fault on "the job's link to Kafka" acts on all of those proxies at once. Only connections routed
through a proxy are touched: the harness, connecting to the brokers directly, never is. The classes
have :class:`~.rules.NetworkFault`'s interface (idempotent ``inject``/``heal`` under a lock,
``active``, ``stopped_acting``, ``measure``, ``scope_limit``), so the scheduler treats them alike::

    with ToxicDelay(proxies, ms=200):
        ...    # every request and every reply through the proxies is held 200 ms

What each does, and which operation of a link it is (:class:`~.links.ToxiproxyLink`, through which the
network family's marks reach them):

- a delay -> :class:`ToxicDelay`: a ``latency`` toxic (``latency`` = ``ms``, ``jitter`` =
  ``jitter_ms``: uniform in ms ± jitter) on **both** streams: a request is held ``ms`` on its way to
  the broker and its reply ``ms`` on the way back, so a round trip grows by 2·``ms`` (± 2·jitter),
  as with :class:`~.rules.NetworkDelay` ``direction="both"``. ``measured_delay_ms`` is the added
  delay per direction (comparable to ``ms``, as NetworkDelay's), ``measured_rtt_added_ms`` the whole.
- a partition -> :class:`ToxicPartition`. ``mode="blackhole"`` (default): a ``timeout``
  toxic with ``timeout`` 0 on both streams: connections stay open and new connects are accepted, but
  every byte is **discarded** (Toxiproxy drops it, it does not hold it) until heal, so the job
  notices only by its own timeouts, as behind a silent cut (iptables DROP, :class:`~.rules.Partition`,
  whose meaning the mark keeps). Removing the toxic closes every connection that had it, so no
  connection with a hole in its byte stream survives the heal: clients reconnect. ``mode="refuse"``:
  the proxies are disabled: every connection through them is closed and new connects are refused at
  once until heal, as when the broker's host is up but nothing listens; the job notices at once.
- a bandwidth limit -> :class:`ToxicBandwidth`: a ``bandwidth`` toxic on both streams; Toxiproxy's
  ``rate`` is in KB/s (1000 bytes), so ``rate = kbit / 8`` (at least 1: 0 would mean unlimited).
- packet loss: none. Toxiproxy 2.12 has no loss toxic, and through a TCP proxy a lost segment
  would only be resent; it stays with iptables (:class:`~.rules.PacketLoss`).
- Without a mark of their own: :class:`ToxicResetPeer` (``reset_peer``: a connection that sends is
  reset, after ``timeout_ms``), :class:`ToxicSlicer` (``slicer``: replies cut into small pieces) and
  :class:`ToxicLimitData` (``limit_data``: a connection is closed after ``bytes`` bytes).

``measure`` probes the first proxy on the wire with a Kafka ApiVersions request (any broker answers
it; see :func:`.probe.kafka_api_versions_v0`): delay (vs the same request sent to the upstream
directly), partition and reset; the other kinds are checked through the API only.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_streamchaos.netem import probe
from pytest_streamchaos.netem.rules import NetworkFault
from pytest_streamchaos.stack.base import LinkProxy, NetFaultError
from pytest_streamchaos.stack.toxiproxy import ToxiproxyError

__all__ = ["ToxicFault", "ToxicDelay", "ToxicPartition", "ToxicBandwidth", "ToxicResetPeer", "ToxicSlicer",
           "ToxicLimitData", "kbit_to_rate"]

BOTH = ("upstream", "downstream")
#: how long a probe waits for a reply that a partition should withhold
SILENCE_S = 1.0


def kbit_to_rate(kbit: float) -> int:
    """Toxiproxy's bandwidth ``rate`` (KB/s, 1000 bytes) for ``kbit`` kbit/s: kbit / 8, at least 1."""
    if kbit <= 0:
        raise ValueError(f"kbit={kbit!r} must be > 0")
    return max(1, round(kbit / 8))


class ToxicFault(NetworkFault):
    """Base: the toxics :meth:`toxic_specs` names, on every proxy (see the module docstring)."""

    kind = "toxic"

    def __init__(self, proxies: Sequence[LinkProxy]) -> None:
        if not proxies:
            raise ValueError("a toxic fault needs at least one proxy")
        super().__init__([p.listen_port for p in proxies], "both")
        self.proxies = list(proxies)
        self._tag = f"sc-{id(self):x}"

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        """``(type, stream, attributes)`` of each toxic the fault adds to each proxy (Toxiproxy's attributes are
        whole numbers: ms, bytes, KB/s)."""
        return []

    def _name(self, kind: str, stream: str) -> str:
        return f"{self._tag}-{kind}-{stream}"

    def only_marked(self, mark: int, mask: int) -> NetworkFault:
        """Recorded only (the run then reports scope ``job``): a proxy touches just the connections
        routed through it, which are the job's when only the job is given the proxies' ports."""
        return super().only_marked(mark, mask)

    def in_namespace(self, netns: str, peer: str) -> NetworkFault:
        raise NetFaultError(f"{self!r}: proxies run on this host; a fault in a node's namespace is for packet rules")

    def _inject(self) -> None:
        done: list[LinkProxy] = []
        try:
            for p in self.proxies:
                done.append(p)
                self._act(p)
        except BaseException:
            for p in done:  # all proxies or none: a half-cut link would measure as something else
                self._undo(p, missing_ok=True)
            raise

    def _heal(self) -> None:
        for p in self.proxies:
            self._undo(p, missing_ok=True)

    def _act(self, proxy: LinkProxy) -> None:
        for kind, stream, attributes in self.toxic_specs():
            proxy.add_toxic(kind, stream, attributes, name=self._name(kind, stream))

    def _undo(self, proxy: LinkProxy, missing_ok: bool) -> None:
        """Remove what :meth:`_act` did; a dead server, or a toxic already gone, has nothing left to heal."""
        if not proxy.server.alive:
            return
        for kind, stream, _ in self.toxic_specs():
            try:
                proxy.remove_toxic(self._name(kind, stream))
            except ToxiproxyError as exc:
                if not (missing_ok and "HTTP 404" in str(exc)):
                    raise

    def stopped_acting(self) -> str | None:
        if not self.active:
            return None
        for p in self.proxies:
            if not p.server.alive:
                return f"toxiproxy-server (pid {p.server.pid}) exited with code {p.server.returncode}"
            try:
                why = self._gone_from(p.info())
            except ToxiproxyError as exc:
                return str(exc)
            if why:
                return f"proxy {p.name}: {why}"
        return None

    def _gone_from(self, info: dict[str, Any]) -> str | None:
        """What of the fault is missing from the proxy as the API lists it, or None."""
        have = {t["name"] for t in info.get("toxics") or []}
        missing = [self._name(k, s) for k, s, _ in self.toxic_specs() if self._name(k, s) not in have]
        return f"toxics {missing} were removed" if missing else None

    def _exchanges(self, n: int = 3, timeout: float = SILENCE_S) -> list[tuple[str, float]]:
        return probe.exchanges(self.proxies[0].listen_port, n=n, timeout=timeout)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self._args().items())
        return f"{type(self).__name__}(proxies={[p.name for p in self.proxies]}{args})"

    def _args(self) -> Mapping[str, float | int | str]:
        return {}


class ToxicDelay(ToxicFault):
    """Hold every chunk ``ms`` ± ``jitter_ms`` each way (a round trip + 2·``ms``)."""

    kind = "latency"

    def __init__(self, proxies: Sequence[LinkProxy], ms: float, jitter_ms: float = 0.0) -> None:
        super().__init__(proxies)
        if ms < 0 or jitter_ms < 0:
            raise ValueError(f"ms={ms!r} and jitter_ms={jitter_ms!r} must be >= 0")
        self.ms, self.jitter_ms = float(ms), float(jitter_ms)

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        return [("latency", s, {"latency": round(self.ms), "jitter": round(self.jitter_ms)}) for s in BOTH]

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        super().measure()
        rtt_s = 2 * (self.ms + self.jitter_ms) / 1000.0
        if budget_s is not None and 1.5 * rtt_s > budget_s:
            # waiting would hold the fault past its heal; the toxics were checked above
            return {"probe_skipped": f"a probe round trip (~{rtt_s:g}s) does not fit in the fault's {budget_s:g}s"}
        host, port = self.proxies[0].upstream.rsplit(":", 1)
        direct = _median_reply_ms(probe.exchanges(int(port), n=3, host=host), f"directly to {host}:{port}")
        through = _median_reply_ms(self._exchanges(timeout=rtt_s * 2 + 2.0), f"through proxy {self.proxies[0].name}")
        added = max(0.0, through - direct)
        each_way = added / 2  # the request's leg and the reply's
        # below ~5 ms the loopback's own noise is of the same size: report, do not judge
        if self.ms >= 5 and each_way < self.ms / 2:
            raise NetFaultError(f"{self!r} is not in effect: a request took {through:.1f} ms through the proxy and "
                                f"{direct:.1f} ms directly, {each_way:.1f} ms added each way of the {self.ms:g} ms")
        return {"measured_delay_ms": round(each_way, 1), "measured_rtt_added_ms": round(added, 1),
                "probe_rtt_ms": round(through, 1), "direct_rtt_ms": round(direct, 1)}

    def _args(self) -> Mapping[str, float | int | str]:
        return {"ms": self.ms, "jitter_ms": self.jitter_ms}


def _median_reply_ms(results: list[tuple[str, float]], where: str) -> float:
    replies = [ms for outcome, ms in results if outcome == "reply"]
    if not replies:
        raise NetFaultError(f"no probe request was answered {where}: {[o for o, _ in results]}")
    return statistics.median(replies)


class ToxicPartition(ToxicFault):
    """Cut the link: ``mode="blackhole"`` (default) discards every byte, ``"refuse"`` disables the
    proxies (see the module docstring for the difference)."""

    kind = "partition"
    MODES = ("refuse", "blackhole")

    def __init__(self, proxies: Sequence[LinkProxy], mode: str = "blackhole") -> None:
        super().__init__(proxies)
        if mode not in self.MODES:
            raise ValueError(f"mode={mode!r} must be one of {self.MODES}")
        self.mode = mode

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        return [("timeout", s, {"timeout": 0}) for s in BOTH] if self.mode == "blackhole" else []

    def _act(self, proxy: LinkProxy) -> None:
        super()._act(proxy)
        if self.mode == "refuse":
            proxy.disable()

    def _undo(self, proxy: LinkProxy, missing_ok: bool) -> None:
        super()._undo(proxy, missing_ok)
        if self.mode == "refuse" and proxy.server.alive:
            proxy.enable()

    def _gone_from(self, info: dict[str, Any]) -> str | None:
        if self.mode == "refuse":
            return "it was enabled again" if info.get("enabled") else None
        return super()._gone_from(info)

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        super().measure()
        # a reply on loopback takes milliseconds: silence for this long (at most half the budget) is a cut
        silence = SILENCE_S if budget_s is None else min(SILENCE_S, budget_s / 2)
        outcomes = [o for o, _ in self._exchanges(n=4, timeout=silence)]
        if "reply" in outcomes:
            raise NetFaultError(f"{self!r} is not in effect: probes through {self.proxies[0].name} got {outcomes}")
        return {"measured_refused": outcomes.count("refused") / len(outcomes),
                "measured_loss": 1.0 - outcomes.count("reply") / len(outcomes), "probe_outcomes": outcomes}

    def _args(self) -> Mapping[str, float | int | str]:
        return {"mode": self.mode}


class ToxicBandwidth(ToxicFault):
    """Limit each direction to ``kbit`` kbit/s (checked through the API; see :func:`kbit_to_rate`)."""

    kind = "bandwidth"

    def __init__(self, proxies: Sequence[LinkProxy], kbit: float) -> None:
        super().__init__(proxies)
        self.kbit, self.rate = float(kbit), kbit_to_rate(kbit)

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        return [("bandwidth", s, {"rate": self.rate}) for s in BOTH]

    def _args(self) -> Mapping[str, float | int | str]:
        return {"kbit": self.kbit}


class ToxicResetPeer(ToxicFault):
    """Reset (TCP RST) every connection through the proxies once it sends, after ``timeout_ms``."""

    kind = "reset_peer"

    def __init__(self, proxies: Sequence[LinkProxy], timeout_ms: int = 0) -> None:
        super().__init__(proxies)
        self.timeout_ms = int(timeout_ms)

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        return [("reset_peer", "upstream", {"timeout": self.timeout_ms})]

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        super().measure()
        outcomes = [o for o, _ in self._exchanges(timeout=self.timeout_ms / 1000 + SILENCE_S)]
        if "reply" in outcomes:
            raise NetFaultError(f"{self!r} is not in effect: probes through {self.proxies[0].name} got {outcomes}")
        return {"measured_reset": outcomes.count("reset") / len(outcomes), "probe_outcomes": outcomes}

    def _args(self) -> Mapping[str, float | int | str]:
        return {"timeout_ms": self.timeout_ms}


class ToxicSlicer(ToxicFault):
    """Cut what the upstream sends into ``average_size`` ± ``size_variation`` byte pieces, ``delay_us``
    apart (every byte still arrives: it exercises a client's reassembly of partial reads)."""

    kind = "slicer"

    def __init__(self, proxies: Sequence[LinkProxy], average_size: int = 8, size_variation: int = 4,
                 delay_us: int = 100) -> None:
        super().__init__(proxies)
        self.attributes: dict[str, int] = {"average_size": average_size, "size_variation": size_variation,
                                           "delay": delay_us}

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        return [("slicer", "downstream", dict(self.attributes))]

    def _args(self) -> Mapping[str, float | int | str]:
        return self.attributes


class ToxicLimitData(ToxicFault):
    """Close each connection once ``bytes`` bytes have gone from the upstream to the client."""

    kind = "limit_data"

    def __init__(self, proxies: Sequence[LinkProxy], bytes: int) -> None:
        super().__init__(proxies)
        self.bytes = int(bytes)

    def toxic_specs(self) -> list[tuple[str, str, dict[str, int]]]:
        return [("limit_data", "downstream", {"bytes": self.bytes})]

    def _args(self) -> Mapping[str, float | int | str]:
        return {"bytes": self.bytes}
