"""Process faults on Structured Streaming, with what the papers lead us to expect ([Perf] = "A Performance
Analysis of Fault Recovery in Stream Processing Frameworks", [Bench] = "A Comprehensive Benchmarking
Analysis of Fault Recovery in Stream Processing Frameworks"; see docs/metrics.md#papers).

- Worker / executor loss ([Perf] §VI): tasks are rescheduled, nothing is lost.
- Driver loss ([Perf] §V-C): the job restarts from its checkpoint; no loss, but a driver killed
  while a batch's output is visible and not yet committed makes an at-least-once sink duplicate
  that batch -- the moment random kills rarely hit, so the fault is aimed at it. The exactly-once
  sink skips the replayed batch: no duplicates.
- A driver killed again while it restarts from a kill: the first kill has no recovery of its own (cut off),
  the pair recovers as one, from the first kill to the output back after the second.
- Master loss ([Perf] §V-A/B): without high availability the application does not survive -- the
  restarted master knows nothing of it, kills its executors when the workers re-register, and the
  job never gets new ones ("the application fails"); with a ZooKeeper standby the failover is
  invisible to the job.
- Recurrent worker kills ([Bench] §7): every occurrence recovers; stability across them is reported.
- A worker frozen (SIGSTOP) for less than the failure-detection timeouts: nothing is declared dead, the
  micro-batch waiting on its executor's tasks stalls the output until SIGCONT, and the job catches up.
"""

import pytest
from chaos_helpers import assert_load_outlasted_the_recovery, fault_metrics
from test_chaos_network_faults import fault_window, window_sum

from pytest_streamchaos import NOT_RECOVERED, Timing, kill_driver, kill_executor, kill_master, kill_worker, pause
from pytest_streamchaos.stack.standalone.plan import WORKER_TIMEOUT_S

ALO = "pipelines/enrich_at_least_once.py"
EOS = "pipelines/enrich_exactly_once.py"


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos
@kill_executor(when="tasks_running", after=5)
def test_executor_killed_while_running_tasks_loses_nothing(chaos):
    run = chaos.run(EOS, rate=200, duration=24, guarantee="exactly-once")
    print(run.describe())
    (fault,) = run.faults
    assert fault.hit, f"the kill must land while the batch runs: {fault.aim}"
    # Spark saw the executor go (its running tasks are rescheduled) and nothing was lost or repeated
    assert fault.system_detection_event == "executor_removed", fault
    assert run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    assert run.guarantee_delivered == "exactly-once"


# slow (-m slow): ./dev test's budget; the default run kills a driver with a batch's output visible and its commit
# not written in tests/chaos/test_chaos_delta.py and test_chaos_named_outputs.py (landed by the checkpoint gate)
@pytest.mark.slow
@pytest.mark.chaos
@kill_driver(when="uncommitted_output", after=5, restart_after=0)
def test_driver_killed_at_uncommitted_output_duplicates_at_least_once(chaos):
    # no duration: the moment comes when it comes, and the load gives the restart its recovery window
    # from then (or ends once the recovery is settled)
    run = chaos.run(ALO, rate=200, guarantee="at-least-once")
    print(run.describe())
    (fault,) = run.faults
    assert fault.hit, f"the kill must land between the batch's output and its commit: {fault.aim}"
    assert "aimed at uncommitted_output: hit" in run.describe()
    assert_load_outlasted_the_recovery(run)
    assert run.lost == 0 and run.incorrect == 0
    assert run.duplicates > 0, "a replayed batch whose output was visible must duplicate with this sink"
    assert run.guarantee_delivered == "at-least-once"
    assert run.driver_launches == 2


# slow (-m slow): ./dev test's budget; an exactly-once twin under the same moment in the default run is the
# relative Delta job of tests/chaos/test_chaos_named_outputs.py
@pytest.mark.slow
@pytest.mark.chaos
@kill_driver(when="uncommitted_output", after=5, restart_after=0)
def test_driver_killed_at_uncommitted_output_exactly_once_sink_has_no_duplicates(chaos):
    run = chaos.run(EOS, rate=200, guarantee="exactly-once")
    print(run.describe())
    assert run.faults[0].hit, f"no duplicates means something only if the kill hit: {run.faults[0].aim}"
    assert_load_outlasted_the_recovery(run)
    assert run.driver_launches == 2
    assert run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    assert run.reliability == 1.0


# slow (-m slow): ./dev test's budget (docs/setup.md#slow-tests); no master kill runs by default
@pytest.mark.slow
@pytest.mark.chaos
@pytest.mark.sla(guarantee=None)  # the job cannot deliver at-least-once here: that is what this test shows
@kill_master(after=8, restart_after=5)
def test_master_killed_without_ha_the_job_does_not_recover(chaos):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once", timing=Timing(drain_timeout=15))
    print(run.describe())
    assert run.incorrect == 0 and run.duplicates == 0
    assert run.recovery_time is NOT_RECOVERED
    assert run.lost > 0, "records sent after the executors were lost stay unprocessed"
    fault_t = next(e.t for e in run.timeline if e.kind == "fault_injected")
    assert any(e.kind == "executor_removed" and e.t > fault_t for e in run.timeline)


