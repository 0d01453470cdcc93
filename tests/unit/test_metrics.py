"""Metrics on synthetic traces with planted outages, spikes and bursts of known size."""

import math

import numpy as np
import pytest
from synthetic import T0, Outage, Spike, stateless_trace, windowed_trace

from pytest_streamchaos.analysis.metrics import (
    NOT_RECOVERED,
    MetricParams,
    compute_metrics,
    micro_batches,
    normal_gap,
)
from pytest_streamchaos.analysis.oracle import TumblingWindowOracle
from pytest_streamchaos.records import TimelineEvent

B = 1.0  # default bucket


def test_planted_gap_downtime_exact_and_recovery_within_one_bucket():
    # fault at 30 s; no output in [31, 43); backlog output at 3000/s while input continues at 1000/s:
    # the 12 000-record backlog drains at a net 2000/s -> latency back to normal at 49 s
    tr = stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)])
    m = compute_metrics(tr)
    f = m.faults[0]
    assert f.downtime == pytest.approx(12.0, abs=0.01), f
    assert m.downtime == f.downtime
    assert f.gap_start - T0 == pytest.approx(31.0, abs=0.01)
    assert f.output_symptom == pytest.approx(1.0, abs=0.01)
    assert f.recovery_time == pytest.approx(19.0, abs=B), f
    assert f.output_symptom + f.output_gap + f.catch_up == pytest.approx(f.recovery_time)
    assert f.catch_up == pytest.approx(6.0, abs=B)
    assert f.verdict == "outage"
    # the oldest delayed record waited 12 s more than the 0.2 s baseline
    assert f.failure_cost == pytest.approx(12.0, abs=0.01)
    assert m.baseline.throughput == pytest.approx(1000.0, rel=0.01)
    assert m.baseline.normal_gap == pytest.approx(1.0)  # the trigger interval: output is continuous


def test_latency_spike_failure_cost_and_recovery():
    tr = stateless_trace(faults=[30], spikes=[Spike(32, 6, 4.0)])
    m = compute_metrics(tr)
    f = m.faults[0]
    assert f.downtime == 0.0
    assert f.failure_cost == pytest.approx(4.0, abs=0.01)
    assert m.latency.peak == pytest.approx(4.2, abs=0.01)
    assert m.latency.baseline == pytest.approx(0.2, abs=1e-6)
    # bound = 0.2 * 1.5 + 1.0 = 1.3; last output above it arrives at 39.0 (computed by hand)
    assert f.recovery_time == pytest.approx(9.0, abs=B)
    assert f.output_symptom == pytest.approx(3.925, abs=0.01)
    assert f.verdict == "degraded"
    strict = compute_metrics(tr, params=MetricParams(slo_latency_seconds=3.0))
    assert strict.faults[0].verdict == "outage"


def test_bursty_micro_batches_are_not_downtime_and_fault_is_masked():
    # every 5 s a burst of 5000 outputs; nothing goes wrong
    tr = stateless_trace(faults=[30], batch_interval=5.0, trigger=5.0)
    m = compute_metrics(tr)
    f = m.faults[0]
    assert m.baseline.normal_gap == pytest.approx(5.0, abs=0.01)
    assert f.downtime == 0.0 and m.downtime == 0.0
    assert f.verdict == "masked", f
    assert f.recovery_time == 0.0
    # peak vs baseline p99 of the 0.2..5.2 s sawtooth: only sampling noise is left
    assert f.failure_cost < 0.1
    # raw reliable throughput is bursty, the smoothed band input is flat
    raw = m.series.reliable[10:50]
    assert raw.max() == pytest.approx(5000.0) and raw.min() == 0.0
    assert np.allclose(m.series.reliable_smoothed[10:50], 1000.0, rtol=0.05)


def test_bursty_output_with_jitter_still_masked():
    tr = stateless_trace(faults=[30], batch_interval=5.0, trigger=1.0)
    rng = np.random.default_rng(1)
    tr.outputs.arrival_ts = np.sort(tr.outputs.arrival_ts + np.repeat(rng.uniform(0, 0.8, 20), 3000)[: len(tr.outputs)])
    m = compute_metrics(tr)
    assert m.faults[0].verdict == "masked" and m.downtime == 0.0


def test_outage_inside_bursty_output():
    tr = stateless_trace(faults=[30], batch_interval=5.0, trigger=5.0, outages=[Outage(31, 20)])
    m = compute_metrics(tr)
    f = m.faults[0]
    # last burst at 30, backlog all at once at 51 -> gap of 21 s
    assert f.downtime == pytest.approx(21.0, abs=0.01)
    assert f.verdict == "outage"


