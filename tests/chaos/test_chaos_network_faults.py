"""Network faults ("How Reliable Are Streams?", PGVal): a packet delay below the failure-detection timeout (PD<TO) only
slows the job; above it (PD>TO) peers are declared dead and the job recovers after the heal; a
partition from Kafka stops the flow until it heals. None of them loses records."""

import pytest

from pytest_streamchaos import network_delay, network_partition

ALO = "pipelines/enrich_at_least_once.py"
# short failure detection, so that PD>TO fits in a test (and is checked against these values)
FAST_DETECTION = {"spark.network.timeout": "4s", "spark.executor.heartbeatInterval": "1s",
                  "spark.network.timeoutInterval": "1s"}


@pytest.mark.chaos
@network_delay(ms=300, target="kafka", above_timeout=False, after=8, duration=10)
def test_kafka_delay_below_timeout_only_slows_the_job(chaos):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert run.meta["driver_launches"] == 1
    assert not any(e.kind == "executor_removed" for e in run.timeline)


@pytest.mark.chaos
@network_delay(ms=6000, target="driver", above_timeout=True, after=8, duration=12)
def test_driver_link_delay_above_timeout_loses_executors_and_recovers(chaos):
    run = chaos.run(ALO, rate=200, duration=40, guarantee="at-least-once", conf=FAST_DETECTION)
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    fault_t = next(e.t for e in run.timeline if e.kind == "fault_injected")
    assert any(e.kind == "executor_removed" and e.t >= fault_t for e in run.timeline), \
        "PD>TO: the driver should have declared an executor dead"


@pytest.mark.chaos
@network_partition(target="kafka", after=8, duration=8)
def test_partition_from_kafka_stops_the_flow_until_healed(chaos):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert run.downtime > 3.0