@pytest.mark.slow  # ./dev test's budget (docs/setup.md#slow-tests): no master kill runs by default
@pytest.mark.chaos(ha=True)
@kill_master(after=8)
def test_master_killed_with_ha_standby_takes_over(chaos, spark_cluster_ha):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert run.driver_launches == 1
    killed = next(e.target for e in run.timeline if e.kind == "fault_injected")
    assert spark_cluster_ha.active_master().name != killed  # the standby became the leader
    assert run.downtime < 10


# slow (-m slow): ./dev test's budget; recurrent worker kills are also tests/papers/test_paper_001's (slow too);
# the default run's worker kills are single (tests/chaos/test_demo.py, test_planted_defects.py)
@pytest.mark.slow
@pytest.mark.chaos
@kill_worker(after=8, every=26, times=2, restart_after=5)
def test_recurrent_worker_kills_each_recover(chaos):
    # each kill recovers in about 14 s (+5 s hold): 26 s apart, and 28 s of load after the last
    run = chaos.run(ALO, rate=100, duration=62, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert len(run.faults) == 2
    # each occurrence took an executor and was recovered from before the next one
    for f in run.faults:
        assert f.recovered, f"the kill at +{f.t - run.metrics.t0:.1f}s was not recovered from: {f.verdict}"
    kills = [e.t for e in run.timeline if e.kind == "fault_injected"]
    assert all(any(e.kind == "executor_removed" and e.t >= t for e in run.timeline) for t in kills)
    print("stability:", run.metrics.stability.to_dict())


# the default run's proof of overlapping faults (issue 48, docs/metrics.md#overlapping-faults-one-recovery): a
# driver killed again while it restarts from the first kill -- the first cut off, the pair recovering as one
@pytest.mark.chaos
@kill_driver(after=8, every=7, times=2, restart_after=1)
def test_a_driver_killed_again_while_it_restarts_recovers_as_one_with_it(chaos):
    run = chaos.run(ALO, rate=100, guarantee="at-least-once")
    print(run.describe())
    assert_load_outlasted_the_recovery(run)
    first, second = sorted(run.faults, key=lambda f: f.t)
    # the effect claimed: the second kill struck before the job was back from the first (a restarted driver's
    # first output takes well over 7 s here), and the job came back after both
    assert first.recovered is False and first.recovered_at is None, first.verdict
    assert second.recovered and second.recovered_at is not None, second.verdict
    assert run.driver_launches == 3
    # the pair's recovery: from the first kill to the output back in band after the second, a number, not
    # "not measurable" (its first kill's own) nor "not recovered"
    assert run.metrics.recovered is True
    assert run.recovery_time == pytest.approx(second.recovered_at - first.t, abs=1e-6)
    assert run.recovery_time > second.t - first.t
    assert run.lost == 0 and run.incorrect == 0


PAUSE_S = 6


# the default run's proof of a pause (docs/setup.md#slow-tests): a worker and its executor frozen mid-load
@pytest.mark.chaos
@pause(target="worker", after=8, duration=PAUSE_S)
def test_a_paused_worker_stalls_the_output_until_resumed_and_loses_nothing(chaos):
    """SIGSTOP of a worker's process group freezes its executor with it. 6 s is below the master's worker
    timeout and the driver's heartbeat timeout, so nothing is declared dead: the micro-batch whose tasks
    wait on the frozen executor holds the output until SIGCONT, then the job catches up on the same
    executors."""
    # with the heartbeat sent just before the SIGSTOP (every timeout / 4), the master still hears one in time
    assert PAUSE_S + WORKER_TIMEOUT_S / 4 < WORKER_TIMEOUT_S
    # no duration: the load ends once the recovery after the heal is settled
    run = chaos.run(ALO, rate=100, guarantee="at-least-once")
    print(run.describe())
    injected, healed = fault_window(run, "pause")
    # stopped (confirm waited for every process of the group to be in state T) and continued when planned
    assert injected.detail["confirmed"] is not None, injected.detail
    assert PAUSE_S - 0.5 <= healed.t - injected.t <= PAUSE_S + 2, (injected, healed)
    f = fault_metrics(run, "pause")
    # the output stalled while the executor was frozen (after the batch already done), and the records
    # that arrived meanwhile came out only after the heal, their latency raised by most of the pause
    assert window_sum(run, "outputs", injected.t + 2, healed.t) == 0, "output went on with an executor frozen"
    assert window_sum(run, "outputs", healed.t, healed.t + 6) > 0, "no output in the 6 s after the SIGCONT"
    assert f.peak_latency - run.metrics.baseline.latency >= PAUSE_S / 2, (f.peak_latency, run.metrics.baseline)
    # a pause is not a loss: no executor removed, one driver, and the job recovered within the run
    assert not any(e.kind == "executor_removed" for e in run.timeline)
    assert run.driver_launches == 1
    assert_load_outlasted_the_recovery(run)
    assert run.lost == 0 and run.incorrect == 0
    run.assert_sla()  # the declared at-least-once delivered, or a stronger guarantee (no task ran twice)
