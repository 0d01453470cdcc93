"""What a network delay did to the system, in PGVal's terms ("How Reliable Are Streams?", §4).

A packet delay below the failure-detection timeout of its link (PD<TO) only slows the system; above
it (PD>TO) the system notices: it declares the peer dead, fails a task, moves a leader. Whether it
noticed is read from the run's timeline -- a system reaction (one of the metrics' system detection
kinds: a task failed, an executor removed, a query terminated...) between the delay's injection and
shortly after its heal -- and set beside the class the test stated, so a test can assert the effect it
claims (``run.meta["delay_outcomes"]``, one line each in ``describe()``). Pure: timeline in, verdict out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_streamchaos.analysis.metrics import SYSTEM_DETECTION_KINDS
from pytest_streamchaos.records import TimelineEvent

#: a reaction this long after the heal still counts (a timeout that expired at the heal is reported late)
GRACE_S = 2.0


@dataclass(frozen=True)
class DelaySpec:
    """One ``network_delay`` occurrence as planned: its label on the timeline and what governs its link."""

    label: str
    ms: float
    above_timeout: bool | None  #: the stated class (None: not stated)
    timeout_setting: str
    timeout_s: float
    timeout_where: str = ""  #: where that value comes from (the job's code, a default)


def delay_outcomes(timeline: Iterable[TimelineEvent], delays: Sequence[DelaySpec]) -> list[dict[str, Any]]:
    """Per delay that took effect: the timeout compared against, the class stated and the class observed
    (``noticed`` with the first reaction as ``evidence``, else ``not noticed``)."""
    events = sorted(timeline, key=lambda e: e.t)
    out = []
    for d in delays:
        injected = next((e for e in events if e.kind == "fault_injected" and e.detail.get("label") == d.label), None)
        if injected is None:
            continue
        healed = next((e.t for e in events if e.kind == "fault_healed" and e.detail.get("label") == d.label
                       and e.t >= injected.t), None)
        end = (healed if healed is not None else events[-1].t) + GRACE_S
        reaction = next((e for e in events if e.kind in SYSTEM_DETECTION_KINDS and injected.t <= e.t <= end), None)
        out.append({
            "fault": d.label, "delay_ms": d.ms, "timeout": d.timeout_setting, "timeout_ms": d.timeout_s * 1000.0,
            "timeout_where": d.timeout_where,
            "stated": None if d.above_timeout is None else ("PD>TO" if d.above_timeout else "PD<TO"),
            "observed": "noticed" if reaction is not None else "not noticed",
            "evidence": None if reaction is None else _evidence(reaction, injected.t),
        })
    return out


def _evidence(e: TimelineEvent, since: float) -> str:
    what = e.detail.get("exception") or e.detail.get("reason") or ""
    return f"{e.kind} {e.target} {f'({what}) ' if what else ''}{e.t - since:+.1f}s after the injection"


def describe_outcome(o: dict[str, Any]) -> str:
    """One line: the delay against its timeout, what the test stated, what was seen."""
    stated = f"stated {o['stated']}, " if o["stated"] else ""
    seen = f"the system noticed: {o['evidence']}" if o["observed"] == "noticed" else \
        "the system did not notice (no task failure, lost executor or query end during it)"
    where = f" ({o['timeout_where']})" if o.get("timeout_where") else ""
    return (f"{o['fault']}: {o['delay_ms']:g} ms against {o['timeout']} = {o['timeout_ms']:g} ms{where}; "
            f"{stated}{seen}")
