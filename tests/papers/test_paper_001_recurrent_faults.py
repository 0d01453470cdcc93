"""Seed paper 001, "A Comprehensive Benchmarking Analysis of Fault Recovery in Stream Processing Frameworks"
(Vogel et al.): worker pods killed every 5 minutes, ten times; recovery time per kill from a detector
on output throughput (back within 15 % of the normal period's value for at least 40 s; a kill not
recovered by the next one counts as the interval); the spread across kills is the stability figure.
Spark Structured Streaming: "similar across the recurrent failures ... stable fault recovery".

Here the same detector (``PAPER_DETECTOR``: throughput band 15 %, latency ignored) on a public-style
Kafka-to-Kafka job; the interval and the hold are scaled down to fit a test (the paper's 300 s / 40 s).
Short (default): three kills 25 s apart. Full (``-m slow``): ten kills 30 s apart, and 1 vs 2 workers
killed at once.
"""

import pytest
from papers_helpers import ledger, paper_line

from pytest_streamchaos import MetricParams, Watch, kill_worker
from pytest_streamchaos.analysis.metrics import stability

#: the paper's detector: throughput only (latency bound out of reach), within 15 %, held for 5 s
PAPER_DETECTOR = MetricParams(throughput_band=0.15, hold_seconds=5.0, latency_factor=1e6)


def recurrent(run, interval: float, label: str):
    """Per-kill recovery and the stability figure with the paper's cap; the checks every version shares."""
    print(run.describe())
    st = stability([f.recovery_time for f in run.faults], cap=interval)
    per_kill = [round(min(float(f.recovery_time), interval), 1) for f in run.faults if f.recovery_time is not None]
    paper_line("001", label, per_kill=per_kill, mean=st.mean, std=st.std, cv=st.cv, not_recovered=st.not_recovered,
               verdicts=[f.verdict for f in run.faults], downtimes=[round(f.downtime, 1) for f in run.faults],
               lost=run.lost)
    assert run.lost == 0 and run.incorrect == 0
    assert run.driver_launches == 1, "worker kills must not restart the application"
    kills = [e.t for e in run.timeline if e.kind == "fault_injected"]
    assert len(kills) == len(run.faults) >= 3
    # every kill took an executor (Spark noticed each one)
    assert all(any(e.kind == "executor_removed" and t <= e.t for e in run.timeline) for t in kills)
    return st


@pytest.mark.papers
@pytest.mark.chaos
# 25 s apart: the worker is back 3 s after its kill and Spark adds its new executor ~8 s after (up to 11 s
# on a busy machine), which may disturb the output once more; the detector's 5 s hold must fit before the
# next kill (at 13 and 18 s apart it did not on a busy machine: kills counted as not recovered, capped at
# the interval). No duration: the load ends once the last kill's recovery has settled.
@pytest.mark.slow  # ./dev test's budget: every paper's test is slow (tests/papers/conftest.py)
@kill_worker(after=8, every=25, times=3, restart_after=3)
def test_001_recurrent_worker_kills_recover_alike(chaos):
    run = ledger(chaos, rate=100, watch=Watch(params=PAPER_DETECTOR))
    st = recurrent(run, 25.0, "3 kills every 25 s (short)")
    # the paper's direction for Spark: each kill recovers, and alike (the stability verdict: every kill
    # recovered, recovery times within 0.5 x their mean of each other)
    assert st.not_recovered == 0 and st.is_stable(max_cv=0.5), st


# -- full versions (-m slow) ------------------------------------------------------------------------
@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@kill_worker(after=10, every=30, times=10, restart_after=3)
def test_001_full_ten_kills_of_one_worker(chaos):
    run = ledger(chaos, rate=200, duration=310, watch=Watch(params=PAPER_DETECTOR))
    st = recurrent(run, 30.0, "1 worker killed, 10 kills every 30 s (full)")
    assert st.not_recovered == 0


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@kill_worker(index=0, after=10, every=30, times=5, restart_after=3)
@kill_worker(index=1, after=10, every=30, times=5, restart_after=3)
def test_001_full_two_workers_killed_at_once(chaos):
    """Both workers of the cluster at once: no executor until they are back, so every kill stops the
    output (the paper's 2-pod kill on 8 workers left six)."""
    run = ledger(chaos, rate=200, duration=160, watch=Watch(params=PAPER_DETECTOR))
    # two injections per occurrence, a few ms apart, measured as one (docs/metrics.md#recovery-time): both
    # kills share the occurrence's window, so neither reads masked (the first did before: an empty window)
    st = recurrent(run, 30.0, "2 workers killed at once, 5 kills every 30 s (full)")
    assert all(f.downtime > 0 and f.verdict != "masked" for f in run.faults), [f.verdict for f in run.faults]
    assert st.not_recovered <= len(run.faults) // 2
