"""The chaos fixture and the runner on YARN (docs/yarn.md): a user's Kafka-to-Kafka job, unchanged
(``format("kafka")``, Spark's defaults, hard-coded broker and topics, its checkpoint as its argument),
submitted ``--master yarn`` to the mini YARN the stack starts (an RM and two NodeManagers), verdicts by
the same checkers as on standalone, and the faults through YARN: an executor's container signalled
through the RM's REST API, the ApplicationMaster's container in cluster mode (YARN's re-attempt is the
driver's recovery). Each asserts the effect it claims on the run's timeline, where YARN's own events are."""

import pytest

from pytest_streamchaos import (
    NOT_RECOVERED,
    JobSetup,
    Load,
    Watch,
    kill_driver,
    kill_executor,
    kill_worker,
    restart_resourcemanager,
)

JOB = "jobs/orders_to_shipments.py"


def setup(deploy_mode: str = "client") -> JobSetup:
    return JobSetup(args=["{checkpoint_dir}"], kafka_port=9092, deploy_mode=deploy_mode)


def load(duration: float | None = 15) -> Load:
    return Load(rate=100, duration=duration, inputs={"orders": None})


WATCH = Watch(outputs={"shipments": None})


def after_fault(run, *kinds: str) -> list:
    """The timeline's events of ``kinds`` after the (first) fault took effect."""
    injected = next(e for e in run.timeline if e.kind == "fault_injected")
    return [e for e in run.timeline if e.kind in kinds and e.t > injected.t]


# the default run's proof of YARN (one per capability: docs/setup.md#slow-tests)
@pytest.mark.chaos(spark="yarn")
def test_a_users_job_on_yarn_gets_a_verdict(chaos):
    run = chaos.run(JOB, guarantee="exactly-once", setup=setup(), load=load(), watch=WATCH)
    print(run.describe())
    assert run.expected > 1000 and run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    started = [e for e in run.timeline if e.kind == "yarn_container_started"]
    assert len(started) >= 3, "YARN's own events are on the timeline: the AM's and two executors' containers"


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos(spark="yarn")
@kill_executor(after=8)
def test_an_executor_container_killed_through_yarns_api(chaos):
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup(), load=load(None), watch=WATCH)
    print(run.describe())
    (fault,) = run.faults
    injected = next(e for e in run.timeline if e.kind == "fault_injected")
    done = [e for e in run.timeline if e.kind == "yarn_container_completed" and not e.detail.get("am")
            and e.t >= injected.t]
    assert done and done[0].detail["exit_status"] not in (0, None), \
        f"the signalled container must complete with a forced exit: {[e.detail for e in done]}"
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED


@pytest.mark.slow  # ./dev test keeps a representative: test_a_users_job_on_yarn_gets_a_verdict
@pytest.mark.chaos(spark="yarn")
@kill_driver(after=8)
def test_the_application_master_killed_in_cluster_mode_yarn_reattempts(chaos):
    # a fixed load: YARN's next attempt took 16-23 s to output again here (the default recovery window of
    # 30 s after the heal was too short once)
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup("cluster"), load=load(60), watch=WATCH)
    print(run.describe())
    killed = next(e for e in run.timeline if e.kind == "driver_killed")
    attempts = [e for e in run.timeline if e.kind == "yarn_attempt_started" and e.detail.get("attempt") == 2]
    assert attempts and attempts[0].t > killed.t, "YARN started a second attempt after the AM's kill"
    am = [e for e in run.timeline if e.kind == "yarn_container_completed" and e.detail.get("am") and e.t >= killed.t]
    assert am and am[0].detail["exit_status"] not in (0, None), "the AM's container ended by the signal"
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED
    assert run.driver_launches == 1, "YARN restarted the driver, not the plugin"


@pytest.mark.slow
@pytest.mark.chaos(spark="yarn")
@kill_worker(after=8, restart_after=20)
def test_a_nodemanager_lost_with_its_containers(chaos):
    # the RM declares a silent NodeManager LOST after 10 s (the mini cluster's setting; YARN's default: 10 min)
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup(), load=load(60), watch=WATCH)
    print(run.describe())
    assert after_fault(run, "yarn_node_lost"), "the RM declared the killed NodeManager LOST (YARN's own state)"
    assert after_fault(run, "executor_removed", "yarn_container_completed"), "the node's containers went with it"
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED


@pytest.mark.slow
@pytest.mark.chaos(spark="yarn")
@restart_resourcemanager(after=8)
def test_the_resourcemanager_restarts_and_the_application_goes_on(chaos):
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup(), load=load(60), watch=WATCH)
    print(run.describe())
    assert after_fault(run, "resourcemanager_back"), "the ResourceManager came back (its NodeManagers RUNNING again)"
    assert after_fault(run, "yarn_rm_started"), "YARN's own state shows a new RM start"
    again = [e for e in run.timeline if e.kind == "yarn_attempt_started" and e.detail.get("attempt", 1) > 1]
    assert not again, "work-preserving RM recovery: the application kept its attempt"
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED
