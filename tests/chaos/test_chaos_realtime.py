"""Spark's real-time mode under faults (docs/realtime.md): a public-style Kafka-to-Kafka filter with
``trigger(realTime="5 seconds")`` (``tests/chaos/jobs/connect/orders_filter_realtime.py``), recognised by the run,
given a core per input partition, its latency per record measured before and after a fault, and the bound the
mode promises asserted: after a failure, duplicates only from the last checkpoint interval.

The driver kill on standalone is the default run's proof of the mode (each run needs the mode's long-running tasks
on both workers' cores for most of a minute); the others are ``slow``; the refusals (Spark 3.5, a sink the mode
does not support, too few cores) are unit tests in the default run (``tests/unit/test_realtime.py``).
"""

import pytest

from pytest_streamchaos import JobSetup, Load, RecordSpec, kill_driver, kill_executor

JOB = "jobs/connect/orders_filter_realtime.py"


def order(rec: RecordSpec) -> dict:
    return {"order_id": str(rec.id), "amount": 100 + rec.id % 50, "created_at": rec.ts}


def realtime_run(chaos, **setup):
    return chaos.run(JOB, guarantee="at-least-once", load=Load(rate=100, duration=40, partitions=2,
                                                              inputs={"orders": order}),
                     outputs={"large_orders": "key"}, kafka_port=9092, setup=JobSetup(args=["5 seconds"], **setup))


def assert_real_time_promises(run, yarn=False):
    latency, bound = run.user_checks["realtime_latency"], run.user_checks["replay_bound"]
    print("\n".join(latency.lines + bound.lines))
    if yarn:  # YARN's cores are its executors': two of one core by default
        assert int(run.spark_conf["spark.executor.instances"]) >= 2, "a core per input partition"
    else:
        assert run.spark_conf["spark.cores.max"] == "2", "a core per input partition"
    assert latency.numbers["before"]["p50"] < 1.0, "real-time mode's point: sub-second latency per record"
    assert bound.ok, "duplicates only from the last checkpoint interval before the fault"
    assert run.lost == 0 and run.incorrect == 0


# the default run's proof of real-time mode (one per capability: docs/setup.md#slow-tests)
@pytest.mark.chaos(backend="local")
@kill_driver(after=12)
def test_a_driver_kill_replays_at_most_the_last_interval(chaos):
    run = realtime_run(chaos, supervise=True)
    print(run.describe())
    assert run.driver_launches == 2
    assert_real_time_promises(run)


@pytest.mark.slow  # representative: test_a_driver_kill_replays_at_most_the_last_interval
@pytest.mark.chaos(backend="local")
@kill_executor(after=12)
def test_an_executor_kill_replays_at_most_the_last_interval(chaos):
    """An executor's loss: on 4.2.0 the driver goes on (measured: one launch), the lost partition is replayed from
    its last commit, and the output never stops -- the fault shows as latency (degraded), not as silence."""
    run = realtime_run(chaos, supervise=True)
    print(run.describe())
    assert any(e.kind == "executor_removed" for e in run.timeline)
    assert_real_time_promises(run)


ON_YARN = pytest.mark.chaos(backend="local", spark="yarn")


@pytest.mark.slow  # representative: test_a_driver_kill_replays_at_most_the_last_interval
@ON_YARN
@kill_driver(after=12)
def test_on_yarn_a_driver_kill_replays_at_most_the_last_interval(chaos):
    """The same job submitted to YARN in client mode (its tasks in two executor containers), its driver killed
    and started again from its checkpoint."""
    run = realtime_run(chaos, supervise=True)
    print(run.describe())
    assert run.driver_launches == 2
    assert_real_time_promises(run, yarn=True)


@pytest.mark.slow  # representative: test_a_driver_kill_replays_at_most_the_last_interval
@ON_YARN
@kill_executor(after=12)
def test_on_yarn_an_executor_container_kill_replays_at_most_the_last_interval(chaos):
    """One of the query's two executor containers killed through YARN's API: YARN starts another, the lost
    partition is replayed from its last commit."""
    run = realtime_run(chaos, supervise=True)
    print(run.describe())
    assert any(e.kind == "yarn_container_completed" and not e.detail.get("am") for e in run.timeline)
    assert_real_time_promises(run, yarn=True)
