"""A checkpoint whose path the job builds at run time (in a helper module, from its environment) is found
from Spark's own driver log line, with nothing read from the job's code; and the query's state store is
read from its checkpoint (issue 38, points 3 and 4). No JVM: the log lines and checkpoints are as Spark
3.5 and 4.2 write them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from pytest_streamchaos.faults.gate_moments import no_state_commit
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher, logged_checkpoints
from pytest_streamchaos.observe.storage import RunStorage
from pytest_streamchaos.runner.phases.tracking import CheckpointTracker, tracked_query

#: the driver log around a query's start (Spark 4.2's runtime package; 3.5's is one level up)
LOG = """13:02:11.412 INFO SparkContext: Running Spark version 4.2.0
13:02:19.006 INFO ResolveWriteToStream: Checkpoint root {root} resolved to file:{root}.
13:02:19.101 WARN ResolveWriteToStream: spark.sql.adaptive.enabled is not supported in streaming DataFrames
"""


def test_spark_says_where_it_resolved_each_querys_checkpoint():
    text = LOG.format(root="/tmp/lake/_checkpoints/dedupe") + (
        "13:03:00.000 INFO ResolveWriteToStream: Checkpoint root chk resolved to "
        "hdfs://127.0.0.1:9000/user/me/chk.\n"
        "13:03:01.000 INFO ResolveWriteToStream: Checkpoint root /tmp/lake/_checkpoints/dedupe resolved to "
        "file:/tmp/lake/_checkpoints/dedupe.\n")
    assert logged_checkpoints(text) == ["file:/tmp/lake/_checkpoints/dedupe", "hdfs://127.0.0.1:9000/user/me/chk"]
    assert logged_checkpoints("no such line\n") == []


def make_checkpoint(root: Path, qid: str) -> None:
    (root / "offsets").mkdir(parents=True)
    (root / "metadata").write_text(json.dumps({"id": qid}) + "\n")


def progress_of(*qids: str, batches: list | None = None) -> SimpleNamespace:
    return SimpleNamespace(timeline=[SimpleNamespace(kind="query_started", detail={"id": q}) for q in qids],
                           batches=batches or [], writes=[])


def test_the_tracker_follows_the_driver_logs_line_to_a_checkpoint_no_root_holds(tmp_path: Path):
    hidden, log = tmp_path / "lake" / "_checkpoints" / "dedupe", tmp_path / "driver.log"
    make_checkpoint(hidden, "q-1")
    whole = LOG.format(root=hidden)
    log.write_text(whole[:whole.index(" resolved to") + 20])  # the line with the path not written through yet
    ctx = SimpleNamespace(storage=RunStorage.local(tmp_path / "run"), phases={"warmup_end": 1.0})
    watcher = CheckpointWatcher(tmp_path / "run" / "checkpoint")
    tracker = CheckpointTracker(ctx, watcher, [], SimpleNamespace(log_path=log))
    tracker.find(progress_of("q-1"))
    assert not tracker.found
    log.write_text(whole)
    tracker.find(progress_of("q-1"))
    assert tracker.found and tracker.checkpoint_dir == str(hidden)
    assert [str(r) for r in tracker.roots] == [str(hidden)]
    tracker.find(progress_of("q-1"))  # read once: nothing new, nothing added
    assert len(tracker.roots) == 1


def write_state(cp: Path, provider: str, names: list[str]) -> None:
    (cp / "offsets").mkdir(parents=True)
    conf = {"spark.sql.streaming.stateStore.providerClass": provider, "spark.sql.shuffle.partitions": "2"}
    (cp / "offsets" / "3").write_text("v1\n" + json.dumps({"batchWatermarkMs": 0, "conf": conf}) + "\n{}\n")
    for name in names:
        f = cp / "state" / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")


def test_the_state_store_is_read_from_the_checkpoint(tmp_path: Path):
    rocksdb = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    write_state(tmp_path / "a", rocksdb, ["0/0/1.changelog", "0/0/2.changelog", "0/1/2.changelog", "0/0/SSTs/x.sst",
                                          "0/0/_metadata/schema", "0/_metadata/metadata"])
    store = CheckpointWatcher(tmp_path / "a").state_store()
    assert store is not None and (store.provider, store.files, store.format_v2) == (rocksdb, ("changelog",), False)
    assert store.describe() == "RocksDB, changelog checkpointing (versions written as .changelog)"
    write_state(tmp_path / "b", rocksdb, ["0/0/4_7c1e0a52-1b1f-4c60-9d3e-0a1b2c3d4e5f.zip"])
    store = CheckpointWatcher(tmp_path / "b").state_store()
    assert store is not None and store.format_v2 and store.files == ("zip",)
    assert store.describe() == "RocksDB, checkpoint format v2 (versions written as .zip)"
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    write_state(tmp_path / "c", hdfs, ["0/0/1.delta", "0/0/10.snapshot", "1/3/left-keyToNumValues/2.delta"])
    store = CheckpointWatcher(tmp_path / "c").state_store()
    assert store is not None and store.files == ("delta", "snapshot")
    assert store.describe().startswith("Spark's default, HDFS-backed")
    write_state(tmp_path / "d", hdfs, [])
    assert CheckpointWatcher(tmp_path / "d").state_store() is None  # a stateless query


def test_a_state_commit_that_never_comes_is_explained_from_the_checkpoint(tmp_path: Path):
    rocksdb = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    write_state(tmp_path / "a", rocksdb, ["0/0/1.changelog"])
    (tmp_path / "a" / "commits").mkdir()
    (tmp_path / "a" / "commits" / "3").write_text("v1\n{}\n")
    assert no_state_commit(CheckpointWatcher(tmp_path / "a")) is None  # the gate holds its commits
    write_state(tmp_path / "b", rocksdb, [])
    (tmp_path / "b" / "commits").mkdir()
    (tmp_path / "b" / "commits" / "3").write_text("v1\n{}\n")
    assert no_state_commit(CheckpointWatcher(tmp_path / "b")).startswith("the query keeps no state")
    write_state(tmp_path / "c", "com.example.RemoteStateStoreProvider", ["0/0/5.parquet"])
    (tmp_path / "c" / "commits").mkdir()
    (tmp_path / "c" / "commits" / "3").write_text("v1\n{}\n")
    why = no_state_commit(CheckpointWatcher(tmp_path / "c"))
    assert why.startswith("the query's state store, com.example.RemoteStateStoreProvider, wrote no version file")


def test_the_tracked_query_is_the_one_whose_output_is_read_whichever_started_last(tmp_path: Path):
    # a job starts its Kafka query, then a console query (a temporary checkpoint): the aimed faults and the checkpoint
    # faults act on the Kafka query's checkpoint, not on the console query's (CI, 2026-11-29)
    kafka, console = tmp_path / "job" / "checkpoints" / "out", tmp_path / "job" / "local" / "temporary-9f2c"
    make_checkpoint(kafka, "q-kafka")
    make_checkpoint(console, "q-console")
    ctx = SimpleNamespace(storage=RunStorage.local(tmp_path / "run"), phases={"warmup_end": 1.0})
    tracker = CheckpointTracker(ctx, CheckpointWatcher(tmp_path / "run" / "checkpoint"), [tmp_path / "job"],
                                SimpleNamespace(log_path=tmp_path / "none.log"))
    tracker.find(progress_of("q-console"))
    assert tracker.checkpoint_dir == str(console), "the only query started so far"
    tracker.find(progress_of("q-console", "q-kafka"))
    assert tracker.checkpoint_dir == str(kafka)
    restarted = progress_of("q-console", "q-kafka", "q-kafka", "q-console")  # a restarted driver, the console last
    tracker.find(restarted)
    assert tracker.checkpoint_dir == str(kafka)


def test_a_query_with_an_unreadable_sink_is_passed_over_once_its_sink_is_known():
    found = {"a": "/job/chk/a", "b": "/job/chk/b"}
    assert tracked_query(["a", "b"], found, set()) == "b", "the latest started"
    assert tracked_query(["a", "b"], found, {"b"}) == "a", "b writes to the console"
    assert tracked_query(["a", "b"], found, {"a", "b"}) == "b", "none readable: the latest still"
    assert tracked_query(["a", "b"], {"a": "/job/chk/a"}, set()) == "a"
    assert tracked_query(["a"], {}, set()) is None
