"""The windows check: each window of the run judged on its own (:mod:`pytest_streamchaos.analysis.windows`) --
the records sent in it lost, duplicated or misplaced against the declared guarantee, its faults' downtime
and recovery -- so that a violation names the fault (or the schedule of one history) it came with.

It reads the one :class:`~.guarantee.Validation` and the one :class:`~.recovery.Recovery` of the history; a
run without a fault has no window (``ok`` None), a view of one window judges that window alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_streamchaos.history import History

from ..checker import CheckResult, Memo
from ..windows import WindowVerdict, judge_window, judge_windows
from .guarantee import Validation
from .recovery import Recovery


@dataclass
class WindowsResult(CheckResult):
    """Every window's verdict, in order (:class:`~pytest_streamchaos.analysis.windows.WindowVerdict`)."""

    verdicts: list[WindowVerdict] = field(default_factory=list)


class Windows:
    """The run's windows, each judged on its own; ``ok``: every window delivered the declared guarantee (None:
    no window, or no per-record verdict)."""

    name = "windows"

    def __init__(self, validation: Validation, recovery: Recovery) -> None:
        self.validation = validation
        self.recovery = recovery
        self._memo = Memo()

    def check(self, history: History) -> WindowsResult:
        return self._memo.get(history, lambda: self._judge(history))

    def _judge(self, history: History) -> WindowsResult:
        v, r = self.validation.check(history), self.recovery.check(history)
        assert r.metrics is not None
        report = v.run_report if v.per_record else None
        faults = r.metrics.faults
        if history.focus is not None:  # the metrics hold the window's faults already
            verdicts = [judge_window(history, history.focus, report, faults, v.declared)]
        else:
            verdicts = judge_windows(history, report, faults, v.declared)
        oks = [w.ok for w in verdicts]
        ok = None if not verdicts or None in oks else all(oks)
        reason = "" if verdicts else "no fault: the run is one window"
        return WindowsResult(self.name, ok, [w.describe() for w in verdicts], {"windows": len(verdicts)},
                             reason=reason, verdicts=verdicts)
