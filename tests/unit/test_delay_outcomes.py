"""Whether the system noticed a network delay (PD>TO) or not (PD<TO), read from a synthetic timeline."""

from pytest_streamchaos.analysis.delay_class import DelaySpec, delay_outcomes, describe_outcome
from pytest_streamchaos.records import TimelineEvent


def ev(t, kind, target="kafka", **detail):
    return TimelineEvent(t, kind, target, detail)


TIMELINE = [
    ev(10, "fault_injected", label="above"),
    ev(11.5, "task_failed", "executor-0", exception="java.util.concurrent.TimeoutException"),
    ev(14, "fault_healed", label="above"),
    ev(30, "fault_injected", label="below"),
    ev(35, "executor_added", "executor-2"),  # healing, not a detection
    ev(40, "fault_healed", label="below"),
    ev(45, "task_failed", "executor-1", exception="x"),  # past heal + grace: another story
]


def test_a_reaction_during_the_delay_is_noticed_with_its_evidence():
    (o,) = delay_outcomes(TIMELINE, [DelaySpec("above", 3000, True, "kafkaConsumer.pollTimeoutMs", 1.0)])
    assert (o["stated"], o["observed"], o["timeout_ms"]) == ("PD>TO", "noticed", 1000.0)
    assert o["evidence"] == "task_failed executor-0 (java.util.concurrent.TimeoutException) +1.5s after the injection"
    assert "stated PD>TO, the system noticed: task_failed" in describe_outcome(o)


def test_no_reaction_within_the_delay_and_its_grace_is_not_noticed():
    (o,) = delay_outcomes(TIMELINE, [DelaySpec("below", 300, False, "kafkaConsumer.pollTimeoutMs", 20.0)])
    assert (o["stated"], o["observed"], o["evidence"]) == ("PD<TO", "not noticed", None)
    assert "did not notice" in describe_outcome(o)


def test_a_delay_that_never_took_effect_is_left_out():
    assert delay_outcomes(TIMELINE, [DelaySpec("never", 100, None, "spark.network.timeout", 20.0)]) == []
