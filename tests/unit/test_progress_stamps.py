"""An event of the driver's log that has no time of its own is never stamped before its cause (issue 33).

Measured on the landed code: in a NameNode kill the job's ``query_terminated`` was stamped before
``fault_injected``. Spark's ``QueryTerminatedEvent`` carries no timestamp; the progress reader gave it
the time of the event before it -- the end of the last SQL execution, which ran before the kill. The
event is now stamped at the earliest instant it is known to have happened by: the next event of its
application with a time of its own (the log is written in order), else the moment it was read.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pytest_streamchaos.observe.progress import EV_QUERY_TERMINATED, SparkProgress

#: the events around a query killed by a lost NameNode, as Spark 4.2 logged them (times in epoch ms)
BEFORE = [
    {"Event": "SparkListenerApplicationStart", "App ID": "app-1", "App Name": "j", "Timestamp": 1000_000},
    {"Event": "SparkListenerTaskEnd", "Stage ID": 3, "Task End Reason": {"Reason": "Success"},
     "Task Info": {"Finish Time": 1010_402}},
    {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", "executionId": 9,
     "time": 1010_405},
]
TERMINATED = {"Event": EV_QUERY_TERMINATED, "id": "q", "runId": "r",
              "exception": "java.io.EOFException: End of File Exception between local host ..."}
FAULT_T = 1010.409  # the NameNode's SIGKILL, between the last SQL execution's end and the failure


def _write(path: Path, events: list[dict]) -> None:
    with open(path, "a") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def _terminated(sp: SparkProgress) -> float:
    (t,) = [e.t for e in sp.timeline if e.kind == "query_terminated"]
    return t


def test_a_query_terminated_event_takes_the_time_of_the_next_stamped_event(tmp_path: Path):
    _write(tmp_path / "app-1.inprogress", [*BEFORE, TERMINATED, {"Event": "SparkListenerApplicationEnd",
                                                                  "Timestamp": 1010_794}])
    sp = SparkProgress(tmp_path)
    sp.poll()
    t = _terminated(sp)
    assert t == 1010.794
    assert t > FAULT_T, "the query's failure is stamped after the kill that caused it"


def test_without_a_later_event_it_takes_the_moment_it_was_read(tmp_path: Path):
    _write(tmp_path / "app-1.inprogress", [*BEFORE, TERMINATED])
    sp = SparkProgress(tmp_path)
    before = time.time()
    sp.poll()
    after = time.time()
    t = _terminated(sp)
    assert before <= t <= after
    # a later read does not restamp it
    _write(tmp_path / "app-1.inprogress", [{"Event": "SparkListenerApplicationEnd", "Timestamp": 1010_794}])
    sp.poll()
    assert _terminated(sp) == t


def test_events_of_another_application_do_not_stamp_it(tmp_path: Path):
    # a restarted driver's log is another application: its events say nothing of when the first one stopped
    _write(tmp_path / "app-1.inprogress", [*BEFORE, TERMINATED])
    _write(tmp_path / "app-2.inprogress", [{"Event": "SparkListenerApplicationStart", "App ID": "app-2",
                                            "App Name": "j", "Timestamp": 1011_000}])
    sp = SparkProgress(tmp_path)
    before = time.time()
    sp.poll()
    assert _terminated(sp) >= before
