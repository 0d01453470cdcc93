"""Round trips of the harness's own Kafka clients, from librdkafka's statistics.

The generator and the collector must not be hit by the faults they observe (docs/architecture.md, "The
observer is outside the blast radius"). Rather than trust that, each client records, once a second,
its request round trips to the brokers and how many responses came back
(:class:`~pytest_streamchaos.facts.ClientSample`). The run's history carries the samples, and the
observer check (:mod:`pytest_streamchaos.analysis.checkers.observer`) compares the seconds inside the
network faults' windows with the baseline before them, and says so when the observer was disturbed.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from pytest_streamchaos.facts import ClientSample

#: librdkafka statistics period; one JSON document per client per interval (cheap at this rate).
INTERVAL_MS = 1000


class ClientStats:
    """Collects a client's :class:`ClientSample` s; pass :meth:`conf` into the client's config."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._samples: list[ClientSample] = []
        self._rx: dict[str, int] = {}

    def conf(self) -> dict[str, object]:
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


def samples_by_client(generator: Any, collector: Any) -> dict[str, list[ClientSample]]:
    """The harness clients' samples by client name: ``generator`` (``generator-<i>`` for several
    inputs, one generator each) and ``collector``; a client without statistics is left out."""
    gens = getattr(generator, "parts", None) or [generator]
    out = {}
    for i, g in enumerate(gens):
        if getattr(g, "client_stats", None) is not None:
            out["generator" if len(gens) == 1 else f"generator-{i}"] = g.client_stats.samples()
    if getattr(collector, "client_stats", None) is not None:
        out["collector"] = collector.client_stats.samples()
    return out
