"""Round trips of the harness's own Kafka clients, from librdkafka's statistics.

The generator and the collector must not be hit by the faults they observe (docs/architecture.md, "The
observer is outside the blast radius"). Rather than trust that, each client records, once a second,
its request round trips to the brokers and how many responses came back. A run compares the seconds
inside its fault windows with the baseline before them, and says so when the observer was disturbed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

#: librdkafka statistics period; one JSON document per client per interval (cheap at this rate).
INTERVAL_MS = 1000


@dataclass(frozen=True)
class ClientSample:
    """One statistics interval of one client: when it ended, the round-trip median and maximum over
    the brokers' requests in it (ms; None when no request completed) and the responses received."""

    ts: float
    rtt_p50_ms: float | None
    rtt_max_ms: float | None
    responses: int


class ClientStats:
    """Collects a client's :class:`ClientSample` s; pass :meth:`conf` into the client's config."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._samples: list[ClientSample] = []
        self._rx: dict[str, int] = {}

    def conf(self) -> dict[str, Any]:
        """The config entries that make a confluent-kafka client report to this object."""
        return {"statistics.interval.ms": INTERVAL_MS, "stats_cb": self.on_stats}

    def on_stats(self, stats_json: str) -> None:
        """librdkafka's statistics callback (served from the client's poll)."""
        try:
            doc = json.loads(stats_json)
        except ValueError:
            return
        sample = self._sample(doc, time.time())
        if sample is not None:
            with self._lock:
                self._samples.append(sample)

    def _sample(self, doc: dict, now: float) -> ClientSample | None:
        p50s, maxes, responses = [], [], 0
        for name, b in (doc.get("brokers") or {}).items():
            if int(b.get("nodeid", -1)) < 0:
                continue  # bootstrap entries: the same brokers again, by their bootstrap address
            rx = int(b.get("rx", 0))
            responses += max(0, rx - self._rx.get(name, rx))
            self._rx[name] = rx
            rtt = b.get("rtt") or {}
            if int(rtt.get("cnt", 0)) > 0:
                p50s.append(rtt.get("p50", 0) / 1000.0)
                maxes.append(rtt.get("max", 0) / 1000.0)
        if not self._rx:
            return None
        return ClientSample(now, max(p50s) if p50s else None, max(maxes) if maxes else None, responses)

    def samples(self) -> list[ClientSample]:
        """A copy of the samples so far, oldest first."""
        with self._lock:
            return list(self._samples)


def summarize(samples: list[ClientSample], windows: list[tuple[float, float]],
              baseline_end: float | None) -> dict[str, Any]:
    """The client's round trips and response rate before ``baseline_end`` and inside ``windows``
    (fault windows, [start, end] wall times): what a run reports about its observer."""

    def inside(s: ClientSample) -> bool:
        # a sample covers the interval before its timestamp
        return any(a < s.ts and s.ts - INTERVAL_MS / 1000.0 < b for a, b in windows)

    base = [s for s in samples if baseline_end is not None and s.ts <= baseline_end and not inside(s)]
    during = [s for s in samples if inside(s)]
    return {"baseline": _stats(base), "during_faults": _stats(during)}


def _stats(samples: list[ClientSample]) -> dict[str, Any]:
    p50 = sorted(s.rtt_p50_ms for s in samples if s.rtt_p50_ms is not None)
    mx = [s.rtt_max_ms for s in samples if s.rtt_max_ms is not None]
    return {
        "seconds": len(samples),
        "rtt_p50_ms": round(p50[len(p50) // 2], 2) if p50 else None,
        "rtt_max_ms": round(max(mx), 2) if mx else None,
        "responses_per_s_min": min((s.responses for s in samples), default=None),
        "silent_seconds": sum(1 for s in samples if s.responses == 0),
    }


def disturbed(summary: dict[str, Any], slack_ms: float = 50.0) -> str | None:
    """Why a client looks disturbed during the faults (a silent second, or round trips far above
    its baseline), or None."""
    base, during = summary["baseline"], summary["during_faults"]
    if not during["seconds"]:
        return None
    if during["silent_seconds"]:
        return f"{during['silent_seconds']} s without any broker response during faults"
    b, d = base["rtt_p50_ms"], during["rtt_p50_ms"]
    if b is not None and d is not None and d > 3 * b + slack_ms:
        return f"round trips rose from {b:g} ms to {d:g} ms (median) during faults"
    return None


def network_windows(events: list[Any], end: float, link_faults: Collection[str]) -> list[tuple[float, float]]:
    """[injected, healed] wall times of the network faults among timeline ``events`` (objects with
    ``t``, ``kind``, ``target``, ``detail``); a fault never healed lasts until ``end``. ``link_faults``:
    the fault kinds that must leave the observer alone (those on a link: a broker kill takes the
    broker from everyone)."""
    open_: dict[tuple[str, str], float] = {}
    out = []
    for e in sorted(events, key=lambda e: e.t):
        fault = (e.detail or {}).get("fault")
        if fault not in link_faults:
            continue
        key = (fault, e.target)
        if e.kind == "fault_injected":
            open_[key] = e.t
        elif e.kind == "fault_healed" and key in open_:
            out.append((open_.pop(key), e.t))
    out += [(t, end) for t in open_.values()]
    return sorted(out)


def observer_report(clients: dict[str, list[ClientSample]], events: list[Any], baseline_end: float | None,
                    end: float, scope: str, scope_reason: str | None = None, *,
                    link_faults: Collection[str]) -> dict[str, Any]:
    """What the run says about its observer: whose connections the network faults (``link_faults``:
    their kinds) matched (``scope``), and per harness client its round trips before and during them,
    with ``disturbed`` naming any client that looks hit."""
    windows = network_windows(events, end, link_faults)
    report: dict[str, Any] = {"scope": scope, "network_fault_windows": len(windows)}
    if scope_reason:
        report["scope_reason"] = scope_reason
    disturbed_ = {}
    for name, samples in clients.items():
        report[name] = summarize(samples, windows, baseline_end)
        why = disturbed(report[name]) if windows else None
        if why:
            disturbed_[name] = why
    report["disturbed"] = disturbed_
    return report
