"""Files written from ``foreachBatch`` with the batch ``DataFrameWriter`` (issue 27, item 7): the
collector reads what Hadoop's commit protocol committed (``_SUCCESS``), never ``_temporary``, and a
replayed batch shows as the duplicates a reader of the directory sees. Layouts as Spark leaves them,
written with pyarrow."""

import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pytest_streamchaos.observe.file_sink import FileSinkCollector, columns_of
from pytest_streamchaos.observe.storage import locate


def part(d: Path, ids: list[int], name: str | None = None, **cols: list) -> Path:
    """A part file of ``ids`` (column ``id``) in ``d``, as a task writes it."""
    d.mkdir(parents=True, exist_ok=True)
    f = d / (name or f"part-{len(list(d.glob('part-*'))):05d}-{os.urandom(4).hex()}-c000.snappy.parquet")
    pq.write_table(pa.table({"id": ids, **cols}), f)
    return f


def commit(d: Path) -> None:
    """The job commit's marker (and its checksum, which the reader must skip)."""
    (d / "_SUCCESS").write_bytes(b"")
    (d / "._SUCCESS.crc").write_bytes(b"crc")


def ids_of(c: FileSinkCollector) -> list[int]:
    return sorted(int(i) for i in c.outputs().ids)


def test_batch_directories_count_once_committed_never_under_temporary(tmp_path: Path) -> None:
    out = tmp_path / "out"
    part(out / "batch=0", [1, 2])
    part(out / "batch=0", [3])
    commit(out / "batch=0")
    part(out / "batch=1", [4, 5])  # moved in, not yet committed: its marker is not written
    part(out / "batch=2" / "_temporary" / "0" / "task_1", [6])  # a task's attempt, never output
    c = FileSinkCollector(out, "id")
    c.poll()
    assert c.mode == "commits"
    assert ids_of(c) == [1, 2, 3]
    commit(out / "batch=1")
    c.poll()
    assert ids_of(c) == [1, 2, 3, 4, 5]
    assert c.count == 5 and c.ids_seen == 5 and c.errors == []


def test_a_replayed_batch_appending_again_is_seen_as_duplicates(tmp_path: Path) -> None:
    """The driver died after the batch's write but before Spark committed the batch: the replay
    appends the same rows as new part files (or into a new directory)."""
    out = tmp_path / "out"
    part(out / "batch=3", [7, 8])
    commit(out / "batch=3")
    c = FileSinkCollector(out, "id")
    c.poll()
    part(out / "batch=3", [7, 8])  # the replay's append: new file names, the marker written again
    commit(out / "batch=3")
    part(out / "batch=4", [8])  # and the next batch re-emits one of them elsewhere
    commit(out / "batch=4")
    c.poll()
    assert ids_of(c) == [7, 7, 8, 8, 8]
    assert c.ids_seen == 2


def test_partition_by_marks_the_root_and_partition_columns_join_the_rows(tmp_path: Path) -> None:
    """``df.write.mode("append").partitionBy("batch_id").parquet(out)``: one marker at the root,
    data in ``batch_id=N`` directories (the column is in the path, not in the files)."""
    out = tmp_path / "out"
    part(out / "batch_id=0", [1], key=["k1"])
    commit(out)
    c = FileSinkCollector(out, lambda row, _: [int(row["id"]) * 100 + int(row["batch_id"])])
    c.poll()
    assert ids_of(c) == [100]
    part(out / "batch_id=1", [2], key=["k2"])  # the next append
    commit(out)
    c.poll()
    assert ids_of(c) == [100, 201]


def test_a_file_moved_in_after_the_last_marker_arrives_when_seen(tmp_path: Path) -> None:
    out = tmp_path / "out"
    commit(out) if out.mkdir() is None else None
    old = time.time() - 100
    os.utime(out / "_SUCCESS", (old, old))
    part(out, [9])
    c = FileSinkCollector(out, "id")
    before = time.time()
    c.poll()
    assert ids_of(c) == [9]
    assert c.outputs().arrival_ts[0] >= before, "newer than its marker: visible from when it was seen, not before"


def test_an_overwritten_batch_directory_is_not_a_duplicate(tmp_path: Path) -> None:
    """``mode("overwrite")`` per batch directory makes a replay idempotent: the first files are gone."""
    out = tmp_path / "out"
    first = part(out / "batch=5", [10, 11])
    commit(out / "batch=5")
    c = FileSinkCollector(out, "id")
    c.poll()
    shown = c.outputs().arrival_ts.min()
    first.unlink()
    (out / "batch=5" / "_SUCCESS").unlink()
    part(out / "batch=5", [10, 11])
    commit(out / "batch=5")
    c.poll()
    assert ids_of(c) == [10, 11] and c.overwritten == 1
    assert c.outputs().arrival_ts.min() == shown, "the ids showed at the first write"


def test_a_file_sink_directory_keeps_its_metadata_log_reading(tmp_path: Path) -> None:
    """A ``_spark_metadata`` log wins: files it does not list are not output, even beside a marker."""
    out = tmp_path / "out"
    listed = part(out, [1])
    part(out, [2])  # written by a failed attempt, listed by no batch
    commit(out)
    (out / "_spark_metadata").mkdir()
    (out / "_spark_metadata" / "0").write_text(f'v1\n{{"path":"file://{listed}","action":"add"}}\n')
    c = FileSinkCollector(out, "id")
    c.poll()
    assert c.mode == "metadata" and ids_of(c) == [1]


def test_a_committed_directory_on_hdfs_style_listing_is_read_once(tmp_path: Path) -> None:
    """A finished batch directory is listed once: later polls reuse its listing while its mtime
    stays (one listing of the root per poll, not one per batch, matters on WebHDFS)."""
    out = tmp_path / "out"
    for b in range(3):
        part(out / f"batch={b}", [b])
        commit(out / f"batch={b}")
    c = FileSinkCollector(out, "id")
    c.poll()
    calls: list[str] = []
    real = type(c.place).entries

    def counting(self):
        calls.append(self.path)
        return real(self)

    type(c.place).entries = counting
    try:
        c.poll()
    finally:
        type(c.place).entries = real
    assert calls == [str(out)]
    assert ids_of(c) == [0, 1, 2]


def test_columns_of_a_committed_write_name_the_id_field_candidates(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert columns_of(locate(out)) == []
    part(out / "batch=0", [1], url=["/a"])
    assert columns_of(locate(out)) == [], "not committed yet"
    commit(out / "batch=0")
    assert columns_of(locate(out)) == ["batch", "id", "url"]


def test_the_rows_of_what_is_output_now_with_partition_columns(tmp_path: Path) -> None:
    """What a reference run compares: every committed row, a replay's append twice, the partition column
    added, nothing of an uncommitted directory; an output without ids reads the same (its ids unread)."""
    out = tmp_path / "out"
    part(out / "batch=0", [1, 2], v=["a", "b"])
    commit(out / "batch=0")
    part(out / "batch=1", [3], v=["c"])  # not committed
    c = FileSinkCollector(out, lambda row, _: [])
    c.poll()
    assert sorted((r["batch"], r["id"], r["v"]) for r in c.rows()) == [("0", 1, "a"), ("0", 2, "b")]
    part(out / "batch=0", [1, 2], v=["a", "b"])  # a replay appends again
    commit(out / "batch=0")
    c.poll(fresh=True)
    assert sorted(r["id"] for r in c.rows()) == [1, 1, 2, 2] and c.ids_seen == 0
