"""Which sinks a job's queries write to, from Spark's progress and event log, and what a run without
``outputs=`` does about them (issue 27, item 3). Descriptions and plans as Spark 4.2 writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_streamchaos.observe.progress import EV_PROGRESS, EV_SQL_START, SparkProgress
from pytest_streamchaos.observe.sinks import (
    QuerySink,
    classify,
    judge,
    misnamed_tables,
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
                         "format": "files"}]
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


def test_a_delta_table_named_where_no_query_writes_is_refused_naming_the_one_written() -> None:
    sinks = query_sinks([batch("q1", "DeltaSink[file:/tmp/lake/orders]", 0)], [])
    assert misnamed_tables(sinks, ["/tmp/lake/orders"]) is None
    assert misnamed_tables(sinks, []) is None
    msg = misnamed_tables(sinks, ["/tmp/lake/order"])
    assert msg is not None and "\n" not in msg
    assert msg.startswith("outputs= names delta:/tmp/lake/order, which no query writes, but query q1 writes to a "
                          "Delta table in /tmp/lake/orders: name the table the job writes")
    assert misnamed_tables(query_sinks([batch("q1", KAFKA, 0)], []), ["/tmp/x"]) is None  # nothing to compare


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
