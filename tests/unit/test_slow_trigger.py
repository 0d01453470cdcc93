"""Truth on slow triggers (issue 38, point 4): a job whose micro-batches come every 30 s outputs nothing
for 30 s at a time. A baseline shorter than two of its batches has not seen its normal output, so what a
fault did is not measurable -- never "masked, recovered in 0.0 s" -- and a bound asserted on it fails
naming why. Synthetic traces with known answers; the job's real pace comes from Spark's progress (the run
does not know the trigger the job hard-codes)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from synthetic import T0, Outage, stateless_trace

from pytest_streamchaos.analysis.metrics import NotMeasurable, NotMeasured, compute_metrics
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.sla import SLAViolation
from pytest_streamchaos.analysis.trigger import batch_cadence
from pytest_streamchaos.records import Trace


def progress(every: float, until: float, start: float = 0.0, app: str = "app-1") -> list[dict]:
    """Spark's progress of a job whose micro-batches start every ``every`` seconds."""
    n = int((until - start) / every) + 1
    return [{"id": "q", "batchId": k, "app_id": app, "t_start": T0 + start + k * every,
             "durationMs": {"triggerExecution": 400}, "numInputRows": 600} for k in range(n)]


def slow_job(fault: float, duration: float, warmup: float = 62.0, delay: float = 14.0) -> Trace:
    """A 30 s-trigger job's run: 20 records/s, output in a burst every 30 s, a driver killed at ``fault``
    (run seconds) after which the next output comes only ``delay`` s later. The run's own trigger setting
    is the default 1 s: it does not know what the job hard-codes."""
    tr = stateless_trace(rate=20, duration=duration, latency=0.3, warmup=warmup, batch_interval=30,
                         faults=[fault], outages=[Outage(fault, delay)])
    tr.batches = progress(30.0, duration)
    return tr


def test_a_kill_inside_a_short_baseline_of_a_30s_trigger_is_not_measurable_never_masked():
    run = ChaosRun.from_trace(slow_job(fault=72, duration=130))
    m, (f,) = run.metrics, run.faults
    assert m.cycle == pytest.approx(30.0)
    assert (m.downtime, m.recovery_time, m.failure_cost) == (None, None, None)
    assert f.verdict == "unknown" and f.downtime is None and f.recovered is None
    assert f.first_output_after == pytest.approx(T0 + 90.0, abs=0.5)  # the next output, a fact kept
    why = m.unavailable["downtime"]
    assert "every 30.0s (Spark's progress)" in why and "lasted 10.0s" in why and "after=60" in why
    assert not run.measurable


def test_a_bound_on_an_unmeasurable_metric_never_passes_silently():
    run = ChaosRun.from_trace(slow_job(fault=72, duration=130))
    for name in ("downtime", "recovery_time", "failure_cost"):
        value = getattr(run, name)
        assert isinstance(value, NotMeasured) and not value and str(value) == "not measurable"
        assert f"{value:.1f}" == "not measurable"
        for compare in (lambda v: v < 10, lambda v: v > 10, lambda v: v <= 10, lambda v: v >= 10, float,
                        lambda v: v + 1, round):
            with pytest.raises(NotMeasurable, match=f"{name} was not measured .*every 30.0s"):
                compare(value)
    with pytest.raises(AssertionError, match="downtime was not measured"):
        assert run.downtime < 10  # what a test writes: it fails, saying why
    with pytest.raises(SLAViolation, match="downtime not measured, bound downtime <= 10 cannot hold: the job's"):
        run.assert_sla(max_downtime=10, check_guarantee=False)


def test_the_report_and_the_json_say_not_measurable_and_why():
    run = ChaosRun.from_trace(slow_job(fault=72, duration=130))
    text = run.describe()
    assert "downtime not measured, recovery time not measured, failure cost not measured" in text
    assert "downtime, recovery_time, failure_cost not measured: the job's micro-batches come every 30.0s" in text
    assert "unknown, downtime not measurable, recovery not measurable" in text and "first output 18.0s after it" in text
    assert "masked" not in text and "0.0s" not in text.split("timeline:")[0].split("fault 0")[1]
    d = json.loads(run.to_json())
    assert d["downtime"] is None and d["recovery_time"] is None and d["recovered"] is None
    assert d["measurable"] is False and "every 30.0s" in d["unavailable"]["downtime"]
    assert d["metrics"]["cycle"] == pytest.approx(30.0)
    assert run.summary_row()["downtime_s"] is None
    assert "downtime not measurable" in repr(run)


