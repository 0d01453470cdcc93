"""Seed paper 002, "How Reliable Are Streams?" (PGVal, Tahir et al.): reliability (share of inputs
processed as the guarantee demands), reliable throughput and failure cost (the largest latency rise a
fault causes) under a process crash, a packet delay below the failure-detection timeout (PD<TO) and
above it (PD>TO); reliability as data rate and partitions vary. The paper measures Kafka Streams, Storm
and Flink (not Spark): e.g. Flink at-least-once keeps 100 % reliability under PD<TO but drops below it
after PD>TO and crashes (the job restarts and repeats outputs), with failure costs of 54 s (PD<TO),
71 s (PD>TO) and 78 s (crash); Kafka Streams 28 s, 3 s and 2 s.

Here the delays act on the job's Kafka links (Toxiproxy), judged against the job's own Kafka client
timeout. Short (``slow`` too, as every paper's test): one run with PD<TO (300 ms, the clients wait 30 s) and then a
worker crash;
PD>TO is the card example ``tests/chaos/test_card_examples.py::test_delay_above_the_jobs_kafka_timeout_is_noticed``
(3 s against the job's 1.5 s), slow as well. Full (``-m slow``): one fault per run, PD>TO
supervised (the query fails and its driver is started again), and a rate x partitions sweep.
"""

import pytest
from papers_helpers import FAST_ARGS, FAST_TIMEOUTS, fault_numbers, ledger, paper_line

from pytest_streamchaos import JobSetup, Load, kill_worker, network_delay


def per_fault(run, label):
    for f in run.faults:
        paper_line("002", f"{label} {f.kind}", **fault_numbers(run, f), reliability=run.reliability,
                   reliable_throughput=run.reliable_throughput, lost=run.lost, duplicates=run.duplicates)


@pytest.mark.slow  # ./dev test's budget: every paper's test is slow (tests/papers/conftest.py)
@pytest.mark.papers
@pytest.mark.chaos
@network_delay(ms=300, target="kafka", above_timeout=False, after=6, duration=6)
@kill_worker(after=22, restart_after=3)
def test_002_delay_below_timeout_and_crash_keep_reliability(chaos):
    run = ledger(chaos, rate=100)  # no duration: the load ends once both recoveries have settled
    print(run.describe())
    per_fault(run, "short")
    delay, crash = run.faults
    # at-least-once holds through both: every input reached the output (the paper's reliability 100 %)
    assert run.lost == 0 and run.incorrect == 0 and run.reliability == 1.0
    # PD<TO only slowed the job: the same application, nothing declared dead during the delay
    assert run.driver_launches == 1
    (outcome,) = run.delay_outcomes
    assert (outcome.stated, outcome.observed) == ("PD<TO", "not noticed"), outcome
    assert not any(e.kind == "executor_removed" and delay.t <= e.t < crash.t for e in run.timeline)
    # the crash was noticed (an executor lost) and recovered from
    assert crash.system_detection_event == "executor_removed" and crash.recovered, crash
    assert delay.failure_cost is not None and crash.failure_cost is not None


# -- full versions (-m slow) ------------------------------------------------------------------------
@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@kill_worker(after=10, restart_after=3)
def test_002_full_crash(chaos):
    run = ledger(chaos, rate=200, duration=40)
    per_fault(run, "full crash")
    assert run.lost == 0 and run.reliability == 1.0


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@network_delay(ms=500, target="kafka", above_timeout=False, after=10, duration=10)
def test_002_full_delay_below_timeout(chaos):
    run = ledger(chaos, rate=200, duration=40)
    per_fault(run, "full PD<TO")
    assert run.lost == 0 and run.reliability == 1.0


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@network_delay(ms=3000, above_timeout=True, after=10, duration=20)
def test_002_full_delay_above_timeout_supervised(chaos):
    """PD>TO: the job's Kafka clients give up after 1.5 s, the query fails; supervised, its driver
    starts again from the checkpoint and the at-least-once sink repeats the uncommitted batch."""
    run = chaos.run(FAST_TIMEOUTS, rate=200, duration=50, guarantee="at-least-once",
                    setup=JobSetup(args=FAST_ARGS, supervise=True))
    print(run.describe())
    per_fault(run, "full PD>TO")
    (outcome,) = run.delay_outcomes
    assert outcome.observed == "noticed", outcome
    assert run.lost == 0


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@pytest.mark.parametrize("rate", [100, 400])
@pytest.mark.parametrize("partitions", [1, 4])
def test_002_full_reliability_sweep(chaos, rate, partitions):
    """The paper's control experiments: reliability as data rate and partitions vary (no fault)."""
    run = ledger(chaos, rate=rate, duration=20, load=Load(partitions=partitions))
    paper_line("002", f"sweep rate={rate} partitions={partitions}", reliability=run.reliability,
               reliable_throughput=run.reliable_throughput, p99=run.latency.p99, lost=run.lost)
    assert run.reliability == 1.0

