"""A schedule of one history at its longest: its job visibly recovering (a batch planned after the last heal
committed) gets one recovery window more, its job silent does not (runner/phases/segment.py)."""

from __future__ import annotations

import time
from types import SimpleNamespace

from pytest_streamchaos.faults.timeline import recovery_window
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
