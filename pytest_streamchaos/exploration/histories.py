"""What an explored test's one histories were (docs/explore.md#one-history): each history's schedules, why it
ended, the verdict on the whole of it -- its windows, and the test's own after-body checks (the declared
guarantee, the SLA marks) on the whole, which must hold where every window held -- and what each schedule
cost: its wall time, its faults' own recovery, and the rest, the harness's share.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from pytest_streamchaos.analysis.groups import group_recovery, recovery_groups
from pytest_streamchaos.events import Kind, WindowClosed
from pytest_streamchaos.exploration.body import FALSIFIED, Body
from pytest_streamchaos.search.schedule import Outcome

if TYPE_CHECKING:
    from pytest_streamchaos.analysis.result import ChaosRun
    from pytest_streamchaos.analysis.run_metrics import FaultMetrics


@dataclass
class HistoryAccount:
    """One history of an explored test: its ``number``, how many runs (the control run's included) shared it,
    why it ended, its whole verdict (None: it never reached steady state, or could not be judged) and, when the
    test's checks fail on the whole, their first line (``violation``)."""

    number: int
    runs: int
    ended: str
    whole: ChaosRun | None
    violation: str | None = None

    def line(self) -> str:
        whole = self.whole
        judged = ("not judged" if whole is None else
                  f"whole: {whole.sent} sent, lost {whole.lost}, duplicates {whole.duplicates}, "
                  f"{len(whole.windows)} windows")
        bad = f"; VIOLATED on the whole: {self.violation}" if self.violation else ""
        return f"history #{self.number}: {self.runs} run(s) in one job, ended: {self.ended}; {judged}{bad}"

    def to_dict(self) -> dict[str, object]:
        whole = self.whole
        return {"number": self.number, "runs": self.runs, "ended": self.ended, "violation": self.violation,
                "whole": None if whole is None else {
                    "sent": whole.sent, "lost": whole.lost, "duplicates": whole.duplicates,
                    "incorrect": whole.incorrect, "guarantee_delivered": whole.guarantee_delivered,
                    "windows": [w.to_dict() for w in whole.windows]}}


def histories_of(body: Body, check: Callable[[list[Any]], None]) -> list[HistoryAccount]:
    """The account of every one history ``body``'s runs shared (``check``: the plugin's after-body checks, run
    on each whole history)."""
    out = []
    for live in body.harness.runner.histories:
        runs = sum(1 for _, outcome, _ in body.history if outcome.history == live.number)
        ended = body.ended.get(live.number) or live.broken or "the search ended"
        violation = None
        if live.whole is not None and not ended.startswith(FALSIFIED):  # a window falsified it: said already
            try:
                check([live.whole])
            except AssertionError as exc:
                violation = said(exc)
        out.append(HistoryAccount(live.number, runs, ended, live.whole, violation))
    return out


def said(exc: BaseException) -> str:
    """What a failed check says, in one line (an SLA violation's first bound with its heading)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[1]}"
    return lines[0] if lines else type(exc).__name__


def schedule_cost(outcome: Outcome[ChaosRun] | None) -> dict[str, Any]:
    """What one run of a schedule cost (seconds): its wall time; ``recovered_in`` the longest recovery time of
    its groups of faults whose recoveries overlap (docs/metrics.md#overlapping-faults-one-recovery: a step struck
    by the next before it recovered recovers with it); ``recovery`` its faults' own recovery -- per group, from
    its first injection until the last of its faults was back in band and the system's own reactions to them
    were over (a new executor added, the restarted query started), summed over the groups: the job running
    healthily between two groups, waiting for the next step's moment, is the harness's; ``harness`` the rest
    (None: a group whose recovery was not measured, or not recovered)."""
    if outcome is None or outcome.run is None:
        return {}
    wall = round(outcome.seconds, 1)
    faults = outcome.run.faults
    if not faults:
        return {"wall": wall, "recovery": 0.0, "harness": wall, "recovered_in": 0.0}
    groups = recovery_groups(faults)
    recs = [group_recovery(g) for g in groups]
    measured = [r for r in recs if isinstance(r, float)]  # neither None nor NOT_RECOVERED
    if len(measured) < len(groups):
        return {"wall": wall, "recovery": None, "harness": None, "recovered_in": None}
    spans = [recovery_span(g) for g in groups]
    recovery = sum(end - start for start, end in spans)
    return {"wall": wall, "recovery": round(recovery, 1), "harness": round(outcome.seconds - recovery, 1),
            "recovered_in": round(max(measured), 1), **harness_parts(outcome.run, spans[0][0], spans[-1][1])}


def recovery_span(group: list[FaultMetrics]) -> tuple[float, float]:
    """When a recovered group of faults whose recoveries overlap was injected and when it was over: its last
    fault's recovery point, or the system's last reaction to one of them when later."""
    reactions = [f.t + float(p["at"]) for f in group for p in f.phases if p.get("at") is not None]
    return group[0].t, max([cast(float, group[-1].recovered_at), *reactions])


def harness_parts(run: ChaosRun, injected: float, back: float) -> dict[str, float]:
    """Where a window's harness share went: ``moment`` from its first step's arming to its injection (the wait
    for the aimed moment), ``confirm`` from its faults' recovery to the window's close (the hold and the output
    of the records sent meanwhile, which tell the recovery, and the window's outputs read), and of it ``close``:
    what came after the history could first show the recovery (:func:`shown_at`) -- the ask, the window's
    outputs read and judged."""
    planned = [f.planned_at for f in run.fault_records if f.planned_at is not None]
    focus = run.history.focus
    closed = [e.t for e in run.history.timeline if e.kind == Kind.HISTORY_WINDOW
              and focus is not None and WindowClosed.of(e).index == focus.index]
    parts = {}
    if planned:
        parts["moment"] = round(injected - min(planned), 1)
    if closed:
        parts["confirm"] = round(closed[0] - back, 1)
        shown = shown_at(run)
        if shown is not None:
            parts["close"] = round(closed[0] - shown, 1)
    return parts


def shown_at(run: ChaosRun) -> float | None:
    """The first instant the history could show that every fault of ``run`` (a window's view) recovered: the hold
    after the last recovery point, and a normal gap for the output of the hold's records (the metrics spread an
    output's records over the normal gap before it); None when a fault showed no sign in the output (it is over
    once quiet, not recovered) or no recovery point was measured."""
    faults = run.faults
    if not faults or any(f.output_symptom is None or f.recovered_at is None for f in faults):
        return None
    last = max(f.recovered_at for f in faults if f.recovered_at is not None)
    return last + run.metrics.params.hold_seconds + run.metrics.baseline.normal_gap


def cost_line(outcomes: list[Outcome[ChaosRun]]) -> str | None:
    """The median cost of the schedules ``outcomes`` ran (wall, own recovery, the harness's share), one line.
    The recovery and the share are medians of the runs whose faults' recovery was measured only (a fault not
    measured, or not recovered, or struck by the next before it recovered when that one did not recover): the
    line says of how many when not of all."""
    costs = [schedule_cost(o) for o in outcomes]
    walls = [c["wall"] for c in costs if c]
    shares = [c for c in costs if c and c.get("harness") is not None]
    if not walls:
        return None
    line = f"per schedule: median {statistics.median(walls):.0f}s"
    if shares:
        rec = statistics.median(c["recovery"] for c in shares)
        harness = statistics.median(c["harness"] for c in shares)
        line += f", of which its faults' own recovery {rec:.0f}s and the harness's share {harness:.0f}s"
    if len(shares) == len(walls):
        return line + f" ({len(walls)} runs)"
    if not shares:
        return line + f" ({len(walls)} runs; no run's recovery measured)"
    return line + f" ({len(walls)} runs; recovery and share of the {len(shares)} whose recovery was measured)"