def test_a_gap_that_begins_just_before_a_fault_is_that_faults():
    """Micro-batches every 2 s; a harmless fault at 20 s, then one at 30.5 s that stops the output for
    10 s. The silence begins with the batch at 30 s, half a second before the second fault: it is the
    second fault's downtime (its output was due after it), not the first one's."""
    tr = stateless_trace(faults=[20, 30.5], batch_interval=2.0, trigger=2.0, outages=[Outage(30.5, 10)])
    m = compute_metrics(tr)
    first, second = m.faults
    assert first.downtime == 0.0 and first.verdict == "masked", first
    assert second.downtime == pytest.approx(10.5, abs=0.01) and second.verdict == "outage", second


def test_not_recovered_when_job_dies():
    tr = stateless_trace(faults=[30], stop_at=35)
    m = compute_metrics(tr)
    f = m.faults[0]
    assert f.recovery_time is NOT_RECOVERED and m.recovery_time is NOT_RECOVERED
    assert not f.recovered and f.recovered_at is None
    assert f.downtime == pytest.approx(25.0, abs=0.01)  # from the last output to the end of input
    assert f.verdict == "outage"
    # inputs sent from 34.8 s on were never processed: at the end of the run (65 s) they waited ~30 s
    assert f.failure_cost == pytest.approx(65 - 34.8 - 0.2, abs=0.05)
    assert not (m.recovery_time < 1e9)


def test_not_recovered_when_latency_keeps_growing():
    # throughput drops to half from 30 s on: a growing backlog, output never stops
    tr = stateless_trace(faults=[30], outages=[Outage(30, 0.001, catch_up_rate=500)])
    m = compute_metrics(tr)
    assert m.faults[0].recovery_time is NOT_RECOVERED
    assert m.faults[0].downtime == 0.0


def test_repeated_faults_stability():
    outages = [Outage(21, 4, catch_up_rate=5000), Outage(51, 8, catch_up_rate=5000), Outage(81, 4, catch_up_rate=5000)]
    tr = stateless_trace(duration=110, faults=[20, 50, 80], outages=outages)
    m = compute_metrics(tr)
    assert [round(f.downtime) for f in m.faults] == [4, 8, 4]
    rts = [f.recovery_time for f in m.faults]
    # recovery = 1 s detection + gap + catch-up (backlog gap*1000 at a net 4000/s)
    for rt, gap in zip(rts, (4, 8, 4), strict=True):
        assert rt == pytest.approx(1 + gap + gap / 4, abs=B)
    assert m.stability.not_recovered == 0
    assert m.stability.max - m.stability.min == pytest.approx(max(rts) - min(rts))
    assert m.stability.std > 0
    assert m.recovery_time == max(rts)


def test_no_fault_run_reports_longest_abnormal_gap():
    tr = stateless_trace(outages=[Outage(40, 6)])
    m = compute_metrics(tr)
    assert m.faults == []
    assert m.downtime == pytest.approx(6.0, abs=0.01)
    assert m.recovery_time == 0.0 and m.failure_cost == 0.0


def test_throughput_latency_and_backlog_series():
    tr = stateless_trace(rate=200, duration=20, latency=0.5)
    m = compute_metrics(tr)
    s = m.series
    assert s.t[0] == T0 and np.allclose(np.diff(s.t), 1.0)
    assert np.allclose(s.input[:20], 200.0)
    assert np.allclose(s.reliable[1:20], 200.0)
    assert np.nansum(s.reliable) * B == 4000
    assert np.allclose(s.latency_p50[1:20], 0.5)
    assert np.all(s.backlog[1:19] == 100)  # 0.5 s of input in flight
    assert s.backlog[-1] == 0
    assert m.reliable_throughput == pytest.approx(200.0, rel=0.01)


def test_duplicates_do_not_count_as_reliable_throughput():
    tr = stateless_trace(rate=100, duration=20, duplicate=np.arange(0, 2000))
    m = compute_metrics(tr)
    assert np.nansum(m.series.reliable) == 2000
    assert np.nansum(m.series.output_ids) == 4000


def test_window_latency_uses_closing_input():
    tr = windowed_trace(faults=[30])
    m = compute_metrics(tr, oracle=TumblingWindowOracle(5.0))
    # each window is output 0.5 s after the closing input's send time
    assert m.latency.p50 == pytest.approx(0.5) and m.latency.peak == pytest.approx(0.5)
    assert m.faults[0].verdict == "masked"
    assert m.baseline.normal_gap == pytest.approx(5.0, abs=0.01)


