"""The observer check: did the network faults spare the harness?

The generator and the collector must not be hit by the faults they observe (docs/architecture.md, "The
observer is outside the blast radius"). Each records its broker round trips once a second
(:class:`~pytest_streamchaos.facts.ClientSample`, ``client_stats.py``); this check compares the
seconds inside the network faults' windows with the baseline before the first fault, and says so (a
warning in the report) when a client looks disturbed. A network fault is one that says whose
connections it acted on (its ``scope``: ``job``, ``namespace`` -- the job's containers -- or ``all``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.events import Phase
from pytest_streamchaos.facts import ClientSample
from pytest_streamchaos.history import FaultRecord, History

from ..checker import CheckResult

#: the statistics interval of the harness clients, in seconds (``client_stats.INTERVAL_MS``)
INTERVAL_S = 1.0
#: scopes that keep the harness out of a network fault
SPARED = ("job", "namespace")


@dataclass(frozen=True)
class RoundTrips:
    """A client's round trips over some seconds: how many, the median and the largest round trip (ms;
    None: no request completed), the fewest responses in a second and the seconds without any."""

    seconds: int
    rtt_p50_ms: float | None
    rtt_max_ms: float | None
    responses_per_s_min: int | None
    silent_seconds: int

    @classmethod
    def of(cls, samples: list[ClientSample]) -> RoundTrips:
        p50 = sorted(s.rtt_p50_ms for s in samples if s.rtt_p50_ms is not None)
        mx = [s.rtt_max_ms for s in samples if s.rtt_max_ms is not None]
        return cls(len(samples), round(p50[len(p50) // 2], 2) if p50 else None, round(max(mx), 2) if mx else None,
                   min((s.responses for s in samples), default=None), sum(1 for s in samples if s.responses == 0))

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ClientReport:
    """One harness client's round trips before the faults and during them."""

    baseline: RoundTrips
    during_faults: RoundTrips

    def disturbed(self, slack_ms: float = 50.0) -> str | None:
        """Why the client looks disturbed during the faults (a silent second, or round trips far above
        its baseline), or None."""
        base, during = self.baseline, self.during_faults
        if not during.seconds:
            return None
        if during.silent_seconds:
            return f"{during.silent_seconds} s without any broker response during faults"
        b, d = base.rtt_p50_ms, during.rtt_p50_ms
        if b is not None and d is not None and d > 3 * b + slack_ms:
            return f"round trips rose from {b:g} ms to {d:g} ms (median) during faults"
        return None


@dataclass
class ObserverResult(CheckResult):
    """Whose connections the network faults matched (``scope``, with ``scope_reason`` when not only
    the job's), how many fault windows there were, each client's round trips and the disturbed ones."""

    scope: str = "job"
    scope_reason: str | None = None
    windows: int = 0
    clients: dict[str, ClientReport] = field(default_factory=dict)
    disturbed: dict[str, str] = field(default_factory=dict)

    def as_report(self) -> dict[str, object]:
        """The JSON the run's report has kept under ``meta.observer`` (docs/report-schema.md)."""
        out: dict[str, Any] = {"scope": self.scope, "network_fault_windows": self.windows}
        if self.scope_reason:
            out["scope_reason"] = self.scope_reason
        for name, c in self.clients.items():
            out[name] = {"baseline": c.baseline.to_dict(), "during_faults": c.during_faults.to_dict()}
        out["disturbed"] = dict(self.disturbed)
        return out


def network_windows(faults: list[FaultRecord], end: float) -> list[tuple[float, float]]:
    """[injected, healed] times of the network faults; one never healed lasts until ``end``."""
    return sorted((f.injected_at, f.healed_at if f.healed_at is not None else end)  # type: ignore[misc]
                  for f in faults if f.injected and f.scope is not None)


def summarize(samples: list[ClientSample], windows: list[tuple[float, float]],
              baseline_end: float | None) -> ClientReport:
    """A client's round trips before ``baseline_end`` and inside ``windows``."""

    def inside(s: ClientSample) -> bool:
        # a sample covers the interval before its timestamp
        return any(a < s.ts and s.ts - INTERVAL_S < b for a, b in windows)

    base = [s for s in samples if baseline_end is not None and s.ts <= baseline_end and not inside(s)]
    return ClientReport(RoundTrips.of(base), RoundTrips.of([s for s in samples if inside(s)]))


class ObserverCheck:
    """The harness clients' round trips during the network faults against their baseline; violated
    when a client looks disturbed (then the report warns that latency and downtime may include the
    observer's own delay); not judged when the history has no client samples (a bare trace)."""

    name = "observer"

    def check(self, history: History) -> CheckResult:
        samples = history.facts.client_samples
        if samples is None:
            return CheckResult(self.name, None, reason="the history records no harness client statistics")
        scoped = [f for f in history.faults if f.injected and f.scope is not None]
        unscoped = [f.detail.get("scope_reason") for f in scoped if f.scope not in SPARED]
        end = history.phase(Phase.LOAD_END)
        if end is None:
            end = max([e.t for e in history.timeline] + [s.ts for ss in samples.values() for s in ss], default=0.0)
        windows = network_windows(scoped, end)
        clients = {name: summarize(ss, windows, history.phase("warmup_end")) for name, ss in samples.items()}
        disturbed = {name: why for name, c in clients.items() if windows and (why := c.disturbed())}
        warnings = [f"the harness's {name} was disturbed during the network faults ({why}): latency and downtime "
                    "may include the observer's own delay" for name, why in disturbed.items()]
        result = ObserverResult(self.name, not disturbed, [], {"network_fault_windows": len(windows)}, warnings,
                                scope="all" if unscoped else "job",
                                scope_reason=str(unscoped[0]) if unscoped and unscoped[0] else None,
                                windows=len(windows), clients=clients, disturbed=disturbed)
        result.lines = _lines(result)
        return result


def _lines(r: ObserverResult) -> list[str]:
    """One line on the observer when the run had network faults."""
    if not r.windows:
        return []
    scope = ("network faults hit the job's connections only" if r.scope == "job" else
             f"network faults hit every connection on the faulted ports ({r.scope_reason})")
    parts = [f"{name} round trip {_num(c.baseline.rtt_p50_ms)} ms before, {_num(c.during_faults.rtt_p50_ms)} ms "
             "during" for name, c in sorted(r.clients.items())]
    return [f"observer: {scope}; " + "; ".join(parts)]


def _num(v: float | None) -> str:
    return "unknown" if v is None else format(v, ".1f")
