"""Ending the load on recovery (docs/metrics.md#ending-the-load-on-recovery): a recovery point that
:func:`recovery_settled` calls settled mid-run is the one the whole run reports; a fault masked so far
settles only once the system noticed it and nothing showed for the settling time; a fault not
recovered never ends the load."""

import numpy as np
import pytest
from synthetic import T0, Outage, Spike, seen_at, stateless_trace

from pytest_streamchaos.analysis.metrics import compute_metrics, recovery_settled
from pytest_streamchaos.records import TimelineEvent

NEED = 5 + 5 + 2 + 2  # hold + smoothing + reach-back (the 2 s downtime threshold of a 1 s trigger) + 2 buckets


def first_settled(trace, step=0.5):
    """(cut time, metrics) of the first cut after the last fault at which the recovery is settled (as
    the runner asks: once the schedule is done), else (None, None)."""
    for cut in np.arange(trace.fault_times()[-1], T0 + 200.0, step):
        seen = seen_at(trace, cut)
        m = compute_metrics(seen)
        if recovery_settled(m, seen.timeline):
            return cut, m
    return None, None


def jittered(trace, seed=1, width=0.6):
    """Micro-batch bursts that do not land exactly on the trigger."""
    rng = np.random.default_rng(seed)
    bursts = np.unique(trace.outputs.arrival_ts, return_inverse=True)[1]
    trace.outputs.arrival_ts = trace.outputs.arrival_ts + rng.uniform(0, width, bursts.max() + 1)[bursts]
    order = np.argsort(trace.outputs.arrival_ts, kind="stable")
    assert (trace.outputs.lengths() == 1).all()
    trace.outputs.arrival_ts, trace.outputs.ids = trace.outputs.arrival_ts[order], trace.outputs.ids[order]
    return trace


@pytest.mark.parametrize("trace", [
    stateless_trace(rate=200, duration=90, faults=[30], outages=[Outage(31, 8, catch_up_rate=600)]),
    stateless_trace(rate=200, duration=90, faults=[30], spikes=[Spike(31, 6, 4.0)], batch_interval=1.0),
    jittered(stateless_trace(rate=200, duration=90, faults=[30], outages=[Outage(32, 6, catch_up_rate=500)],
                             batch_interval=1.0)),
    stateless_trace(rate=200, duration=120, faults=[30, 60], outages=[Outage(31, 5, catch_up_rate=600),
                                                                      Outage(61, 7, catch_up_rate=600)]),
], ids=["outage", "latency-spike", "jittered-bursts", "two-faults"])
def test_a_settled_recovery_point_is_the_whole_runs(trace):
    full = compute_metrics(trace)
    assert all(f.recovered for f in full.faults)
    cut, m = first_settled(trace)
    assert cut is not None, "never settled although the run recovers"
    assert [f.recovered_at for f in m.faults] == [f.recovered_at for f in full.faults]
    assert [f.recovery_time for f in m.faults] == [f.recovery_time for f in full.faults]
    assert [f.output_symptom for f in m.faults] == [f.output_symptom for f in full.faults]
    last = full.faults[-1]
    # it settles as soon as the windows T depends on are complete, not at the end of the run
    assert last.recovered_at + NEED <= cut <= last.recovered_at + NEED + 2, (cut - T0, last.recovered_at - T0)


def test_every_later_cut_agrees_too():
    trace = jittered(stateless_trace(rate=200, duration=90, faults=[30], outages=[Outage(32, 6, catch_up_rate=500)],
                                     batch_interval=1.0), seed=7)
    full = compute_metrics(trace)
    cut, _ = first_settled(trace)
    for later in np.arange(cut, T0 + 90, 1.0):
        seen = seen_at(trace, later)
        m = compute_metrics(seen)
        assert recovery_settled(m, seen.timeline)
        assert m.faults[0].recovered_at == full.faults[0].recovered_at


def noticed(trace, at, kind="executor_removed"):
    trace.timeline.append(TimelineEvent(T0 + at, kind, "executor-1"))
    trace.timeline.sort(key=lambda e: e.t)
    return trace


def test_a_masked_fault_the_system_did_not_notice_never_settles():
    trace = stateless_trace(rate=200, duration=90, faults=[30], batch_interval=1.0)
    assert compute_metrics(trace).faults[0].verdict == "masked"
    assert first_settled(trace) == (None, None)


def test_a_masked_fault_the_system_noticed_settles_after_the_settling_time_and_stays_masked():
    trace = noticed(stateless_trace(rate=200, duration=90, faults=[30], batch_interval=1.0), at=31.5)
    full = compute_metrics(trace)
    assert full.faults[0].verdict == "masked" and full.faults[0].system_detection == pytest.approx(1.5)
    cut, m = first_settled(trace)
    assert T0 + 31.5 + NEED <= cut <= T0 + 31.5 + NEED + 1.5
    assert m.faults[0].verdict == "masked"
    # a later heal or reaction restarts the quiet time: the worker restarted at 35 s and its new
    # executor added at 41 s move it to 41 + NEED
    noticed(noticed(trace, at=35, kind="fault_healed"), at=41, kind="executor_added")
    cut, m = first_settled(trace)
    assert T0 + 41 + NEED <= cut <= T0 + 41 + NEED + 1.5
    assert m.faults[0].verdict == "masked"


def test_a_sign_after_the_system_noticed_the_fault_is_waited_for():
    # noticed at 31 s, output stops at 36 s (before 31 + NEED): the fault is not masked, and what
    # settles is its recovery point, the whole run's
    trace = noticed(stateless_trace(rate=200, duration=90, faults=[30], outages=[Outage(36, 6, catch_up_rate=600)],
                                    batch_interval=1.0), at=31)
    full = compute_metrics(trace)
    assert full.faults[0].output_symptom is not None and full.faults[0].recovered
    cut, m = first_settled(trace)
    assert m.faults[0].recovered_at == full.faults[0].recovered_at
    assert cut >= full.faults[0].recovered_at + NEED


def test_a_job_that_dies_never_settles():
    trace = stateless_trace(rate=200, duration=90, faults=[30], stop_at=31)
    assert compute_metrics(trace).faults[0].recovered is False
    assert first_settled(trace) == (None, None)


def test_a_second_fault_not_yet_fired_is_not_in_the_trace_so_the_runner_must_wait_for_it():
    # before the second fault the first one's recovery is settled: recovery_settled judges only the
    # faults the trace holds, which is why the runner asks it only once the schedule is done
    trace = stateless_trace(rate=200, duration=120, faults=[30, 80], outages=[Outage(31, 5, catch_up_rate=600)])
    seen = seen_at(trace, T0 + 60)
    m = compute_metrics(seen)
    assert len(m.faults) == 1 and recovery_settled(m, seen.timeline)


def test_no_fault_is_never_settled():
    seen = seen_at(stateless_trace(rate=200, duration=60), T0 + 50)
    assert not recovery_settled(compute_metrics(seen), seen.timeline)
