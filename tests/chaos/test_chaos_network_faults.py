"""Network faults ("How Reliable Are Streams?", PGVal): a packet delay below the failure-detection timeout (PD<TO) only
slows the job; above it (PD>TO) peers are declared dead and the job recovers after the heal; a
partition from Kafka stops the flow until it heals. None of them loses records."""

import numpy as np
import pytest

from pytest_streamchaos import JobSetup, network_delay, network_partition

ALO = "pipelines/enrich_at_least_once.py"
# short failure detection, so that PD>TO fits in a test (and is checked against these values)
FAST_DETECTION = {"spark.network.timeout": "4s", "spark.executor.heartbeatInterval": "1s",
                  "spark.network.timeoutInterval": "1s"}


# slow (-m slow): a delay below the timeouts is in the default run as test_a_500_ms_toxiproxy_delay_adds_at_least_500_ms
# (latency up by the delay, nothing lost)
@pytest.mark.slow
@pytest.mark.chaos
@network_delay(ms=300, target="kafka", above_timeout=False, after=8, duration=10)
def test_kafka_delay_below_timeout_only_slows_the_job(chaos):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert run.driver_launches == 1
    assert not any(e.kind == "executor_removed" for e in run.timeline)
    injected, healed = fault_window(run)
    # the delay acted on the job's link: the probe saw it, and the job's latency rose by at least it
    assert injected.detail["measured_delay_ms"] >= 0.8 * 300, injected.detail
    # (each micro-batch opens new Kafka connections, and every packet of them waits 300 ms: the
    # batches during the delay take several seconds, so the rise is many times the delay)
    rise = run.latency.peak - run.latency.baseline
    assert rise >= 0.3, f"latency rose by {rise:.2f}s under a 300 ms delay on the Kafka link"
    assert any(f.downtime > 0 or f.output_gap > 1.0 for f in run.faults), "the delay did not slow the output"
    assert_observer_spared(run)


# the default run's proof of a Toxiproxy fault (one per capability: docs/setup.md#slow-tests)
@pytest.mark.chaos
@network_delay(ms=500, target="kafka", after=8, duration=14)
def test_a_500_ms_toxiproxy_delay_adds_at_least_500_ms_to_the_jobs_latency_and_none_to_the_observers(chaos):
    """The job's Kafka links go through Toxiproxy: a 500 ms latency toxic holds every request and every
    reply, so the median end-to-end latency while it is on rises by at least 500 ms; the generator and
    the collector, on the brokers' own listener, keep their round trips."""
    run = chaos.run(ALO, rate=100, duration=28, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    injected, healed = fault_window(run)
    assert injected.detail["mechanism"] == "toxiproxy" and 450 <= injected.detail["measured_delay_ms"] <= 800
    # whole buckets from 3 s into the delay (the first outputs after it carry its full cost) to its heal
    during = window_median(run, "latency_p50", injected.t + 3, healed.t)
    baseline = run.metrics.baseline.latency
    print(f"median p50 latency: baseline {baseline:.3f}s, during the delay {during:.3f}s")
    assert during - baseline >= 0.5, f"the 500 ms delay added only {during - baseline:.3f}s to the p50 latency"
    assert_observer_spared(run)


# slow (-m slow): ./dev test's budget; a delay above a failure-detection timeout, noticed, is also
# tests/chaos/test_card_examples.py::test_delay_above_the_jobs_kafka_timeout_is_noticed (slow too)
@pytest.mark.slow
@pytest.mark.chaos
@network_delay(ms=6000, target="driver", above_timeout=True, after=8, duration=12)
def test_driver_link_delay_above_timeout_loses_executors_and_recovers(chaos):
    run = chaos.run(ALO, rate=200, duration=40, guarantee="at-least-once", setup=JobSetup(conf=FAST_DETECTION))
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    fault_t = next(e.t for e in run.timeline if e.kind == "fault_injected")
    assert any(e.kind == "executor_removed" and e.t >= fault_t for e in run.timeline), \
        "PD>TO: the driver should have declared an executor dead"


@pytest.mark.slow  # ./dev test keeps a representative: the 500 ms delay above
@pytest.mark.chaos
@network_partition(target="kafka", after=8, duration=8)
def test_partition_from_kafka_stops_the_flow_until_healed(chaos):
    run = chaos.run(ALO, rate=200, duration=30, guarantee="at-least-once")
    print(run.describe())
    assert run.lost == 0 and run.incorrect == 0
    assert run.downtime > 3.0
    injected, healed = fault_window(run)
    # the job's output stopped (after the batch in flight), while the generator kept sending at its
    # rate with acknowledgements at baseline and the collector kept reading
    assert window_sum(run, "outputs", injected.t + 3, healed.t) == 0
    assert window_median(run, "input", injected.t, healed.t) >= 0.8 * 200
    assert_observer_spared(run)


def fault_window(run, kind=None):
    """The injection and heal events of the run's first fault (of ``kind``, when given)."""
    def first(what):
        return next(e for e in run.timeline if e.kind == what and kind in (None, e.detail.get("fault")))
    return first("fault_injected"), first("fault_healed")


def _buckets(run, start, end):
    s = run.throughput
    width = float(np.min(np.diff(s.t))) if len(s.t) > 1 else 1.0
    inside = (s.t >= start) & (s.t + width <= end)
    assert inside.any(), f"no whole bucket in [{start}, {end}]"
    return s, inside


def window_median(run, series, start, end):
    s, inside = _buckets(run, start, end)
    return float(np.nanmedian(getattr(s, series)[inside]))


def window_sum(run, series, start, end):
    s, inside = _buckets(run, start, end)
    return float(np.nansum(getattr(s, series)[inside]))


def assert_observer_spared(run, clients=("generator", "collector")):
    """The network fault hit the job's connections only: the generator's and the collector's round
    trips to the broker stayed at baseline and neither went a second without a response (``clients``:
    a run that watches a user's output topic with ``Watch`` has no collector, only the generator)."""
    obs = run.observer
    assert obs["scope"] == "job", obs
    assert obs["disturbed"] == {}, obs["disturbed"]
    for client in clients:
        base, during = obs[client]["baseline"], obs[client]["during_faults"]
        assert during["seconds"] >= 3 and during["silent_seconds"] == 0, (client, during)
        assert during["rtt_p50_ms"] <= 3 * base["rtt_p50_ms"] + 50, (client, base, during)
