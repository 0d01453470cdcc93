"""A name the test mistyped is refused on a real job, naming what the job has, before the load and its faults
(docs/names.md): the runtime checks of :mod:`pytest_streamchaos.runner.phases.names` fire on the job's first
progress and first output records, not after a 120 s warm-up that waited for output it could not read.

The job is ``jobs/orders_to_ledger.py`` (Kafka to Kafka with Spark's own Kafka source and sink, topics from
its argv, the input id as the output's Kafka key), unchanged. Each test fails fast by design.
"""

import time
from pathlib import Path

import pytest

from pytest_streamchaos import JobSetup, RecordSpec, Timing
from pytest_streamchaos.runner.errors import RunError

JOB = str(Path(__file__).parent / "jobs" / "orders_to_ledger.py")
#: generous against the seconds the checks take once the job shows the name (its first records, its queries'
#: first progress), far below the warm-up's 120 s they replace
BOUND_S = 60.0


def order(rec: RecordSpec) -> dict:
    return {"id": rec.id, "amount": 1.5, "customer": f"c{rec.key}"}


def _args(source: str, sink: str) -> JobSetup:
    return JobSetup(args=["{bootstrap_servers}", source, sink, "{checkpoint_dir}", "all"])


def refused(chaos, match: str, what: str, *, inputs: dict, outputs: dict, source: str = "orders",
            sink: str = "ledger", warmup: float = 120) -> float:
    """Run the job with the test's names; the run must stop with the refusal ``match``: the seconds it took."""
    start = time.monotonic()
    with pytest.raises(RunError, match=match):
        chaos.run(JOB, rate=50, duration=15, inputs=inputs, outputs=outputs, setup=_args(source, sink),
                  timing=Timing(warmup_timeout=warmup))
    took = time.monotonic() - start
    print(f"{what}: refused {took:.1f}s after chaos.run was called")
    return took


@pytest.mark.chaos
def test_a_mistyped_output_id_field_is_refused_at_the_first_records_naming_the_fields(chaos):
    """The job writes each input record as the value: ``"idd"`` is in none of them; the refusal lists the
    fields they have, with the did-you-mean."""
    assert refused(chaos, r"outputs\['ledger'\] = 'idd': none of the first 10 records has the field 'idd'; they have "
                          r"fields id, amount, customer \(did you mean 'id'\?\)", "mistyped id field",
                   inputs={"orders": order}, outputs={"ledger": "idd"}) < BOUND_S


@pytest.mark.chaos
def test_a_mistyped_input_topic_is_refused_at_the_queries_first_progress_naming_what_they_read(chaos):
    """The job subscribes to ``orders-eu`` (its argv), a topic that exists (an earlier run's, made here); the
    test names ``orders-ue``: the query runs on an empty topic, and its first progress shows what it reads."""
    chaos.kafka.create_topic("orders-eu", partitions=2)
    try:
        took = refused(chaos, r"inputs= names 'orders-ue', which no query of the job reads \(did you mean "
                              r"'orders-eu'\?\); its queries read orders-eu", "mistyped input topic",
                       inputs={"orders-ue": order}, outputs={"ledger": "key"}, source="orders-eu")
    finally:
        chaos.kafka.delete_topic("orders-eu")
    assert took < BOUND_S


@pytest.mark.slow  # ./dev test's budget: its two other name checks on the running job stay
@pytest.mark.chaos
def test_an_input_topic_the_brokers_lack_is_refused_when_the_query_stops_on_it(chaos):
    """The job subscribes to ``purchases`` (its argv), which the test misspells ``purchses``: the run creates
    only the topic the test names, and Spark's Kafka source stops the query on the topic the brokers lack
    (``UnknownTopicOrPartitionException``, which does not name it): the refusal names the test's topic and the
    one the job's arguments give."""
    assert refused(chaos, r"inputs= names 'purchses', but the job's Kafka source subscribes to a topic the brokers "
                          r"do not have \(UnknownTopicOrPartitionException; the run creates only the inputs= "
                          r"topics\): did you mean 'purchases'", "input topic the brokers lack",
                   inputs={"purchses": order}, outputs={"ledger": "key"}, source="purchases") < BOUND_S


@pytest.mark.slow  # ./dev test's budget: its two other name checks on the running job stay
@pytest.mark.chaos
def test_a_mistyped_output_topic_is_refused_naming_the_topic_the_job_writes(chaos):
    """The job writes ``ledger-eu`` (its argv), which the test misspells ``ledger-ue``: the run creates the
    topic the test names, the brokers create none on use, so the job's producer finds no ``ledger-eu`` and its
    first task fails after Kafka's ``max.block.ms`` (60 s): the refusal names the topic it writes."""
    took = refused(chaos, r"outputs= names 'ledger-ue', but the job writes to topic 'ledger-eu', which does not exist",
                   "mistyped output topic", inputs={"orders": order}, outputs={"ledger-ue": "key"}, sink="ledger-eu",
                   warmup=150)
    assert took < 60.0 + BOUND_S  # the producer's own 60 s wait for the topic, then the check


@pytest.mark.slow  # ./dev test's budget: its two other name checks on the running job stay
@pytest.mark.chaos
def test_a_named_topic_that_gets_nothing_while_the_job_writes_an_existing_one_is_refused(chaos):
    """The job writes ``ledger-2025``, a topic that exists (an earlier run's, made here), while the test names
    ``ledger-2026``: the job's Kafka sink reports rows written, the named topic gets none, and the refusal names
    the topic the brokers got records in since the job started."""
    chaos.kafka.create_topic("ledger-2025", partitions=2)
    try:
        took = refused(chaos, r"outputs= names 'ledger-2026', which got no record, but the job's Kafka sinks wrote "
                              r"rows to 'ledger-2025': name the topics the job writes", "output topic that got nothing",
                       inputs={"orders": order}, outputs={"ledger-2026": "key"}, sink="ledger-2025")
    finally:
        chaos.kafka.delete_topic("ledger-2025")
    assert took < BOUND_S