def test_bucket_size_is_a_parameter():
    tr = stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)])
    m = compute_metrics(tr, params=MetricParams(bucket_seconds=0.25, hold_seconds=3))
    # latency is in band from 48.45 s; the 5 s forward throughput window averages the last 0.5 s of
    # 3000/s catch-up into the band from 48.5 s: 18.5 s, within one default bucket of the 19 s truth
    assert m.faults[0].recovery_time == pytest.approx(18.5, abs=0.25)
    assert m.series.t.size > 4 * 60


def test_fault_before_steady_state_degrades_recovery_metrics_to_none_with_the_reason():
    # an aimed fault that fired 1 s after warm-up: no baseline to compare recovery against
    tr = stateless_trace(faults=[6], outages=[Outage(7, 6, catch_up_rate=3000)])
    m = compute_metrics(tr)
    f = m.faults[0]
    assert m.recovery_time is None and m.failure_cost is None and m.recovered is None
    assert f.recovery_time is None and f.failure_cost is None and f.catch_up is None and f.recovered is None
    assert set(m.unavailable) == {"recovery_time", "failure_cost"}
    assert "no usable baseline" in m.unavailable["recovery_time"]
    assert "inject it later" in m.unavailable["recovery_time"]
    # what needs no baseline is still measured: the output gap and the first symptom
    assert m.downtime == pytest.approx(6.0, abs=0.01)
    assert f.output_symptom == pytest.approx(1.0, abs=0.01) and f.verdict == "outage"
    # "not measured" is not "not recovered": no such event is derived
    assert not [e for e in m.derived_events() if e.kind == "not_recovered"]
    d = m.to_dict()
    assert d["recovery_time"] is None and d["recovered"] is None and d["failure_cost"] is None
    assert d["unavailable"]["failure_cost"].startswith("no usable baseline")


def test_system_detection_and_output_symptom_are_reported_apart():
    # worker killed at 30 s; Spark declares its executor lost 2.5 s later (its own event); the
    # output shows it at 31 s (the gap starts). A driver's first launch is no reaction to a fault.
    tr = stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)])
    tr.timeline += [TimelineEvent(T0 + 1.0, "driver_launched", "driver", {"launch": 1}),
                    TimelineEvent(T0 + 32.5, "executor_removed", "executor-0", {}),
                    TimelineEvent(T0 + 35.0, "executor_added", "executor-2", {})]
    f = compute_metrics(tr).faults[0]
    assert f.system_detection == pytest.approx(2.5) and f.system_detection_event == "executor_removed"
    assert f.output_symptom == pytest.approx(1.0, abs=0.01)
    with pytest.warns(DeprecationWarning, match=r"detection is deprecated .* use run.faults\[i\].output_symptom"):
        assert f.detection == f.output_symptom  # the old name, until 0.3.0
    d = f.to_dict()
    assert d["system_detection"] == pytest.approx(2.5) and d["output_symptom"] == pytest.approx(1.0, abs=0.01)
    assert d["system_detection_event"] == "executor_removed"


def test_driver_relaunch_is_a_system_detection_and_none_without_events():
    tr = stateless_trace(faults=[30], outages=[Outage(31, 5)])
    assert compute_metrics(tr).faults[0].system_detection is None
    tr.timeline.append(TimelineEvent(T0 + 30.4, "driver_launched", "driver", {"launch": 2}))
    f = compute_metrics(tr).faults[0]
    assert f.system_detection == pytest.approx(0.4) and f.system_detection_event == "driver_launched"


def test_micro_batches_from_progress():
    mb = micro_batches(
        [
            {"batchId": 0, "timestamp": "2024-01-01T00:00:00.000Z", "durationMs": {"triggerExecution": 1500},
             "numInputRows": 10},
            {"batchId": 1, "timestamp": "2024-01-01T00:00:01.500Z", "durationMs": {"triggerExecution": 500}},
        ]
    )
    assert mb.batch_id.tolist() == [0, 1]
    assert mb.start[1] - mb.start[0] == pytest.approx(1.5)
    assert mb.duration.tolist() == [1.5, 0.5]
    assert mb.summary()["max"] == 1.5


def test_normal_gap_is_time_weighted():
    continuous = np.arange(0, 60, 0.01)
    assert normal_gap(continuous, 1.0) == 1.0
    bursts = np.sort(np.concatenate([np.arange(0, 60, 5.0) + d for d in np.linspace(0, 0.01, 100)]))
    assert normal_gap(bursts, 1.0) == pytest.approx(5.0, abs=0.02)
    one_pause = np.concatenate((np.arange(0, 30, 0.1), np.arange(33, 60, 0.1)))
    assert normal_gap(one_pause, 0.5) == 0.5  # a single 3 s pause in 60 s is not "normal"


