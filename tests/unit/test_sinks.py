"""Which sinks a job's queries write to, from Spark's progress and event log, and what a run without
``outputs=`` does about them (issue 27, item 3). Descriptions and plans as Spark 4.2 writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_streamchaos.observe.paths import DriverDirs, qualify
from pytest_streamchaos.observe.progress import EV_PROGRESS, EV_SQL_START, SparkProgress
from pytest_streamchaos.observe.sinks import (
    STARTS_SETTLE_S,
    QuerySink,
    SinkVerdict,
    all_started,
    classify,
    judge,
    judge_named,
    query_sinks,
    relative,
    write_root,
)

CONSOLE = "org.apache.spark.sql.execution.streaming.ConsoleTable$@1764649"
FOREACH = ("ForeachWriterTable(org.apache.spark.sql.execution.python.streaming.PythonForeachWriter@7929deaf,Right("
           "org.apache.spark.sql.execution.streaming.sources.ForeachWriterTable$$$Lambda$2750/0x00007fc47ceb4700@4ad5e0ad))")
KAFKA = "org.apache.spark.sql.kafka010.KafkaSourceProvider$KafkaTable@7237ccb8"
QID = "b7f82a8b-606f-4a3c-8339-cd6c86ce8f0e"
#: the SQL execution a foreachBatch function's df.write.mode("append").parquet(f"{out}/batch={id}") runs
WRITE_PLAN = ("== Physical Plan ==\nExecute InsertIntoHadoopFsRelationCommand (3)\n+- WriteFiles (2)\n   +- * Scan "
              "ExistingRDD (1)\n\n\n(1) Scan ExistingRDD [codegen id : 1]\nOutput [2]: [timestamp#0, value#1L]\n"
              "Arguments: [timestamp#0, value#1L], SQLExecutionRDD[19] at start at NativeMethodAccessorImpl.java:0, "
              "ExistingRDD, UnknownPartitioning(0)\n\n(2) WriteFiles\nInput [2]: [timestamp#0, value#1L]\n\n(3) "
              "Execute InsertIntoHadoopFsRelationCommand\nInput: []\nArguments: file:/w/jobs/j/lake/views/batch=0, "
              "false, Parquet, [path=file:/w/jobs/j/lake/views/batch=0], Append, [timestamp, value]\n")


def batch(qid: str, sink: str, n: int, rows: int = 10, t_end: float = 100.0, out: int = -1, name: str | None = None,
          state: bool = False) -> dict:
    return {"id": qid, "name": name, "batchId": n, "numInputRows": rows, "t_end": t_end,
            "sink": {"description": sink, "numOutputRows": out},
            "stateOperators": [{"numRowsTotal": 1}] if state else []}


def test_classify_names_every_sink_spark_reports() -> None:
    assert classify(CONSOLE) == ("console", None)
    assert classify("MemorySink") == ("memory", None)
    assert classify("NoopTable") == ("noop", None)
    assert classify(FOREACH) == ("foreach", None)
    assert classify("ForeachBatchSink") == ("foreachBatch", None)
    assert classify(KAFKA) == ("kafka", None)
    assert classify("FileSink[file:/tmp/out]") == ("file", "file:/tmp/out")
    assert classify("DeltaSink[file:/tmp/bronze]") == ("delta", "file:/tmp/bronze")
    assert classify("SomethingElse@1") == ("other", None)


def test_write_roots_and_relative_names() -> None:
    assert write_root("file:/w/lake/views/batch=7", 7) == "file:/w/lake/views"
    assert write_root("/w/out/7", 7) == "/w/out"
    assert write_root("/w/out", 7) == "/w/out"
    assert relative("file:/w/jobs/j/lake/views", ("/w/jobs/j",)) == "lake/views"
    assert relative("hdfs://nn:1/user/u/lake", ("/w/jobs/j", "hdfs://nn:1/user/u")) == "lake"
    assert relative("file:/elsewhere/out", ("/w",)) == "/elsewhere/out"


def test_foreach_batch_file_writes_come_from_the_event_log(tmp_path: Path) -> None:
    events = [{"Event": EV_SQL_START, "executionId": 10, "time": 1_000_500,
               "description": f"\nid = {QID}\nrunId = 4ab460e9-caab-4019-bd46-ff437cc37f97\nbatch = 0",
               "physicalPlanDescription": WRITE_PLAN},
              {"Event": EV_PROGRESS, "progress": {"id": QID, "runId": "r", "name": None, "batchId": 0,
                                                  "timestamp": "1970-01-12T13:46:40.000Z", "batchDuration": 900,
                                                  "sources": [{"numInputRows": 5}],
                                                  "sink": {"description": "ForeachBatchSink", "numOutputRows": -1}}}]
    (tmp_path / "app-1.inprogress").write_text("".join(json.dumps(e) + "\n" for e in events))
    p = SparkProgress(tmp_path)
    p.poll()
    assert p.writes == [{"query_id": QID, "batch": 0, "path": "file:/w/jobs/j/lake/views/batch=0", "t": 1000.5,
                         "format": "file"}]
    [q] = query_sinks(p.batches, p.writes)
    assert (q.kind, q.writes, q.first_input_end) == ("foreachBatch", ["file:/w/jobs/j/lake/views"], 1_000_000.9)


def test_console_only_is_measured_from_progress_at_the_first_batch() -> None:
    sinks = query_sinks([batch("q1", CONSOLE, 0, rows=0)], [])
    v = judge(sinks, outputs_seen=0, now=100.0, output_topic="out")
    assert v.action == "progress_only"
    assert "writes to the console" in v.message and "outputs={...}" in v.message
    assert "\n" not in v.message


def test_every_unreadable_query_of_a_multi_query_job_is_named() -> None:
    sinks = query_sinks([batch("q1", CONSOLE, 0, name="totals"), batch("q2", "MemorySink", 0, name="recent")], [])
    v = judge(sinks, 0, 100.0, "out")
    assert v.action == "progress_only"
    assert "query 'totals' writes to the console; query 'recent' writes to the memory sink" in v.message


def test_files_the_run_was_not_told_about_are_refused_naming_outputs() -> None:
    sink = query_sinks([batch("q1", "FileSink[file:/w/jobs/j/output]", 0)], [])
    v = judge(sink, 0, 100.0, "out", bases=("/w/jobs/j",))
    assert v.action == "refuse"
    assert "outputs={'file:output': '<field with the input id>'}" in v.message
    fb = query_sinks([batch("q1", "ForeachBatchSink", 0, t_end=100.0)],
                     [{"query_id": "q1", "batch": 0, "path": "file:/w/jobs/j/lake/views/batch=0"}])
    assert judge(fb, 0, 102.0, "out", bases=("/w/jobs/j",)).action == "wait", "the batch's other writes may come"
    v = judge(fb, 0, 106.0, "out", bases=("/w/jobs/j",))
    assert v.action == "refuse" and "outputs={'file:lake/views': " in v.message


def test_a_delta_table_the_run_was_not_told_about_is_refused_naming_the_delta_output() -> None:
    sink = query_sinks([batch("q1", "DeltaSink[file:/tmp/orders-bronze]", 0)], [])
    v = judge(sink, 0, 100.0, "out", bases=("/w/jobs/j",))
    assert v.action == "refuse" and v.dirs == ["/tmp/orders-bronze"]
    assert "query q1 writes to a Delta table in file:/tmp/orders-bronze" in v.message
    assert "outputs={'delta:/tmp/orders-bronze': '<column with the input id>'}" in v.message


def test_a_foreach_batch_delta_append_is_refused_after_the_grace_naming_the_delta_output(tmp_path: Path) -> None:
    plan = ("== Physical Plan ==\nExecute SaveIntoDataSourceCommand (1)\n+- * Project (2)\n\n\n(1) Execute "
            "SaveIntoDataSourceCommand\nOutput: []\n\n(2) SaveIntoDataSourceCommand\nArguments: "
            "org.apache.spark.sql.delta.sources.DeltaDataSource@56138db5, [path=/tmp/orders-bronze], Append\n")
    events = [{"Event": EV_SQL_START, "executionId": 3, "time": 1_000_500, "physicalPlanDescription": plan,
               "description": f"\nid = {QID}\nrunId = 4ab460e9-caab-4019-bd46-ff437cc37f97\nbatch = 2"}]
    (tmp_path / "app-1.inprogress").write_text("".join(json.dumps(e) + "\n" for e in events))
    p = SparkProgress(tmp_path)
    p.poll()
    assert p.writes == [{"query_id": QID, "batch": 2, "path": "/tmp/orders-bronze", "t": 1000.5, "format": "delta"}]
    sinks = query_sinks([batch(QID, "ForeachBatchSink", 2, t_end=100.0)], p.writes)
    assert sinks[0].tables == ["/tmp/orders-bronze"] and sinks[0].writes == []
    assert judge(sinks, 0, 102.0, "out").action == "wait"
    v = judge(sinks, 0, 106.0, "out")
    assert v.action == "refuse" and "outputs={'delta:/tmp/orders-bronze': '<column with the input id>'}" in v.message
    assert "(writing Delta tables /tmp/orders-bronze)" in v.message


#: where the tests' driver resolves relative paths: its working directory on the local disk
DIRS = DriverDirs("/w/jobs/j")


def named(sinks: list[QuerySink], outputs: list[str], starts: dict[str, float] | None = None, now: float = 200.0,
          seen: bool = False) -> SinkVerdict:
    return judge_named(sinks, outputs, starts or {}, seen=seen, now=now, resolve=lambda p: qualify(p, DIRS))


def test_a_delta_table_named_where_no_query_writes_is_refused_naming_the_one_written() -> None:
    sinks = query_sinks([batch("q1", "DeltaSink[file:/tmp/lake/orders]", 0)], [])
    assert named(sinks, ["delta:/tmp/lake/orders"]).action == "read"
    assert named(sinks, ["delta:/tmp/lake/orders/"]).action == "read", "a trailing / is the same table"
    v = named(sinks, ["delta:/tmp/lake/order"])
    assert v.action == "refuse" and "\n" not in v.message
    assert v.message.startswith("outputs= names delta:/tmp/lake/order (file:///tmp/lake/order), which no query of "
                                "the job writes: query q1 writes to a Delta table in file:/tmp/lake/orders; name what "
                                "it writes, e.g. outputs={'delta:file:/tmp/lake/orders': '<column with the input id>'}")


def test_a_relative_delta_path_is_the_table_the_sink_prints_unresolved() -> None:
    """Issue 47: ``outputs=["delta:data/bronze"]`` and ``DeltaSink[data/bronze]`` are one table (the refusal
    compared the resolved path with the printed one)."""
    sinks = query_sinks([batch("q1", "DeltaSink[data/bronze]", 0)], [])
    for given in ("delta:data/bronze", "delta:./data/bronze/", "delta:/w/jobs/j/data/bronze", "delta:file:/w/jobs/j/"
                  "data/bronze", "delta:file:///w/jobs/j/data/bronze"):
        assert named(sinks, [given]).action == "read", given
    v = named(sinks, ["delta:data/silver"])
    assert v.action == "refuse" and "delta:data/silver (file:///w/jobs/j/data/silver)" in v.message
    assert "writes to a Delta table in data/bronze" in v.message and "'delta:data/bronze'" in v.message


def test_a_relative_file_sink_path_and_a_foreach_batch_write_resolve_alike() -> None:
    sinks = query_sinks([batch("q1", "FileSink[output]", 0)], [])
    assert named(sinks, ["file:output"]).action == "read"
    assert named(sinks, ["file:/w/jobs/j/output/"]).action == "read"
    assert named(sinks, ["file:outptu"]).action == "refuse"
    fb = query_sinks([batch("q1", "ForeachBatchSink", 0)], [{"query_id": "q1", "batch": 0,
                                                           "path": "file:/w/jobs/j/lake/views/batch=0"}])
    assert named(fb, ["file:lake/views"]).action == "read"
    assert named(fb, ["file:elsewhere"]).action == "read", "a foreachBatch function may write anywhere"


def test_a_kafka_topic_needs_a_query_that_can_write_kafka() -> None:
    files = query_sinks([batch("q1", "FileSink[output]", 0, name="files")], [])
    v = named(files, ["output00"])
    assert v.action == "refuse"
    assert v.message.startswith("outputs= names output00, which no query of the job writes: query 'files' writes to "
                                "files in output; name what it writes, e.g. outputs={'file:output': ")
    assert named(query_sinks([batch("q1", KAFKA, 0)], []), ["output00"]).action == "read"
    assert named(query_sinks([batch("q1", "ForeachBatchSink", 0)], []), ["output00"]).action == "read"
    kafka = query_sinks([batch("q1", KAFKA, 0)], [])
    assert named(kafka, ["delta:data/bronze"]).action == "refuse", "Kafka's sink writes no table"


def test_the_second_query_of_a_job_counts_before_anything_is_refused() -> None:
    """Issue 47: the console query reported its first micro-batch before the Kafka query had started; the
    check refused ``outputs={"output00": ...}`` ("nothing there can be read"). It waits for the queries."""
    console = batch("c", CONSOLE, 0, rows=0, name="console-output") | {"t_start": 99.0}
    first = query_sinks([console], [])
    assert named(first, ["output00"], {"c": 98.0}, now=100.0).action == "wait", "the next query may be starting"
    assert named(first, ["output00"], {"c": 98.0, "k": 101.0}, now=120.0).action == "wait", "k has not reported"
    both = query_sinks([console, batch("k", KAFKA, 0, rows=0, name="kafka-output") | {"t_start": 102.0}], [])
    assert named(both, ["output00"], {"c": 98.0, "k": 101.0}, now=102.5).action == "read"
    assert named(first, ["output00"], {"c": 98.0}, now=100.0, seen=True).action == "read", "its output was read"
    # a console-only job is refused once no other query came within the settling time
    assert named(first, ["output00"], {"c": 98.0}, now=98.0 + STARTS_SETTLE_S - 0.1).action == "wait"
    v = named(first, ["output00"], {"c": 98.0}, now=98.0 + STARTS_SETTLE_S)
    assert v.action == "refuse" and v.message == (
        "outputs= names output00, but query 'console-output' writes to the console: nothing there can be read; "
        "pass outputs={} for a run from Spark's progress")


def test_a_run_without_outputs_waits_for_every_query_too() -> None:
    """The same race without ``outputs=``: a console query first is not "nothing readable" while a Kafka query
    of the job may still start and write the run's output topic."""
    console = query_sinks([batch("c", CONSOLE, 0) | {"t_start": 99.0}], [])
    assert judge(console, 0, 100.0, "out", starts={"c": 98.0}).action == "wait"
    assert judge(console, 0, 100.0, "out", starts={"c": 98.0, "k": 99.5}).action == "wait"
    assert judge(console, 0, 98.0 + STARTS_SETTLE_S, "out", starts={"c": 98.0}).action == "progress_only"


