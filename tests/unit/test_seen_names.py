"""The warm-up's name checks both ways: silent on what a correct test and job show, refusing the typo only when
what was seen proves it (observe/seen_names.py), and wired to the run's observers (runner/phases/names.py)
with the waits that keep a job's second query or a slow first record from a false refusal."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_streamchaos import AggregateOracle, IdentityOracle, TumblingWindowOracle
from pytest_streamchaos.events import Kind
from pytest_streamchaos.observe.output_reader import OutputReader
from pytest_streamchaos.observe.output_store import OutputStore
from pytest_streamchaos.observe.outputs import NO_IDS, Outputs
from pytest_streamchaos.observe.row_output import RowOutput
from pytest_streamchaos.observe.seen_names import (
    SAMPLE,
    Sampled,
    idless,
    missing_fields,
    missing_topics,
    subscriptions,
    unread_inputs,
    unwritten_outputs,
)
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.phases.names import NameCheck


def records(*values: dict, ids: int | None = 1) -> list[Sampled]:
    return [Sampled(json.dumps(v).encode(), b"1", ids) for v in values]


def progress(*queries: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"id": qid, "sources": [{"description": desc}]} for qid, desc in queries]


# -- inputs -------------------------------------------------------------------------------------------------------
def test_the_sources_of_every_kafka_strategy_are_read():
    seen = subscriptions(progress(("q1", "KafkaV2[Subscribe[orders, payments]]"),
                                  ("q2", "KafkaSourceV1[Assign[clicks-0, clicks-1]]"),
                                  ("q3", "KafkaV2[SubscribePattern[audit-.*]]"),
                                  ("q4", "FileStreamSource[file:/data/in]")))
    assert seen.topics == ["orders", "payments", "clicks"]
    assert seen.reads("audit-eu") and not seen.reads("audits")
    assert seen.others == ["FileStreamSource[file:/data/in]"] and seen.queries == {"q1", "q2", "q3", "q4"}


@pytest.mark.parametrize("named", [["orders"], ["orders", "payments"], ["audit-eu"],
                                   ["orders", "prices"]])  # prices: read as the static side of a join
def test_inputs_the_queries_read_or_may_read_another_way_are_not_refused(named):
    seen = subscriptions(progress(("q1", "KafkaV2[Subscribe[orders, payments]]"),
                                  ("q2", "KafkaV2[SubscribePattern[audit-.*]]")))
    assert unread_inputs(named, seen) is None


def test_an_input_read_by_no_query_is_refused_when_it_misspells_a_read_topic_or_none_is_read():
    seen = subscriptions(progress(("q1", "KafkaV2[Subscribe[orders, payments]]")))
    assert "'paymnets', which no query of the job reads (did you mean 'payments'?)" in \
        unread_inputs(["orders", "paymnets"], seen)
    assert "its queries read orders, payments" in unread_inputs(["invoices"], seen)
    assert unread_inputs(["orders"], subscriptions(progress(("q", "FileStreamSource[/in]")))) is None, \
        "a job that reads no Kafka topic at all is not judged by its inputs"


# -- output topics ------------------------------------------------------------------------------------------------
def test_the_topic_a_producer_could_not_find_is_read_off_the_task_failure():
    assert missing_topics(["org.apache.kafka.common.errors.TimeoutException: Topic ledger-eu not present in metadata "
                           "after 60000 ms.", "java.lang.OutOfMemoryError", ""]) == ["ledger-eu"]


def test_named_output_topics_are_refused_only_when_all_got_nothing_and_the_job_wrote_elsewhere():
    assert unwritten_outputs({"ledger": 3}, ["audit"]) is None, "a named topic got records: no typo"
    assert unwritten_outputs({"ledger": 0}, []) is None, "nothing says the job writes elsewhere (yet)"
    assert unwritten_outputs({"ledger": 0}, ["ledger"]) is None, "a named topic missing is not 'elsewhere'"
    assert unwritten_outputs({"ledger": 0}, [], sinks_wrote=True, written=["ledgers"]).endswith(
        "the job's Kafka sinks wrote rows to 'ledgers': name the topics the job writes")


# -- ids and fields -----------------------------------------------------------------------------------------------
def test_an_id_spec_is_judged_only_on_a_full_sample_and_passes_if_any_record_had_an_id():
    ok = records({"id": 1})
    none = [Sampled(b'{"id": 1}', None, None, "ValueError: no field 'idd'")]
    assert idless("o", "idd", none * (SAMPLE - 1)) is None, "fewer records than the sample: wait"
    assert idless("o", "id", (none * (SAMPLE - 1)) + ok) is None, "one record with an id: some lack ids on purpose"
    assert idless("o", "idd", none * SAMPLE) is not None


def test_a_field_that_is_there_but_holds_no_integer_id_is_said_so():
    rows = [Sampled({"InvoiceNo": "INV-1"}, None, None, "ValueError: id is not an integer: 'INV-1'")] * SAMPLE
    why = idless("outputs['file:out']", "InvoiceNo", rows)
    assert "the field is there but holds no input id" in why and "'INV-1'" in why


def test_an_oracle_whose_fields_the_records_have_passes():
    counts = records(*[{"key": "k1", "count": 3, "window": {"start": 0, "end": 60}}] * SAMPLE)
    assert missing_fields("AggregateOracle", "'c'", AggregateOracle(60).output_fields(), counts) is None
    flat = records(*[{"key": "k1", "window_start": 0, "window_end": 60, "id": 1}] * SAMPLE)
    assert missing_fields("TumblingWindowOracle", "'c'", TumblingWindowOracle(60).output_fields(), flat) is None
    assert IdentityOracle().output_fields() == {}
    assert "AggregateOracle(key_field='key')" in missing_fields(
        "AggregateOracle", "'c'", AggregateOracle(60).output_fields(),
        records(*[{"store": "k1", "count": 3, "window": {}}] * SAMPLE)), "the default key field is checked too"


def test_the_collectors_keep_the_first_records_read_or_not():
    store = OutputStore(["t"], OutputReader("order.id", None, None, None, "outputs['t'] id reader"), 5)
    msgs = [SimpleNamespace(value=lambda v=v: v, key=lambda: b"k", timestamp=lambda: (0, 0), topic=lambda: "t",
                            partition=lambda: 0, offset=lambda: 0)
            for v in [b'{"order": {"id": 1}}', b'{"order": {}}'] * SAMPLE]
    store.record(msgs, time.time())
    assert len(store.first) == SAMPLE and store.first[0].ids == 1 and store.first[1].ids is None
    assert "no field 'order.id'" in store.first[1].error

    rows = RowOutput("file:out", "order_id", 1.0, None)
    rows._record("part-0", time.time(), [{"order_id": 3}, {"id": 4}])
    assert [s.ids for s in rows.first_records] == [1, None]


# -- the runner's check: its waits --------------------------------------------------------------------------------
class Part:
    def __init__(self, samples: list[Sampled], count: int = 0, malformed: int = 0) -> None:
        self.first_records, self.count, self.malformed = samples, count, malformed


def check(*, inputs=None, outputs=None, oracle=None, parts=(), batches=(), timeline=(), id_reader=None):
    ids = dict(outputs or {})
    ctx = SimpleNamespace(spec=SimpleNamespace(inputs=inputs, outputs=list(ids) if outputs is not None else None),
                          inputs=SimpleNamespace(output_ids=ids, id_reader=id_reader,
                                                 oracle=oracle or IdentityOracle()),
                          phases={"start": time.time() - 60})
    collector = Outputs(list(parts)) if outputs is not None else parts[0]
    observed = SimpleNamespace(batches=list(batches), timeline=list(timeline), writes=[])
    return NameCheck(ctx, collector, observed, lambda since, exclude: ["ledger"])


def started(qid: str, ago: float) -> TimelineEvent:
    return TimelineEvent(t=time.time() - ago, kind=Kind.QUERY_STARTED, target="query", detail={"id": qid})


def test_inputs_wait_for_every_query_that_started_and_the_settle_time():
    one = progress(("q1", "KafkaV2[Subscribe[orders]]"))
    two_started = [started("q1", 30), started("q2", 30)]
    check(inputs=["payments"], outputs={}, batches=one, timeline=two_started).check()  # q2 not reported yet
    check(inputs=["payments"], outputs={}, batches=one, timeline=[started("q1", 1)]).check()  # just started
    with pytest.raises(RunError, match="inputs= names 'payments', which no query of the job reads"):
        check(inputs=["payments"], outputs={}, batches=one, timeline=[started("q1", 30)]).check()


def test_an_output_is_judged_once_its_first_records_are_in_and_a_no_ids_output_never():
    idless_records = [Sampled(b'{"amount": 1}', b"1", None, "ValueError: no field 'idd'")] * SAMPLE
    check(outputs={"ledger": "idd"}, parts=[Part(idless_records[:3], malformed=3)]).check()
    check(outputs={"ledger": NO_IDS}, parts=[Part(idless_records, malformed=SAMPLE)]).check()
    with pytest.raises(RunError, match=r"outputs\['ledger'\] = 'idd': none of the first 10 records"):
        check(outputs={"ledger": "idd"}, parts=[Part(idless_records, malformed=SAMPLE)]).check()


def test_the_oracle_judges_its_main_output_not_its_late_side_output():
    windows = records(*[{"key": 1, "window": {"start": 0, "end": 60}, "id": 1}] * SAMPLE)
    late = records(*[{"id": 2}] * SAMPLE)
    oracle = TumblingWindowOracle(60, late_topic="late")
    check(outputs={"main": None, "late": None}, oracle=oracle, parts=[Part(windows, 10), Part(late, 10)]).check()
    with pytest.raises(RunError, match="TumblingWindowOracle reads each output's window"):
        check(outputs={"main": None}, oracle=TumblingWindowOracle(60), parts=[Part(late, 10)]).check()


def test_a_named_topic_that_got_nothing_is_refused_once_the_producer_says_where_the_job_writes():
    failed = TimelineEvent(t=time.time(), kind=Kind.TASK_FAILED, target="executor-0", detail={
        "message": "org.apache.kafka.common.errors.TimeoutException: Topic ledger-eu not present in metadata after "
                   "60000 ms."})
    check(outputs={"ledger-ue": "key"}, parts=[Part([])]).check()
    with pytest.raises(RunError, match="but the job writes to topic 'ledger-eu', which does not exist"):
        check(outputs={"ledger-ue": "key"}, parts=[Part([])], timeline=[failed]).check()
    check(outputs={"ledger-ue": "key"}, parts=[Part(records({"id": 1}), count=1)], timeline=[failed]).check()


def test_the_driver_log_tells_the_missing_topic_before_the_event_log_does(tmp_path):
    """Spark's event log holds a task's failure until its stage ends, which a write retried for a missing topic
    never does: the driver log's ``Lost task`` line is read instead, a whole line at a time."""
    log = tmp_path / "driver.log"
    log.write_text("01:04:07.100 INFO SparkContext: Starting job\n01:05:15.573 WARN TaskSetManager: [batchId = 1] "
                   "Lost task 0.0 in stage 1.0 (TID 2) (127.0.0.1 executor 1): org.apache.kafka.common.errors."
                   "TimeoutException: Topic ledger-eu not pres")
    names = check(outputs={"ledger-ue": "key"}, parts=[Part([])])
    names.log = log
    names.check()  # half a line: not read yet
    with log.open("a") as f:
        f.write("ent in metadata after 60000 ms.\n")
    with pytest.raises(RunError, match="the job writes to topic 'ledger-eu', which does not exist"):
        names.check()


