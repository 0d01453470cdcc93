"""One history, judged window by window (docs/explore.md#one-history): which records and faults each window
of a run holds, and its own verdict -- the records sent in it lost, duplicated or misplaced, its faults'
downtime and recovery -- beside the verdict on the whole.

A window is a :class:`~pytest_streamchaos.history.Window`: the records *sent* from its start to its end, and
the faults it names. Where they come from:

- a run that played several fault schedules in one job (``@explore``'s one history) closed each window
  itself (``history_window`` events, :attr:`History.windows`);
- any other run with faults has one window per fault (:func:`fault_windows`), faults whose effects overlap
  -- the next one injected before the one before it recovered -- sharing one.

A window boundary is where a fault's reach begins: a fault can touch only the micro-batch running when it
strikes and the ones after it, and a batch reads the records sent after the batch before it was planned. So
a fault's window starts at the start of the last micro-batch that had ended before it (everything sent
before that was read by a batch that committed before the fault).

Per-window counts come from the validation of the whole run (:func:`restrict`): a membership is a window's
when its input was sent in it, an appearance when its input was (an id never sent: when it came out), so
the windows' counts add up to the whole run's. Pure: a history and a report in, numbers out.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace

import numpy as np

from ..history import History, Window
from .groups import group_recoveries
from .guarantee import SATISFIES, GuaranteeReport
from .run_metrics import FaultMetrics, _num, cut_off_by, worst_of
from .sentinels import NOT_RECOVERED, NotRecovered, RecoveryTime
from .validate import against_need


def batch_boundary(history: History, t: float, floor: float = -math.inf) -> float:
    """Where the reach of a fault injected at ``t`` begins: the start of the last micro-batch that ended by
    ``t`` (not before ``floor``); without such a batch, one trigger interval before ``t``."""
    ended = [b.start for b in history.micro_batches if b.end <= t and math.isfinite(b.start) and b.start >= floor]
    return max(ended) if ended else max(floor, t - history.trigger_seconds)


def fault_windows(history: History, faults: list[FaultMetrics]) -> list[Window]:
    """One window per fault of a run that marked none (``faults``: its measured faults, in injection order):
    a fault whose window begins before the faults of the window before it all recovered joins that window
    (their effects overlap: no record could be told apart between them). The first window starts with the
    run, the last ends with it; empty without a fault."""
    groups: list[list[FaultMetrics]] = []
    starts: list[float] = []
    for f in sorted(faults, key=lambda x: x.t):
        if groups:
            begin = batch_boundary(history, f.t, floor=groups[-1][0].t)
            if all(g.recovered_at is not None and g.recovered_at <= begin for g in groups[-1]):
                groups.append([f])
                starts.append(begin)
                continue
            groups[-1].append(f)
            continue
        groups.append([f])
        starts.append(-math.inf)
    out = []
    for i, (group, start) in enumerate(zip(groups, starts, strict=True)):
        end = starts[i + 1] if i + 1 < len(starts) else math.inf
        labels = tuple(g.label for g in group if g.label)
        out.append(Window(i, " + ".join(labels) or ", ".join(f"{g.kind} {g.target}".strip() for g in group), start,
                          end, labels))
    return out


def sent_in(history: History, window: Window) -> np.ndarray:
    """Which sent records (a mask over ``history.sent``) were sent in ``window``."""
    ts = np.asarray(history.sent.send_ts, dtype=np.float64)
    return (ts >= window.start) & (ts < window.end)


def restrict(report: GuaranteeReport, history: History, window: Window) -> GuaranteeReport | None:
    """``report`` (the validation of the whole ``history``) as it holds for the records sent in ``window``;
    None when it cannot be split (a report per aggregate: no input id is tracked to an output)."""
    outs = history.outputs
    flat = np.asarray(outs.ids, dtype=np.int64)
    if report.resolution != "record" or report.appearance_pair.size != flat.size:
        return None
    mine = sent_in(history, window)
    ids = np.asarray(history.sent.ids, dtype=np.int64)
    pm = mine[report.pair_rows] if report.pair_rows.size else np.zeros(0, bool)
    count = report.pair_count[pm]
    need = report.pair_need[pm] if report.pair_need.size else None
    lost_mask, dup_mask, extra, missing = against_need(count, need)
    rows = report.pair_rows[pm]
    app_rows = report.appearance_rows
    arrival = np.asarray(outs.arrival_ts, dtype=np.float64)[outs.output_of_id()] if flat.size else np.empty(0)
    # an appearance is the window's when its input was sent in it; one of an id never sent, when it came out
    app_in = np.where(app_rows >= 0, mine[np.maximum(app_rows, 0)] if mine.size else False,
                      (arrival >= window.start) & (arrival < window.end))
    wrong = app_in & report.appearance_counted & (report.appearance_pair < 0)
    window_ids = set(ids[mine].tolist())
    return replace(
        report, expected=int(pm.sum()), processed_ok=int(np.count_nonzero(~lost_mask)),
        lost=int(np.count_nonzero(lost_mask)), duplicates=int(extra.sum()), incorrect=int(wrong.sum()),
        ignored=int(np.count_nonzero(app_in & ~report.appearance_counted)),
        side_output=int(np.count_nonzero(app_in & report.appearance_side)),
        late=int(np.count_nonzero(report.pair_late[pm])) if report.pair_late.size else 0,
        lost_ids=ids[rows[lost_mask]], duplicate_ids=ids[rows[dup_mask]], duplicate_extra=extra,
        incorrect_ids=np.unique(flat[wrong]), misplaced=[m for m in report.misplaced if m[0] in window_ids],
        missing_copies=missing if need is not None else None, pair_rows=rows, pair_count=count,
        pair_wrong=report.pair_wrong[pm], pair_first_ts=report.pair_first_ts[pm],
        pair_need=report.pair_need[pm] if report.pair_need.size else report.pair_need,
        pair_late=report.pair_late[pm] if report.pair_late.size else report.pair_late,
        appearance_pair=np.where(app_in, report.appearance_pair, -1),
        appearance_counted=report.appearance_counted & app_in, appearance_side=report.appearance_side & app_in)


def window_totals(faults: list[FaultMetrics],
                  cut: Collection[str] = ()) -> tuple[float | None, RecoveryTime | None, float | None]:
    """A window's downtime, recovery time and failure cost: the worst of its faults' (None: one is not
    measurable; a fault that did not recover makes it :data:`NOT_RECOVERED`), its recovery time over its groups
    of faults whose recoveries overlap (:func:`~.groups.recovery_groups`: a fault cut off by the next one
    recovers with it) -- ``cut``: the labels of faults cut off by the next one (:func:`cut_off_by`), whose
    group is not measurable here when the next one is not the window's; 0.0 each without a fault."""
    if not faults:
        return 0.0, 0.0, 0.0
    return worst_of(faults, group_recoveries(faults, set(cut)))


