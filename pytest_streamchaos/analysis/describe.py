"""The text of a run's report: :meth:`ChaosRun.describe` and the lines it is made of, the terminal
table's row and the timeline's JSON. Reads the run's typed results and facts only: what
:class:`~pytest_streamchaos.analysis.run_view.RunView` says a run has (a ``ChaosRun`` is one; it imports this
module, so it is not imported here)."""

from __future__ import annotations

from ..facts import RunFacts
from ..records import TimelineEvent
from .checkers import DamageResult, DelayResult, ObserverResult, TransactionsResult, no_verdict
from .metrics import NOT_RECOVERED, FaultMetrics
from .run_metrics import cut_off_by
from .run_view import RunView
from .sla import render_timeline


def describe(run: RunView) -> str:
    """The human report of the run: headline numbers, per-fault recovery, the run's setup and checks,
    the timeline, the warnings."""
    lat, m = run.latency, run.metrics
    rt, fc = m.recovery_time, m.failure_cost
    rec = "not measured" if rt is None else "not recovered" if rt is NOT_RECOVERED else f"{float(rt):.2f}s"
    cost = "not measured" if fc is None else f"{fc:.2f}s"
    down = "not measured" if m.downtime is None else f"{m.downtime:.2f}s"
    lines = [
        *window_lines(run),
        f"sent {run.sent} records, read {run.outputs} outputs; lost {run.lost}, duplicates "
        f"{run.duplicates}, incorrect {run.incorrect}",
        f"guarantee declared {run.guarantee}, delivered {run.guarantee_delivered}; reliability "
        f"{_num(run.reliability, '.6f')}; reliable throughput {run.reliable_throughput:.1f} ids/s",
        f"latency p50 {lat.p50:.2f}s p95 {lat.p95:.2f}s p99 {lat.p99:.2f}s peak {lat.peak:.2f}s "
        f"(baseline {'none: no output in it' if lat.baseline != lat.baseline else f'{lat.baseline:.2f}s'})",
        f"downtime {down}, recovery time {rec}, failure cost {cost}",
        *unavailable_lines(m.unavailable),
        *_resolution_lines(run),
        *context(run).splitlines()[1:],
        *setup_lines(run),
        *check_lines(run),
        "timeline:",
        *("  " + line for line in timeline_lines(run)),
    ]
    lines += [f"warning: {w}" for w in run.warnings]
    return "\n".join(lines)


def window_lines(run: RunView) -> list[str]:
    """A view of one window of one history: which window, and what its numbers are of; a whole run with
    several windows: one line per window."""
    focus = run.history.focus
    if focus is not None:
        return [f"one history, window {focus.index} ({focus.name or 'no fault'}): the counts are of the records "
                "sent in it, the faults and recovery its own; latency, throughput and the timeline are the whole "
                "history's so far"]
    windows = run.windows
    return [f"windows: {w.describe()}" for w in windows] if len(windows) > 1 else []


def unavailable_lines(unavailable: dict[str, str]) -> list[str]:
    """One line per reason a metric was not measured, the metrics that share a reason on one line."""
    by_reason: dict[str, list[str]] = {}
    for name, why in unavailable.items():
        by_reason.setdefault(why, []).append(name)
    return [f"{', '.join(names)} not measured: {why}" for why, names in by_reason.items()]


def _resolution_lines(run: RunView) -> list[str]:
    if run.resolution == "none":
        return [f"no per-record verdict: {no_verdict(run.facts)}"]
    if run.resolution == "record":
        return []
    return [f"resolution: per {run.resolution}, not per record (lost / duplicates are input records "
            "inferred from aggregate values; no ids known)", *(f"  {line}" for line in run.report.wrong_group_lines())]


def context(run: RunView) -> str:
    """Short multi-line account of guarantee counts and per-fault recovery, for messages."""
    lines = [f"guarantee: declared {run.guarantee}; {run.report.describe()}"]
    for i, f in enumerate(run.faults):
        lines += fault_lines(i, f, run.metrics.t0, cut_off_by(f, run.faults))
    damage = run.result_of(DamageResult)  # what the job did about destroyed input or a damaged checkpoint
    return "\n".join(lines + ([] if damage is None else damage.lines))


def setup_lines(run: RunView) -> list[str]:
    """How long the load ran and why, the sinks, the timeouts the run set for a delay class, and the
    lines of the run's delay-class, observer and exactly-once checks (empty for a bare trace)."""
    facts = run.facts
    lines = [facts.load.describe()] if facts.load is not None else []
    lines += sink_lines(facts)
    store = facts.job.state_store if facts.job is not None else None
    lines += [f"state store: {store.description}"] if store else []
    lines += [f"timeout: {c.describe()}" for c in (facts.setup.timeouts if facts.setup is not None else [])]
    for kind in (DelayResult, ObserverResult, TransactionsResult):
        r = run.result_of(kind)
        lines += [] if r is None else r.lines
    return lines


