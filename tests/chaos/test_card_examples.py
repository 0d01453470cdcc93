"""The card's examples: no ``duration`` (the load lasts the fault timeline plus a recovery window, and
ends sooner once every fault has recovered for good), and
``network_delay(above_timeout=True)`` on a Kafka link: judged against the job's own Kafka client
timeout, and the run says whether the job noticed.

The worker-kill scenario here is also the one ``test_fault_timing.py`` asserts on: ``shared_run`` runs
it once per session (``chaos.run`` with the same arguments)."""

import pytest

from pytest_streamchaos import JobSetup, Timing, kill_worker, network_delay
from pytest_streamchaos.faults.timeline import RECOVERY_WINDOW_S
from pytest_streamchaos.faults.timeouts import DelayClassError

ALO = "pipelines/enrich_at_least_once.py"
FAST_TIMEOUTS = "jobs/payments_fast_timeouts.py"


@pytest.mark.chaos
@kill_worker(after=10)
def test_no_duration_ends_the_load_once_the_fault_has_recovered(shared_run):
    run = shared_run(ALO, rate=100)  # the card's chaos.run(ALO, rate=100), shared with test_fault_timing
    print(run.describe())
    load = run.load
    assert load.planned_s == 10 + RECOVERY_WINDOW_S and "no duration given" in load.why
    assert f"load ran {load.ran_s:.1f}s" in run.describe()
    assert run.lost == 0 and not run.fault_errors
    # the killed worker's executor is gone and Spark says so; the job goes on with the other one
    # (often with no sign in the output at all: masked), and the load ends once more load could not
    # change that verdict instead of running out the 30 s window
    (f,) = run.faults
    assert f.system_detection_event == "executor_removed" and f.recovered, f
    (ended,) = [e for e in run.timeline if e.kind == "load_ended_on_recovery"]
    assert load.ended.startswith("ended early") and load.ended in run.describe()
    assert load.ran_s < load.planned_s - 5
    # the recovery time (0 when masked) judged mid-run is the one the whole run
    # (load, drain) reports, and the load ended no sooner than the windows it depends on allow
    # (hold 5 + smoothing 5 + reach-back + 2 buckets)
    assert ended.detail["recovery_time"] == [pytest.approx(f.recovery_time, abs=1e-3)]
    assert ended.detail["masked"] == [f.output_symptom is None]
    assert ended.t - f.recovered_at >= 12 + 2 * run.metrics.baseline.normal_gap


@pytest.mark.chaos
# PD>TO on the Kafka link. Spark's Kafka connector plans each micro-batch with an admin client on the
# driver, and every Kafka client gives up on a request after request.timeout.ms: 30 s by default, which
# only the job's code can change. This job sets 1.5 s (the plugin reads it from its code), so a 3 s
# delay is above it: a fetch in flight fails at once, and the driver's offset requests time out until
# Spark's three attempts (3 s each, 1 s apart) run out and the query fails -- what the experiment is
# about, so the declared guarantee is not the point here (the job does not restart). The delay lasts
# 20 s from +6 s (after 6 s of baseline: recovery metrics need 5), longer than those attempts on a
# busy machine; the drain is 10 s (a stopped job commits nothing more)
@pytest.mark.slow  # ./dev test keeps a representative: test_chaos_network_faults.py's 500 ms delay
@pytest.mark.sla(guarantee=None)
@network_delay(ms=3000, above_timeout=True, after=6, duration=20)
def test_delay_above_the_jobs_kafka_timeout_is_noticed(chaos):
    run = chaos.run(FAST_TIMEOUTS, rate=100, duration=26, guarantee="at-least-once",
                    setup=JobSetup(args=["{bootstrap_servers}", "{input_topic}", "{output_topic}", "{checkpoint_dir}"]),
                    timing=Timing(drain_timeout=10))
    print(run.describe())
    assert run.timeouts == []  # it holds as the job is written: nothing to change
    injected = next(e for e in run.timeline if e.kind == "fault_injected")
    assert injected.detail["mechanism"] == "toxiproxy" and not run.fault_errors
    # above the timeout, the job noticed: a task or its query failed during the delay
    (outcome,) = run.delay_outcomes
    assert (outcome.timeout, outcome.timeout_ms) == ("kafka.request.timeout.ms", 1500.0), outcome
    assert (outcome.stated, outcome.observed) == ("PD>TO", "noticed"), outcome
    assert "payments_fast_timeouts.py:" in run.describe()  # where the timeout was read
    assert run.faults[0].verdict != "masked"


@pytest.mark.chaos
@network_delay(ms=500, target="kafka", above_timeout=True, after=6, duration=4)
def test_delay_that_cannot_be_above_the_default_kafka_timeout_fails_naming_the_option(chaos):
    """On the clients' default request.timeout.ms (30 s), which the plugin cannot change, the card's
    500 ms is no PD>TO: the run fails before anything starts, naming the option to set."""
    with pytest.raises(DelayClassError, match=r"not PD>TO: .*kafka.request.timeout.ms is 30000 ms .*"
                                              r"set \.option\('kafka.request.timeout.ms', \.\.\.\)"):
        chaos.run(ALO, rate=100, duration=10)