def test_not_recovered_compares_greater_than_numbers():
    assert NOT_RECOVERED > 1e300 and not NOT_RECOVERED < 5 and 5 < NOT_RECOVERED
    assert not (NOT_RECOVERED <= 10) and NOT_RECOVERED >= 10
    assert repr(NOT_RECOVERED) == "not recovered" and f"{NOT_RECOVERED:.1f}" == "not recovered"
    assert float(NOT_RECOVERED) == math.inf
    assert NOT_RECOVERED == NOT_RECOVERED and NOT_RECOVERED != math.inf


def test_job_that_never_outputs():
    tr = stateless_trace(faults=[30], stop_at=0)
    m = compute_metrics(tr)
    f = m.faults[0]
    assert f.recovery_time is NOT_RECOVERED and f.verdict == "outage"
    assert f.downtime == pytest.approx(55.0)  # warm-up end (5 s) to end of input (60 s)


def test_multi_id_output_latency_is_from_latest_input():
    from pytest_streamchaos.records import OutputRecords, SentRecords, Trace

    sent = SentRecords(np.arange(4), np.zeros(4, np.int64), np.array([0.0, 1, 2, 3]), np.array([0.0, 1, 2, 3]))
    outs = OutputRecords.from_lists([2.5, 4.0], [[0, 1], [2, 3, 99]])
    m = compute_metrics(Trace(sent, outs))
    assert m.output_latency.tolist() == [1.5, 1.0]


def test_overall_latency_excludes_the_warmup_backlog() -> None:
    """A startup backlog (inputs waiting while the job starts) is not the job's latency under load."""
    from synthetic import Spike, stateless_trace

    from pytest_streamchaos.analysis.metrics import compute_metrics
    from pytest_streamchaos.analysis.oracle import IdentityOracle
    from pytest_streamchaos.analysis.validate import validate

    # a 3 s latency hump in the first second, all of it out before the warm-up ends at 5 s
    trace = stateless_trace(rate=200, duration=40, latency=0.2, warmup=5.0, spikes=[Spike(0.0, 1.0, 3.0)])
    assert trace.outputs.arrival_ts.max() - trace.outputs.arrival_ts.min() > 30
    oracle = IdentityOracle()
    m = compute_metrics(trace, validate(trace, oracle), oracle)
    assert m.latency.p99 == pytest.approx(0.2, abs=0.01)
    assert m.latency.peak == pytest.approx(0.2, abs=0.01)


def test_a_fault_before_warm_up_with_every_bucket_in_band_degrades_not_crashes():
    """No bad bucket anywhere and no baseline: recovery is unavailable with the reason (was an IndexError)."""
    m = compute_metrics(stateless_trace(rate=200.0, duration=60, latency=0.5, warmup=5.0, faults=[2.2]),
                        params=MetricParams(hold_seconds=1))
    assert "no usable baseline" in m.unavailable["recovery_time"]
    assert m.faults[0].recovered is None


@pytest.mark.parametrize("apart", [0.0, 0.3])
def test_faults_injected_at_once_are_one_occurrence_with_the_same_window(apart):
    """Two marks at the same moment (both workers killed at once) inject one after the other; each is
    judged over the whole occurrence, not the first over a zero-length window (masked) and the second
    over all of it. The same planted gap as above: downtime 12 s, recovery ~19 s, for both."""
    alone = compute_metrics(stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)])).faults[0]
    m = compute_metrics(stateless_trace(faults=[30, 30 + apart], outages=[Outage(31, 12, catch_up_rate=3000)]))
    assert len(m.faults) == 2
    for f in m.faults:
        assert f.verdict == "outage", f
        assert f.downtime == pytest.approx(alone.downtime, abs=0.01)
        assert f.horizon == alone.horizon
        assert f.recovery_time == pytest.approx(alone.recovery_time + 30 - (f.t - T0), abs=B)


def test_faults_a_few_seconds_apart_keep_their_own_windows():
    m = compute_metrics(stateless_trace(faults=[30, 33], outages=[Outage(31, 12, catch_up_rate=3000)]))
    first, second = m.faults
    assert first.horizon == pytest.approx(T0 + 33)  # up to the next fault, as before
    assert first.downtime == pytest.approx(12.0, abs=0.01) and second.downtime == 0.0
