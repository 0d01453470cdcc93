"""A Python worker that crashes shows its own error (issue 38, point 4): Spark reports only "driver worker
exited unexpectedly (crashed)"; the worker's traceback is in the driver's log, inside a JVM exception's
message. The failure text names the worker's error first, with the fix, and where the full log is; so does
the ``chaos run`` section. The log below is the driver log of a transformWithStateInPandas job run on Spark
4.2 without protobuf installed, cut to its telling lines."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from synthetic import T0, stateless_trace

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.facts import JobFacts, RunFacts, RunSetup
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.report.failure import explain
from pytest_streamchaos.runner.errors import job_failed, module_hint
from pytest_streamchaos.stack.driver.job import crashed_worker_error, last_exception

PB = "/usr/lib/python3.11/site-packages/pyspark/python/lib/pyspark.zip/pyspark/sql/streaming"
CRASH = "TransformWithStateInPySpark driver worker exited unexpectedly (crashed)"
QUERY_ERROR = ("pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] Query [id = 4ca2, runId = "
               f"3ecb] terminated with exception: {CRASH} SQLSTATE: XXKST")
IMPORT_ERROR = "ImportError: cannot import name 'descriptor' from 'google.protobuf' (unknown location)"
EXEC = "org.apache.spark.sql.execution.python.streaming.TransformWithStateInPySpark"
CAUSED_BY = ("Caused by: org.apache.spark.api.python.StreamingPythonRunner$"
             "StreamingPythonRunnerInitializationException: [STREAMING_PYTHON_RUNNER_INITIALIZATION_FAILURE] "
             "Streaming Runner initialization failed, returned -2. "
             "Cause: Traceback (most recent call last):")
LOG = f"""13:45:53.332 WARN TransformWithStateInPySparkStateServer: No more data to read from the socket
13:45:53.482 ERROR MicroBatchExecution: Query [id = 4ca2, runId = 3ecb] terminated with error
org.apache.spark.SparkException: {CRASH}
\tat {EXEC}Exec.validateAndMaybeEvolveStateSchema(TransformWithStateInPySparkExec.scala:169)
{CAUSED_BY}
  File "{PB}/transform_with_state_driver_worker.py", line 83, in main
  File "{PB}/stateful_processor_api_client.py", line 90, in set_handle_state
    import pyspark.sql.streaming.proto.StateMessage_pb2 as stateMessage
  File "{PB}/proto/StateMessage_pb2.py", line 24, in <module>
    from google.protobuf import descriptor as _descriptor
{IMPORT_ERROR}
 SQLSTATE: XXKST
\tat {EXEC}PythonPreInitRunner.process(TransformWithStateInPySparkPythonRunner.scala:330)
\t... 23 more
Traceback (most recent call last):
  File "/jobs/clicks_numbered_tws.py", line 57, in <module>
    .awaitTermination())
  File "{PB}/query.py", line 227, in awaitTermination
{QUERY_ERROR}
=== Streaming Query ===
13:45:55.222 INFO SparkContext: Invoking stop() from shutdown hook
"""


def test_the_crashed_workers_own_error_leads_the_drivers_last_exception():
    assert crashed_worker_error(LOG) == IMPORT_ERROR
    assert last_exception(LOG) == f"a Python worker crashed with {IMPORT_ERROR} (Spark: {QUERY_ERROR})"
    # no crash: the last exception as it is, and a traceback of the job's own is not mistaken for a worker's
    plain = "Traceback (most recent call last):\n  File \"job.py\", line 3\nValueError: bad\n"
    assert last_exception(plain) == "ValueError: bad" and crashed_worker_error(plain) is None
    alone = f"Traceback (most recent call last):\n  File \"job.py\", line 3\n{QUERY_ERROR}\n"
    assert last_exception(alone) == QUERY_ERROR  # crashed, the worker's error not in this log: said as it is


def test_the_run_error_names_the_import_error_the_fix_and_the_log(tmp_path: Path):
    log = tmp_path / "driver.log"
    log.write_text(LOG)
    job = SimpleNamespace(alive=False, name="clicks_numbered_tws", log_path=log, workdir=tmp_path,
                          last_error=lambda: last_exception(log.read_text()), tail_log=lambda n: "(tail)")
    first, *_ = str(job_failed(job, "the job exited (code 1) before reaching steady state",
                               tmp_path / "clicks_numbered_tws.py")).splitlines()
    assert first.startswith(f"the job exited (code 1) before reaching steady state: a Python worker crashed with "
                            f"{IMPORT_ERROR}")
    assert "fix: install protobuf where the job's Python runs" in first
    assert f"--- job log (clicks_numbered_tws: {log}) tail ---" in str(job_failed(job, "x", log))
    assert module_hint("ModuleNotFoundError: No module named 'holidays'").startswith(
        "; fix: install holidays where the job's Python runs (pip install holidays)")
    assert module_hint("ValueError: bad") == ""


def test_the_chaos_run_section_names_the_workers_error(tmp_path: Path):
    log = tmp_path / "driver.log"
    log.write_text(LOG)
    trace = stateless_trace(rate=100, duration=30, stop_at=5.0)
    trace.timeline += [TimelineEvent(T0 + 4.8, "query_terminated", "query", {"exception": QUERY_ERROR}),
                       TimelineEvent(T0 + 5.0, "driver_exited", "driver", {"code": 1})]
    facts = RunFacts(setup=RunSetup(test="t", seed=1, arguments={}, planned_faults=[], spark_conf={},
                                    cluster_conf={}, kafka_conf={}, timeouts=[]), job=JobFacts(log=str(log)))
    run = ChaosRun.from_trace(trace, guarantee="at-least-once", facts=facts)
    (exit_line,) = [ln for ln in explain(run) if ln.startswith("driver: ")]
    assert f"a Python worker crashed with {IMPORT_ERROR}" in exit_line, exit_line