@dataclass
class WindowVerdict:
    """One window's own verdict: the records sent in it (``sent``), its validation (``report``; None: the run
    has no per-record verdict), its faults' metrics, the declared guarantee."""

    window: Window
    sent: int
    report: GuaranteeReport | None
    declared: str
    faults: list[FaultMetrics] = field(default_factory=list)
    #: the label of each of its faults that the next fault cut off before it recovered -> that fault's label
    cut: dict[str, str] = field(default_factory=dict)

    @property
    def lost(self) -> int | None:
        return None if self.report is None else self.report.lost

    @property
    def duplicates(self) -> int | None:
        return None if self.report is None else self.report.duplicates

    @property
    def incorrect(self) -> int | None:
        return None if self.report is None else self.report.incorrect

    @property
    def guarantee_delivered(self) -> str:
        return "unknown" if self.report is None else self.report.guarantee_delivered

    @property
    def ok(self) -> bool | None:
        """Whether the window delivered the declared guarantee (None: no per-record verdict)."""
        return None if self.report is None else self.declared in SATISFIES[self.report.guarantee_delivered]

    @property
    def downtime(self) -> float | None:
        return window_totals(self.faults, self.cut)[0]

    @property
    def recovery_time(self) -> RecoveryTime | None:
        return window_totals(self.faults, self.cut)[1]

    @property
    def failure_cost(self) -> float | None:
        return window_totals(self.faults, self.cut)[2]

    def describe(self) -> str:
        """One line: ``window 2 (kill_driver ...): 1210 sent, lost 5, duplicates 0 -> at-most-once; downtime
        12.3s, recovered in 25.1s``."""
        w = self.window
        counts = ("no per-record verdict" if self.report is None else
                  f"lost {self.lost}, duplicates {self.duplicates}, incorrect {self.incorrect} -> "
                  f"{self.guarantee_delivered}")
        down, rec, _ = window_totals(self.faults, self.cut)
        if not self.faults:
            recovery = "no fault"
        else:
            said = ("recovery not measurable" if rec is None else "NOT RECOVERED" if rec is NOT_RECOVERED
                    else f"recovered in {float(rec):.1f}s")
            # the recovery said is then the chain's, from the first one's injection (analysis/groups.py)
            one = ", measured with it as one" if isinstance(rec, float) else ""
            said += "".join(f" ({label} cut off by {by} before it recovered; the job came back{one})"
                            for label, by in self.cut.items())
            recovery = f"downtime {'not measurable' if down is None else f'{down:.1f}s'}, {said}"
        return f"window {w.index} ({w.name or 'no fault'}): {self.sent} sent, {counts}; {recovery}"

    def to_dict(self) -> dict[str, object]:
        down, rec, cost = window_totals(self.faults, self.cut)
        return {**self.window.detail(), "sent": self.sent, "lost": self.lost, "duplicates": self.duplicates,
                "incorrect": self.incorrect, "guarantee_delivered": self.guarantee_delivered, "ok": self.ok,
                "lost_ids": [] if self.report is None else self.report.lost_ids[:20].tolist(),
                "duplicate_ids": [] if self.report is None else self.report.duplicate_ids[:20].tolist(),
                "downtime": _num(down), "recovery_time": _num(rec), "recovered": None if rec is None else
                not isinstance(rec, NotRecovered), "failure_cost": _num(cost),
                "faults": [f.label or f.kind for f in self.faults], "cut_off": dict(self.cut)}