def check_lines(run: RunView) -> list[str]:
    """The default checks that were violated, in one line, then each check of the test's own."""
    violated = [name for name, r in run.checks.items() if r.ok is False]
    lines = [f"checks violated: {', '.join(violated)}"] if violated else []
    for r in run.user_checks.values():
        head, *rest = r.describe().splitlines()
        lines += [f"check {head}", *rest]
    return lines


def sink_lines(facts: RunFacts) -> list[str]:
    """Where each streaming query of the job wrote (from its progress), and, when the run found the
    output unreadable, what it did instead."""
    lines = ["sinks: " + "; ".join(q.describe() for q in facts.sinks)] if facts.sinks else []
    if facts.sink_note:
        lines.append(f"outputs: {facts.sink_note}")
    return lines


def timeline_lines(run: RunView) -> list[str]:
    return render_timeline(run.timeline, run.metrics.t0)


def fault_lines(i: int, f: FaultMetrics, t0: float, cut_by: FaultMetrics | None = None) -> list[str]:
    """The account of fault ``i`` in :meth:`ChaosRun.context` (times relative to ``t0``); ``cut_by``: the fault
    that struck before this one recovered (:func:`~.run_metrics.cut_off_by`)."""
    down = "not measurable" if f.downtime is None else f"{f.downtime:.1f}s"
    head = f"fault {i} ({f.kind} {f.target} at +{f.t - t0:.1f}s): {f.verdict}, downtime {down}"
    sysd = ("system detection -" if f.system_detection is None
            else f"system detection {f.system_detection:.1f}s ({f.system_detection_event})")
    sym = "-" if f.output_symptom is None else f"{f.output_symptom:.1f}s"
    if f.downtime is None:
        after = ("no output after it" if f.first_output_after is None
                 else f"first output {f.first_output_after - f.t:.1f}s after it")
        lines = [f"{head}, recovery not measurable ({sysd}, {after})"]
    elif f.recovered is None:
        lines = [f"{head}, recovery not measured ({sysd}, output symptom {sym}, output gap {f.output_gap:.1f}s)"]
    elif f.recovered:
        lines = [f"{head}, recovery {f.recovery_time:.1f}s ({sysd}, output symptom {sym}, output gap "
                 f"{f.output_gap:.1f}s), failure cost {f.failure_cost:.1f}s"]
    else:
        lines = [f"{head}, not recovered by +{f.horizon - t0:.1f}s ({sysd})"]
        if cut_by is not None:  # its "not recovered" alone would read as a job that never came back
            lines[0] += (f": cut off by {cut_by.kind} {cut_by.target} at +{cut_by.t - t0:.1f}s, after which the job "
                         "came back; the run's recovery counts them as one (docs/metrics.md#overlapping-faults-one-"
                         "recovery)")
    if f.aim is not None:
        lines.append(f"  {f.aim.describe()}")
    if f.phases:
        lines.append("  phases: " + "; ".join(f"+{ph['at']:.1f}s {ph['kind']} {ph['target']}".rstrip()
                                              for ph in f.phases))
    return lines


def summary_row(run: RunView) -> dict[str, object]:
    """One row of the terminal summary table (short, human values)."""
    rt, down, cost = run.metrics.recovery_time, run.metrics.downtime, run.metrics.failure_cost
    return {
        "guarantee": run.guarantee,
        "delivered": run.guarantee_delivered,
        "sent": run.sent,
        "lost": run.lost,
        "dup": run.duplicates,
        "incorrect": run.incorrect,
        "reliability": None if run.reliability is None else round(run.reliability, 6),
        "downtime_s": None if down is None else round(down, 2),
        "recovery_s": rt if rt is NOT_RECOVERED or rt is None else round(float(rt), 2),
        "failure_cost_s": None if cost is None else round(cost, 2),
        "p99_latency_s": round(run.latency.p99, 3),
        "reliable_tput": round(run.reliable_throughput, 1),
        "faults": len(run.faults),
    }


def meta(run: RunView) -> dict[str, object]:
    """The run JSON's ``meta``: the history's facts and, for a run of the harness, the verdicts the
    report has kept there (the delay outcomes, the observer, the exactly-once check) and every warning."""
    out = run.history.meta()
    if run.facts.recorded:
        out.update(warnings=run.warnings, delay_outcomes=[o.to_dict() for o in run.delay_outcomes],
                   observer=run.observer, exactly_once=run.exactly_once_check)
    elif run.warnings:
        out["warnings"] = run.warnings
    return out


def _num(v: float | None, fmt: str) -> str:
    return "unknown" if v is None else format(v, fmt)


def event_dict(e: TimelineEvent) -> dict[str, object]:
    """A timeline event's JSON (``NOT_RECOVERED`` in a detail -> null)."""
    d = e.to_dict()
    if "detail" in d:
        d["detail"] = {k: (None if v is NOT_RECOVERED else v) for k, v in d["detail"].items()}
    return d