def test_with_two_batches_of_baseline_and_a_long_window_the_same_kill_is_measured_and_not_masked():
    run = ChaosRun.from_trace(slow_job(fault=140, duration=300))
    (f,) = run.faults
    assert run.measurable and f.verdict in ("degraded", "outage")
    assert f.output_symptom is not None and f.recovery_time > 0  # the 14 s the next output was late showed


def test_a_known_slow_trigger_without_progress_is_judged_the_same():
    # the trigger known to the run (a job of the STREAMCHAOS_* contract), no progress: the same verdict
    tr = stateless_trace(rate=20, duration=130, latency=0.3, warmup=62, batch_interval=30, faults=[72],
                         outages=[Outage(72, 14)], trigger=30.0)
    m = compute_metrics(tr)
    assert m.downtime is None and m.faults[0].verdict == "unknown" and "(its trigger)" in m.unavailable["downtime"]


def test_a_fast_job_is_measured_as_before():
    tr = stateless_trace(faults=[30], outages=[Outage(31, 6, catch_up_rate=3000)])
    tr.batches = progress(1.0, 60)
    m = compute_metrics(tr)
    assert not m.unavailable and m.cycle == pytest.approx(1.0)
    assert m.faults[0].verdict == "outage" and m.downtime == pytest.approx(6.0, abs=0.6)


def test_a_fault_too_close_to_the_end_to_show_a_gap_is_not_called_masked():
    # 1 s batches, the fault 1 s before the judged end: nothing could have shown yet
    tr = stateless_trace(duration=60, faults=[58.2])
    m = compute_metrics(tr)
    (f,) = m.faults
    assert f.verdict == "unknown" and f.downtime is None and m.downtime is None
    assert "showed no sign by its horizon" in m.unavailable["downtime"]
    # a fault with a sign in the same spot is measured: the sign is there
    tr = stateless_trace(duration=60, faults=[57.5], outages=[Outage(57.5, 10)])
    assert compute_metrics(tr).faults[0].verdict == "outage"


def test_nothing_processed_in_the_baseline_but_output_later_is_not_measurable():
    # a windowed job whose first window closes after the fault: its normal output was never seen
    tr = stateless_trace(rate=20, duration=90, latency=0.3, warmup=5, faults=[20], stop_at=0)
    late = stateless_trace(rate=20, duration=90, latency=0.3, warmup=5)
    tr.outputs = late.outputs.__class__(late.outputs.arrival_ts + 30.0, late.outputs.offsets, late.outputs.ids)
    m = compute_metrics(tr)
    assert m.downtime is None and "nothing was processed" in m.unavailable["downtime"]


def test_the_cadence_is_the_median_batch_interval_per_query_and_launch():
    batches = progress(30.0, 100) + progress(30.0, 200, start=110, app="app-2")
    batches.append({"id": "q", "batchId": 3, "app_id": "app-1", "t_start": T0 + 91})  # a re-report: first kept
    assert batch_cadence(batches, math.inf) == pytest.approx(30.0)
    assert batch_cadence(batches, T0 + 20) is None  # one batch before: no interval
    iso = [{"id": "q", "batchId": k, "timestamp": f"2026-01-01T00:00:{10 * k:02d}.000Z"} for k in range(4)]
    assert batch_cadence(iso, math.inf) == pytest.approx(10.0)
    assert batch_cadence([], math.inf) is None
    assert np.isfinite(compute_metrics(slow_job(fault=72, duration=130)).cycle)


def test_a_real_time_job_is_measured_though_its_progress_comes_once_per_checkpoint_interval():
    # real-time mode: records flow out continuously while Spark reports a "batch" every 6 s (the 5 s
    # checkpoint interval); a 10 s baseline of continuous output has seen its normal output (the bench's
    # driver kills were "not measurable" before: the cadence of the progress taken for the output's)
    def run(continuous: bool) -> ChaosRun:
        tr = stateless_trace(faults=[30], outages=[Outage(31, 6, catch_up_rate=3000)], warmup=20)
        tr.batches, tr.continuous = progress(6.0, 60), continuous
        return ChaosRun.from_trace(tr)

    micro_batch = run(continuous=False)
    assert micro_batch.metrics.cycle == pytest.approx(6.0) and isinstance(micro_batch.downtime, NotMeasured)
    real_time = run(continuous=True)
    assert real_time.measurable and real_time.metrics.cycle == pytest.approx(1.0)
    assert real_time.faults[0].verdict == "outage" and real_time.downtime == pytest.approx(6.0, abs=0.6)
