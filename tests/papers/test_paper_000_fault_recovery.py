"""Seed paper 000, "A Performance Analysis of Fault Recovery in Stream Processing Frameworks" (van Dongen,
Van den Poel): Structured Streaming under worker, driver, master and application failures.

Short (default): a worker killed and back 5 s later; the paper: "the Spark frameworks can recover within
30 seconds and in most cases without necessitating an application restart", a worker failure costing
Structured Streaming 4 s of downtime and 16 s more until latency is back to normal. Here: the same
application (one driver launch) loses nothing, recovers within 30 s, and downtime and catch-up are
reported apart. The full versions (``-m slow``) cover the paper's other failures.
"""

import pytest
from papers_helpers import fault_numbers, key_id, ledger, paper_line

from pytest_streamchaos import (
    NOT_RECOVERED,
    JobSetup,
    Timing,
    Watch,
    kill_driver,
    kill_master,
    kill_worker,
    poison_records,
)


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.papers
@pytest.mark.chaos
@kill_worker(after=8, restart_after=5)
def test_000_worker_kill_recovers_without_an_application_restart(chaos):
    # no duration: the load lasts until the recovery has settled (at most a 60 s window after the worker is
    # back), so a slow rejoin on a busy machine is measured rather than cut off by a fixed end
    run = ledger(chaos, rate=100)
    print(run.describe())
    (f,) = run.faults
    paper_line("000", "worker kill (short)", **fault_numbers(run, f), lost=run.lost,
               driver_launches=run.driver_launches)
    assert run.lost == 0 and run.incorrect == 0
    assert run.driver_launches == 1, "a worker failure must not restart the application"
    assert f.system_detection_event == "executor_removed", f
    assert f.recovered and f.recovery_time < 30, f"the paper: Spark recovers within 30 s; here {f.recovery_time}"
    # downtime (the output gap) and catch-up (back to normal after output resumed) are reported apart;
    # a kill with no sign in the output at all (masked: Spark moved the tasks within a trigger) has none
    if f.output_symptom is None:
        assert f.verdict == "masked" and f.recovery_time == 0 and f.downtime == 0
    else:
        assert f.catch_up is not None and f.catch_up >= 0
        assert f.recovery_time >= f.output_gap + f.catch_up - 1e-6


# -- full versions (-m slow) ------------------------------------------------------------------------
ALO = "pipelines/enrich_at_least_once.py"
EOS = "pipelines/enrich_exactly_once.py"
STRICT = "jobs/strict_ledger.py"


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@kill_worker(after=10, restart_after=5)
def test_000_full_worker_kill_at_least_once_vs_exactly_once_sink(chaos):
    """The paper's §VI-D: the cost of each delivery guarantee under a worker failure."""
    alo = chaos.run(ALO, rate=200, duration=40, guarantee="at-least-once")
    eos = chaos.run(EOS, rate=200, duration=40, guarantee="exactly-once")
    for label, run in (("at-least-once sink", alo), ("exactly-once sink", eos)):
        (f,) = run.faults
        paper_line("000", f"worker kill, {label} (full)", **fault_numbers(run, f), duplicates=run.duplicates,
                   p50=run.latency.p50, lost=run.lost)
        assert run.lost == 0 and run.driver_launches == 1
    assert eos.duplicates == 0


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@kill_driver(after=10, restart_after=0)
def test_000_full_driver_kill_restarted(chaos):
    """The paper's §V-C with checkpoints (at-least-once): a gap while the driver restarts, no loss."""
    run = ledger(chaos, rate=200, duration=40)
    (f,) = run.faults
    paper_line("000", "driver kill, restarted (full)", **fault_numbers(run, f), duplicates=run.duplicates,
               lost=run.lost)
    assert run.lost == 0 and run.driver_launches == 2 and f.downtime > 0


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@kill_master(after=10)
def test_000_full_master_kill_without_ha_left_down(chaos):
    """§V-A, the paper's case: without HA the master is gone and stays gone; a running application does
    not need it (its driver holds the executors), so it goes on: nothing lost, no new application."""
    run = ledger(chaos, rate=200, duration=30)
    (f,) = run.faults
    paper_line("000", "master kill, no HA, left down (full)", **fault_numbers(run, f), lost=run.lost,
               driver_launches=run.driver_launches)
    assert not any(e.kind == "executor_removed" for e in run.timeline), "the executors outlive the master"
    assert run.lost == 0 and run.driver_launches == 1
    assert f.recovered, f


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@pytest.mark.sla(guarantee=None)
@kill_master(after=10, restart_after=5)
def test_000_full_master_kill_without_ha(chaos):
    """Beyond the paper: without HA the application does not survive a master that comes back (the
    restarted master kills its executors when the workers re-register, and it gets no new ones)."""
    run = ledger(chaos, rate=200, duration=30, timing=Timing(drain_timeout=15))
    (f,) = run.faults
    paper_line("000", "master kill, no HA (full)", **fault_numbers(run, f), lost=run.lost)
    assert run.recovery_time is NOT_RECOVERED


@pytest.mark.papers
@pytest.mark.chaos(ha=True)
@pytest.mark.slow
@kill_master(after=10)
def test_000_full_master_kill_with_zookeeper_ha(chaos):
    """§V-B: with a ZooKeeper standby "no impact on any of the performance metrics of the job"."""
    run = ledger(chaos, rate=200, duration=30)
    (f,) = run.faults
    failover = next((e.t - f.t for e in run.timeline if e.kind == "master_failover" and e.t >= f.t), None)
    paper_line("000", "master kill, ZooKeeper HA (full)", **fault_numbers(run, f), failover=failover, lost=run.lost)
    assert run.lost == 0 and run.driver_launches == 1


@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
@pytest.mark.sla(guarantee=None)  # the point: the query fails on the poison record
@poison_records(count=1, after=8)
def test_000_full_poison_record_fails_the_query_after_task_retries(chaos):
    """§VII: a record the job's code cannot take fails its task; Spark retries it (spark.task.maxFailures,
    4 by default), then fails the micro-batch, and the query stops (the driver exits)."""
    run = chaos.run(STRICT, rate=100, duration=20, watch=Watch(id_reader=key_id),
                    setup=JobSetup(args=["{bootstrap_servers}", "{input_topic}", "{output_topic}", "{checkpoint_dir}"]),
                    timing=Timing(drain_timeout=10))
    failed = [e for e in run.timeline if e.kind == "task_failed"]
    paper_line("000", "poison record (full)", task_failures=len(failed),
               query_ended=[e.kind for e in run.timeline if e.kind in ("query_terminated", "driver_exited")])
    assert len(failed) >= 4, failed
    assert any(e.kind in ("query_terminated", "driver_exited") for e in run.timeline)