def test_a_source_topic_the_brokers_lack_is_told_from_a_sink_topic_they_lack(tmp_path):
    """A query that ends on ``UnknownTopicOrPartitionException`` before its first batch read a topic the run did
    not create: the named input its arguments do not give is refused with the one they give. A sink's write to a
    missing topic logs the same cause under its task's failure: that is the output check's, not this one's."""
    script = tmp_path / "job.py"
    script.write_text('spark.readStream.format("kafka").option("subscribe", sys.argv[1]).load()\n')
    log = tmp_path / "driver.log"
    log.write_text("01:05:15 WARN TaskSetManager: Lost task 0.0: org.apache.kafka.common.errors.TimeoutException: "
                   "Topic ledger-eu not present in metadata after 60000 ms.\nCaused by: org.apache.kafka.common."
                   "errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.\n")
    names = check(inputs=["orders"], outputs={"ledger-ue": "key"}, parts=[Part([])])
    names.ctx.inputs.script, names.log, names.job_args = script, log, ["orders", "ledger-eu"]
    with pytest.raises(RunError, match="outputs= names 'ledger-ue', but the job writes to topic 'ledger-eu'"):
        names.check()
    with log.open("a") as f:
        f.write("pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] Query [id = 6] terminated "
                "with exception: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does "
                "not host this topic-partition. SQLSTATE: XXKST\n")
    names = check(inputs=["ordrs"], outputs={"ledger": "key"}, parts=[Part([])])
    names.ctx.inputs.script, names.log, names.job_args = script, log, ["127.0.0.1:9092", "orders", "ledger", "/tmp/c"]
    with pytest.raises(RunError, match=r"inputs= names 'ordrs', but the job's Kafka source subscribes to a topic the "
                                       r"brokers do not have .*did you mean 'orders'"):
        names.check()
