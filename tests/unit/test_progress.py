"""Progress capture on synthetic event logs and checkpoint directories (known answers, no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.observe.progress import (
    EV_PROGRESS,
    EV_QUERY_STARTED,
    EventLogError,
    EventLogTailer,
    SparkProgress,
    parse_spark_time,
)


def _progress(batch_id: int, ts: str, rows: int, start: dict | None, end: dict) -> dict:
    return {"Event": EV_PROGRESS, "progress": {
        "id": "q", "runId": "r", "timestamp": ts, "batchId": batch_id,
        "batchDuration": 500, "durationMs": {"triggerExecution": 500, "addBatch": 300},
        # As in the event log: offsets are JSON strings, and there is no top-level numInputRows.
        "sources": [{"description": "kafka", "startOffset": None if start is None else json.dumps(start),
                     "endOffset": json.dumps(end), "numInputRows": rows}]}}


def _write(path: Path, events: list[dict], *, partial: str = "") -> None:
    with open(path, "a") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
        f.write(partial)


def test_parse_spark_time():
    assert parse_spark_time("1970-01-01T00:00:01.500Z") == 1.5
    assert parse_spark_time(None) is None


def test_progress_and_timeline_incremental_across_restart(tmp_path: Path):
    app1 = tmp_path / "app-1.inprogress"
    _write(app1, [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-1", "App Name": "j", "Timestamp": 1000_000},
        {"Event": "SparkListenerExecutorAdded", "Timestamp": 1001_000, "Executor ID": "0",
         "Executor Info": {"Host": "127.0.0.1", "Total Cores": 1}},
        {"Event": "SparkListenerExecutorAdded", "Timestamp": 1001_000, "Executor ID": "driver",
         "Executor Info": {"Host": "127.0.0.1", "Total Cores": 1}},
        {"Event": EV_QUERY_STARTED, "id": "q", "runId": "r", "name": None, "timestamp": "1970-01-01T00:16:42.000Z"},
    ], partial='{"Event": "SparkListenerExecutorRem')  # a torn line: must not be read yet
    sp = SparkProgress(tmp_path)
    assert sp.poll() == 4
    kinds = [e.kind for e in sp.timeline]
    assert kinds == ["driver_started", "executor_added", "query_started"]  # local-mode "driver" executor skipped
    assert sp.timeline[0].t == 1000.0 and sp.timeline[1].target == "executor-0"
    assert sp.timeline[2].t == 1002.0
    assert sp.app_ids == ["app-1"]

    # The line completes, a batch arrives, then the driver stops cleanly (file renamed).
    _write(app1, [], partial='oved", "Timestamp": 1003000, "Executor ID": "0", "Removed Reason": "lost"}\n')
    _write(app1, [_progress(0, "1970-01-01T00:16:43.000Z", 10, None, {"t": {"0": 10}})])
    sp.poll()
    assert [e.kind for e in sp.timeline][-1] == "executor_removed"
    assert sp.timeline[-1].detail["reason"] == "lost"
    # YARN removes a lost NodeManager's executor a second time: one removal on the timeline
    _write(app1, [{"Event": "SparkListenerExecutorRemoved", "Timestamp": 1003_200, "Executor ID": "0",
                   "Removed Reason": "Container on a lost node"}])
    sp.poll()
    assert [e.kind for e in sp.timeline].count("executor_removed") == 1
    assert len(sp.batches) == 1 and sp.batches[0]["t_start"] == 1003.0 and sp.batches[0]["t_end"] == 1003.5
    assert sp.batches[0]["app_id"] == "app-1"
    _write(app1, [{"Event": "SparkListenerApplicationEnd", "Timestamp": 1004_000, "ExitCode": 0}])
    app1.rename(tmp_path / "app-1")
    sp.poll()
    assert sp.timeline[-1].kind == "driver_stopped"

    # A restarted driver writes a new application's log; batch 0 was re-run, then batch 1.
    _write(tmp_path / "app-2.inprogress", [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-2", "App Name": "j", "Timestamp": 1010_000},
        _progress(1, "1970-01-01T00:16:51.000Z", 5, {"t": {"0": 10}}, {"t": {"0": 15}}),
    ])
    sp.poll()
    assert sp.app_ids == ["app-1", "app-2"]
    assert [(b["app_id"], b["batchId"]) for b in sp.batches] == [("app-1", 0), ("app-2", 1)]
    assert sp.batches[1]["sources"][0]["endOffset"] == {"t": {"0": 15}}
    assert sp.batches[1]["numInputRows"] == 5  # the total the event log leaves out
    assert sp.last_batch_id() == 1
    assert sp.poll() == 0  # nothing new: nothing re-read


def test_compressed_log_is_refused_with_the_fix(tmp_path: Path):
    (tmp_path / "app-1.zstd").write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(EventLogError, match="spark.eventLog.compress=false"):
        EventLogTailer(tmp_path).poll()


def test_rolling_uncompressed_log(tmp_path: Path):
    d = tmp_path / "eventlog_v2_app-7"
    d.mkdir()
    _write(d / "events_1_app-7", [{"Event": "SparkListenerApplicationStart", "App ID": "app-7", "Timestamp": 5000}])
    _write(d / "events_2_app-7", [_progress(3, "1970-01-01T00:00:06.000Z", 1, None, {})])
    sp = SparkProgress(tmp_path)
    sp.poll()
    assert sp.app_ids == ["app-7"] and sp.batches[0]["batchId"] == 3 and sp.batches[0]["app_id"] == "app-7"


def test_wait_for_times_out_naming_what(tmp_path: Path):
    sp = SparkProgress(tmp_path)
    with pytest.raises(TimeoutError, match="batch 5"):
        sp.wait_for(lambda s: s.last_batch_id() == 5, timeout=0.3, what="batch 5")


def test_checkpoint_watcher(tmp_path: Path):
    cw = CheckpointWatcher(tmp_path)
    assert cw.latest_offset_batch() is None and cw.uncommitted_batch() is None
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    for n in range(3):
        (tmp_path / "offsets" / str(n)).write_text(
            'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n' + json.dumps({"t": {"0": n * 10}}) + "\n-")
        (tmp_path / "offsets" / f".{n}.crc").write_text("x")
    (tmp_path / "offsets" / ".3.0b1c.tmp").write_text("partial")
    for n in range(2):
        (tmp_path / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert cw.offset_batches() == [0, 1, 2]
    assert cw.latest_offset_batch() == 2 and cw.latest_committed_batch() == 1
    assert cw.uncommitted_batch() == 2
    assert cw.offsets(2) == {"metadata": {"batchWatermarkMs": 0, "batchTimestampMs": 1},
                             "sources": [{"t": {"0": 20}}, None]}
    assert cw.offsets(9) is None
    assert cw.commit_time(1) is not None and cw.commit_time(2) is None
    with pytest.raises(TimeoutError, match="batch 2 to be committed.*last committed 1"):
        cw.wait_for_commit(2, timeout=0.3)
    (tmp_path / "commits" / "2").write_text("v1\n{}")
    cw.wait_for_commit(2, timeout=1)
    assert cw.uncommitted_batch() is None


def test_a_connect_servers_sessions_are_on_the_timeline(tmp_path):
    from pytest_streamchaos.observe.progress import SparkProgress

    log = tmp_path / "eventlog_v2_app-1" / "events_1_app-1"
    log.parent.mkdir()
    rows = [{"Event": "SparkListenerApplicationStart", "App ID": "app-1", "Timestamp": 1_000_000},
            {"Event": "org.apache.spark.sql.connect.service.SparkListenerConnectSessionStarted",
             "sessionId": "s-1", "userId": "root", "eventTime": 1_002_000},
            {"Event": "org.apache.spark.sql.connect.service.SparkListenerConnectSessionClosed",
             "sessionId": "s-1", "userId": "root", "eventTime": 1_009_500}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    progress = SparkProgress(tmp_path)
    progress.poll()
    sessions = [(e.kind, e.t, e.detail["session_id"]) for e in progress.timeline if e.target == "connect-session"]
    assert sessions == [("connect_session_started", 1002.0, "s-1"), ("connect_session_closed", 1009.5, "s-1")]
