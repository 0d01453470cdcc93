"""The end of a schedule of one history (runner/phases/segment.py): at its longest, its job visibly recovering (a
batch planned after the last heal committed) gets one recovery window more, its job silent does not; and its end
stands only if its faults are still over once its window's outputs are read -- a sign that came after the ask
that ended it sends the schedule on (``confirmed``, ``OneHistory._closed_window``)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from synthetic import T0, Outage, seen_at, stateless_trace

from pytest_streamchaos.analysis.metrics import compute_metrics
from pytest_streamchaos.analysis.run_metrics import faults_back
from pytest_streamchaos.events import Kind, TimelineEvent
from pytest_streamchaos.faults.timeline import recovery_window
from pytest_streamchaos.history import History, Window
from pytest_streamchaos.runner.one_history import OneHistory
from pytest_streamchaos.runner.phases.segment import SegmentLoad


def segment(heal: float, batches: list[dict]) -> SegmentLoad:
    seg = SegmentLoad.__new__(SegmentLoad)  # the grace reads only these; no job or stack behind them
    seg.ctx = SimpleNamespace(spec=SimpleNamespace(trigger_seconds=1.0), warnings=[],
                              inputs=SimpleNamespace(planned=[object()]))
    seg.obs = SimpleNamespace(scheduler=SimpleNamespace(last_heal_due=lambda: heal),
                              progress=SimpleNamespace(batches=batches))
    seg._graced_until = None
    return seg


def test_a_job_whose_output_is_back_gets_one_recovery_window_more():
    now = time.time()
    seg = segment(now - 50, [{"t_start": now - 60, "numInputRows": 9}, {"t_start": now - 3, "numInputRows": 40}])
    assert seg._grace()
    assert seg._graced_until is not None and seg._graced_until - now >= recovery_window(1.0) - 1
    assert seg.ctx.warnings == ["the schedule's faults were not back at its longest, but the job's output was: it "
                                "ran a recovery window more"]
    seg._graced_until = now - 0.1  # the window more has passed: no second one
    assert not seg._grace()
    assert len(seg.ctx.warnings) == 1


def test_a_job_silent_since_the_heal_gets_no_grace():
    now = time.time()
    seg = segment(now - 50, [{"t_start": now - 60, "numInputRows": 9}, {"t_start": now - 3, "numInputRows": 0}])
    assert not seg._grace()
    assert seg._graced_until is None and seg.ctx.warnings == []


def masked_kill_then_a_late_hiccup():
    """A worker killed at +20 s that the output does not show (the job keeps up on its other executor), its
    executor removed at once and its replacement added at +26 s; the replacement's first tasks, slow on a busy
    machine, stall the output 8 s after it joined: +34 to +38 s."""
    trace = stateless_trace(rate=10.0, duration=80, batch_interval=1.0, progress=True, faults=[20.0],
                            outages=[Outage(34.0, 4.0, catch_up_rate=40.0)])
    [kill] = [e for e in trace.timeline if e.kind == Kind.FAULT_INJECTED]
    kill.detail.update(fault="kill_worker", label="kill_worker#1")
    trace.timeline += [TimelineEvent(T0 + 20.1, Kind.EXECUTOR_REMOVED, "1"),
                       TimelineEvent(T0 + 26.0, Kind.EXECUTOR_ADDED, "2")]
    return trace


def test_a_fault_that_looked_over_can_show_a_sign_later():
    """Why a schedule's end is confirmed on its window's outputs: a fault without a sign is over once noticed and
    quiet for the hold and a normal gap (+33 s here), and the stall that comes after it makes the same fault not
    over on more of the history -- a window judged there would report it not recovered."""
    trace = masked_kill_then_a_late_hiccup()

    def judged(t: float):
        seen = seen_at(trace, T0 + t)
        return compute_metrics(History(seen)), seen.timeline

    m, timeline = judged(33.5)
    assert faults_back(m, {"kill_worker#1"}, timeline) and m.faults[0].output_symptom is None
    m, timeline = judged(40.0)
    assert not faults_back(m, {"kill_worker#1"}, timeline) and m.faults[0].recovered is False
    m, timeline = judged(60.0)
    assert faults_back(m, {"kill_worker#1"}, timeline) and m.faults[0].recovered


def confirming(backs: list[bool], at_longest: bool = False) -> SegmentLoad:
    seg = SegmentLoad.__new__(SegmentLoad)  # confirmed() reads only these
    seg.ctx = SimpleNamespace(warnings=[])
    seg._at_longest, seg._went_on, seg._next_check = at_longest, False, 0.0
    answers = iter(backs)
    seg._back = lambda: next(answers)  # type: ignore[method-assign]
    return seg


def test_an_end_stands_when_the_faults_are_still_over_or_the_schedule_ran_its_longest():
    assert confirming([True]).confirmed()
    assert confirming([], at_longest=True).confirmed()  # nothing more to wait for: not asked again
    seg = confirming([False, False])
    assert not seg.confirmed() and not seg.confirmed()
    assert seg.ctx.warnings == ["the schedule's faults showed a sign after they looked over: it went on until they "
                                "were over again"]


def test_an_end_stands_when_the_faults_cannot_be_judged():
    seg = confirming([False])
    seg._next_check = float("inf")  # _back failed to judge and said so: waiting would only run out the longest
    assert seg.confirmed()


@pytest.mark.parametrize("backs", [[True], [False, True], [False, False, True]])
def test_a_window_is_cut_again_after_its_schedule_went_on(backs: list[bool]):
    """``OneHistory._closed_window``: the window is cut (at the last committed batch) and its outputs awaited each
    time the schedule's end is asked to stand; the schedule goes on between, and the last cut is the window."""
    cuts = iter([100.0, 110.0, 120.0])
    seen: list[tuple[str, float]] = []
    history = OneHistory.__new__(OneHistory)
    history.windows, history.since = 3, 50.0
    history._cut = lambda: next(cuts)  # type: ignore[method-assign]
    history._await_window = lambda ctx, w: seen.append(("awaited", w.end))  # type: ignore[method-assign]
    phase = confirming(backs)
    phase.resume = lambda: seen.append(("went on", 0.0))  # type: ignore[method-assign]
    planned = [SimpleNamespace(label="kill_worker@6s window=3")]
    window = history._closed_window(None, phase, planned)  # type: ignore[arg-type]
    assert window == Window(3, "kill_worker@6s window=3", 50.0, 100.0 + 10 * (len(backs) - 1),
                            ("kill_worker@6s window=3",))
    assert [what for what, _ in seen] == ["awaited", *["went on", "awaited"] * (len(backs) - 1)]
