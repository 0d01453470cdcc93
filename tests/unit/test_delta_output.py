"""Delta Lake as an output (issue 38, point 1): the reader (``observe/delta.py``: rows per committed version,
final rows) and the collector (``observe/delta_sink.py``: a replay's second version is duplicates, a
rewrite is not, arrival is the commit's time, an earlier run's table is not this run's output), on tables
with a known answer written by delta-rs itself (``write_deltalake``, its MERGE): no Spark."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from pytest_streamchaos.observe import delta
from pytest_streamchaos.observe.delta_sink import DeltaSinkCollector

SCHEMA = pa.schema([("txn_id", pa.int64()), ("sku", pa.string()), ("qty", pa.int64())])


def rows(ids: list[int], sku: str = "a", qty: int = 1) -> pa.Table:
    return pa.table({"txn_id": ids, "sku": [sku] * len(ids), "qty": [qty] * len(ids)}, schema=SCHEMA)


def append(table: Path, ids: list[int], **kw: object) -> None:
    write_deltalake(str(table), rows(ids, **kw), mode="append")  # type: ignore[arg-type]


def add_qty(table: Path, sku: str, qty: int) -> None:
    """An additive MERGE (``qty = t.qty + s.qty``) of one SKU: copy-on-write, the file rewritten."""
    src = pa.table({"sku": [sku], "qty": [qty]})
    (DeltaTable(str(table)).merge(src, "t.sku = s.sku", source_alias="s", target_alias="t")
     .when_matched_update({"qty": "t.qty + s.qty"}).execute())


def ids_of(c: DeltaSinkCollector) -> list[int]:
    return sorted(int(i) for i in c.outputs().ids)


# -- the reader -----------------------------------------------------------------------------------------------

def test_each_version_gives_the_rows_it_added_and_a_replayed_append_is_a_version_of_its_own(tmp_path: Path):
    t = tmp_path / "bronze"
    append(t, [0, 1, 2])
    append(t, [3, 4])
    append(t, [3, 4])  # a replayed batch appended again
    changes = delta.version_changes(t)
    assert [c.version for c in changes] == [0, 1, 2]
    assert [sorted(r["txn_id"] for r in delta.rows(c.appended())) for c in changes] == [[0, 1, 2], [3, 4], [3, 4]]
    assert all(c.removed.num_rows == 0 and c.operation == "WRITE" for c in changes)
    stamps = [c.committed_at for c in changes]
    assert stamps == sorted(stamps) and abs(stamps[-1] - time.time()) < 60
    assert sorted(r["txn_id"] for r in delta.rows(delta.final_rows(t))) == [0, 1, 2, 3, 3, 4, 4]
    assert delta.latest_version(t) == 2 and delta.columns(t) == ["txn_id", "sku", "qty"]


def test_a_merge_that_rewrites_a_file_appends_only_the_changed_row_and_final_rows_hold_the_last_value(tmp_path):
    t = tmp_path / "stock"
    write_deltalake(str(t), pa.table({"sku": ["a", "b", "c"], "qty": [1, 2, 3]}))
    add_qty(t, "b", 5)
    merge = delta.version_changes(t, start=1)[0]
    assert merge.operation == "MERGE" and merge.removed.num_rows == 3 and merge.added.num_rows == 3
    assert delta.rows(merge.appended()) == [{"sku": "b", "qty": 7}]
    assert sorted((r["sku"], r["qty"]) for r in delta.rows(delta.final_rows(t))) == [("a", 1), ("b", 7), ("c", 3)]
    assert sorted((r["sku"], r["qty"]) for r in delta.rows(delta.final_rows(t, version=0))) == [
        ("a", 1), ("b", 2), ("c", 3)]
    # since: what the versions after 0 left, not what the table held before
    assert delta.rows(delta.final_rows(t, since=0)) == [{"sku": "b", "qty": 7}]


def test_partition_columns_are_in_the_rows(tmp_path: Path):
    t = tmp_path / "parted"
    write_deltalake(str(t), rows([1, 2], sku="x y"), partition_by=["sku"])
    (change,) = delta.version_changes(t)
    assert sorted((r["txn_id"], r["sku"]) for r in delta.rows(change.added)) == [(1, "x y"), (2, "x y")]


def test_a_path_that_is_not_a_table_says_so_and_names_the_fix(tmp_path: Path):
    (tmp_path / "part-0.parquet").write_bytes(b"x")
    assert not delta.is_table(tmp_path) and delta.latest_version(tmp_path) is None
    with pytest.raises(delta.DeltaReadError, match=r"is not a Delta table .*format\(\"delta\"\)"):
        delta.final_rows(tmp_path)


# -- the collector --------------------------------------------------------------------------------------------

def test_the_collector_counts_a_replayed_append_as_duplicates_stamped_at_its_commit(tmp_path: Path):
    t = tmp_path / "bronze"
    c = DeltaSinkCollector(t, "txn_id")
    c.start()
    try:
        append(t, [0, 1, 2])
        c.poll()
        assert ids_of(c) == [0, 1, 2] and c.count == 3 and c.ids_seen == 3
        append(t, [2, 3])  # batch 1, then its replay
        append(t, [2, 3])
    finally:
        c.stop()
    assert ids_of(c) == [0, 1, 2, 2, 2, 3, 3]
    commits = {ch.version: ch.committed_at for ch in delta.version_changes(t, removed=False)}
    out = c.outputs()
    assert sorted(set(out.arrival_ts.tolist())) == sorted(commits.values())
    assert c.last_written == c.last_arrival == commits[2]
    assert c.versions_read == 3 and c.since is None and c.failure is None and not c.notes


def test_rows_a_merge_rewrites_keep_their_first_arrival_and_are_not_duplicates(tmp_path: Path):
    t = tmp_path / "silver"
    c = DeltaSinkCollector(t, "txn_id")
    append(t, [0, 1], sku="a")
    c.poll()
    first = c.outputs().arrival_ts.max()
    time.sleep(0.02)  # the MERGE's commit is stamped later than the first write's
    add_qty(t, "a", 1)
    c.poll()
    assert ids_of(c) == [0, 1] and c.overwritten == 1 and c.versions_read == 2
    assert c.outputs().arrival_ts.tolist() == [first, first], "unchanged ids keep the time they first showed"


def test_a_table_an_earlier_run_left_is_read_from_the_versions_after_it_saying_so(tmp_path: Path):
    t = tmp_path / "bronze"
    append(t, [0, 1, 2])  # the earlier run's
    c = DeltaSinkCollector(t, "txn_id").start()
    try:
        append(t, [0, 1])  # this run's ids start at 0 again
    finally:
        c.stop()
    assert ids_of(c) == [0, 1] and c.since == 0
    assert c.notes and "existed before the run (version 0)" in c.notes[0]


def test_an_id_column_the_table_lacks_stops_the_run_naming_the_columns(tmp_path: Path):
    t = tmp_path / "bronze"
    append(t, [0])
    c = DeltaSinkCollector(tmp_path / "other", "order_id")
    c.poll()
    assert c.failure is None  # no table yet: nothing to say
    c = DeltaSinkCollector(t, "order_id")
    c.poll()
    assert isinstance(c.failure, delta.DeltaReadError)
    assert "has no column 'order_id' (its columns: txn_id, sku, qty)" in str(c.failure)


def test_a_directory_another_writer_commits_to_is_refused_naming_the_file_output(tmp_path: Path):
    out = tmp_path / "lake"
    out.mkdir()
    (out / "_SUCCESS").write_bytes(b"")
    c = DeltaSinkCollector(out, "txn_id")
    c.poll()
    assert isinstance(c.failure, delta.DeltaReadError)
    assert f"outputs={{'file:{out}': ...}}" in str(c.failure)


def test_a_path_that_never_became_a_table_is_the_failure_after_the_run(tmp_path: Path):
    c = DeltaSinkCollector(tmp_path / "nothing", "txn_id").start()
    c.stop()
    assert isinstance(c.failure, delta.DeltaReadError) and "is not a Delta table after the run" in str(c.failure)


def test_a_table_with_deletion_vectors_is_refused_naming_the_property(tmp_path: Path):
    t = tmp_path / "dv"
    write_deltalake(str(t), rows([1]), configuration={"delta.enableDeletionVectors": "true"})
    if "deletionVectors" not in (DeltaTable(str(t)).protocol().reader_features or []):
        pytest.skip("this deltalake does not turn the deletionVectors reader feature on")
    c = DeltaSinkCollector(t, "txn_id")
    c.poll()
    assert isinstance(c.failure, delta.DeltaReadError) and "delta.enableDeletionVectors" in str(c.failure)


def test_a_table_gives_the_reference_run_its_final_rows_and_one_without_ids_is_read_too(tmp_path: Path):
    from pytest_streamchaos.observe.outputs import NO_IDS, collector_for
    from pytest_streamchaos.observe.storage import locate

    t = tmp_path / "stock"
    write_deltalake(str(t), pa.table({"sku": ["a"], "qty": [1]}))  # an earlier run's version
    c = collector_for(f"delta:{t}", NO_IDS, "unused:9092", locate(str(t))).start()
    try:
        write_deltalake(str(t), pa.table({"sku": ["b", "c"], "qty": [2, 3]}), mode="append")
        add_qty(t, "b", 5)
    finally:
        c.stop()
    assert isinstance(c, DeltaSinkCollector) and c.table and c.failure is None
    assert c.count == 2 and c.ids_seen == 0  # rows read, none names an input
    assert sorted((r["sku"], r["qty"]) for r in c.rows()) == [("b", 7), ("c", 3)]