def judge_window(history: History, window: Window, report: GuaranteeReport | None, faults: list[FaultMetrics],
                 declared: str) -> WindowVerdict:
    """The verdict of ``window``: ``report`` the whole run's validation (None: no per-record verdict), ``faults``
    every measured fault of the run (the window's are picked by label; a fault the next one cut off before it
    recovered is measured as far as it went: :func:`cut_off_by`)."""
    mine = [f for f in faults if f.label in set(window.faults)]
    part = None if report is None else restrict(report, history, window)
    cut = {f.label: by.label or by.kind for f in mine if (by := cut_off_by(f, faults)) is not None}
    return WindowVerdict(window, int(np.count_nonzero(sent_in(history, window))), part, declared, mine, cut)


def judge_windows(history: History, report: GuaranteeReport | None, faults: list[FaultMetrics],
                  declared: str) -> list[WindowVerdict]:
    """Every window of ``history`` (the ones it closed, else one per fault: :func:`fault_windows`) judged on its
    own."""
    windows = history.windows or fault_windows(history, faults)
    return [judge_window(history, w, report, faults, declared) for w in windows]


__all__ = ["WindowVerdict", "batch_boundary", "cut_off_by", "fault_windows", "judge_window", "judge_windows",
           "restrict", "sent_in", "window_totals"]