def test_all_started_counts_a_query_seen_only_in_progress_from_its_first_batch() -> None:
    sinks = query_sinks([batch("q", KAFKA, 0) | {"t_start": 150.0}], [])
    assert not all_started(sinks, {}, 155.0) and all_started(sinks, {}, 150.0 + STARTS_SETTLE_S)
    assert not all_started([], {}, 1000.0), "nothing reported: nothing known"


@pytest.mark.parametrize("sink", ["ForeachBatchSink", FOREACH])
def test_a_silent_stateless_foreach_or_foreach_batch_goes_progress_only_after_the_grace(sink: str) -> None:
    """Either may write to the run's output topic (a producer in the user's code): judged by what came."""
    sinks = query_sinks([batch("q1", sink, 0, rows=0, t_end=90.0), batch("q1", sink, 1, rows=50, t_end=100.0)], [])
    assert judge(sinks, 0, 103.0, "out").action == "wait"
    assert judge(sinks, 1, 106.0, "out").action == "read"
    v = judge(sinks, 0, 105.5, "out")
    assert v.action == "progress_only" and "nothing came to the run's output topic out within 5s" in v.message


def test_readable_or_undecidable_jobs_are_left_alone() -> None:
    fb = query_sinks([batch("q1", "ForeachBatchSink", 0, t_end=100.0)], [])
    assert judge(fb, outputs_seen=3, now=200.0, output_topic="out").action == "read"
    stateful = query_sinks([batch("q1", "ForeachBatchSink", 0, t_end=100.0, state=True)], [])
    assert judge(stateful, 0, 200.0, "out").action == "wait", "a window's output comes when the watermark passes"
    kafka_quiet = query_sinks([batch("q1", KAFKA, 0, out=0)], [])
    assert judge(kafka_quiet, 0, 200.0, "out").action == "wait"
    kafka_elsewhere = query_sinks([batch("q1", KAFKA, 0, out=10)], [])
    v = judge(kafka_elsewhere, 0, 200.0, "out")
    assert v.action == "refuse" and "outputs={'<topic>'" in v.message
    assert judge([], 0, 200.0, "out").action == "wait"
    mixed = query_sinks([batch("q1", CONSOLE, 0), batch("q2", KAFKA, 0, out=0)], [])
    assert judge(mixed, 0, 200.0, "out").action == "wait", "the Kafka query may still write the output topic"
    assert isinstance(mixed[0], QuerySink) and mixed[0].to_dict()["kind"] == "console"
