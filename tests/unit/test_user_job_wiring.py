"""Pure pieces of running a user's own job: argv placeholders, seeds, finding the checkpoint,
reading the file sink's committed output, merging several outputs / inputs, progress estimates."""

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_streamchaos.observe.checkpoints import find_checkpoints, paths_in
from pytest_streamchaos.observe.file_sink import FileSinkCollector, row_ids
from pytest_streamchaos.observe.from_progress import outputs_from_progress
from pytest_streamchaos.observe.outputs import key_ids
from pytest_streamchaos.records import OutputRecords, SentRecords, concat_outputs, join_sent
from pytest_streamchaos.runner import check_args


def test_args_placeholders_are_checked_before_anything_starts() -> None:
    check_args(["{bootstrap_servers}", "subscribe", "{input_topic}", "--out={workdir}/x", "{{literal}}"])
    with pytest.raises(ValueError, match=r"\{bootstrap\} in .* is not a placeholder.*\{bootstrap_servers\}"):
        check_args(["{bootstrap}"])


def _checkpoint(d: Path, qid: str) -> Path:
    (d / "offsets").mkdir(parents=True)
    (d / "metadata").write_text(json.dumps({"id": qid}) + "\n")
    return d


def test_find_checkpoints_by_query_id_under_the_working_dir(tmp_path: Path) -> None:
    a = _checkpoint(tmp_path / "chk-point-dir", "q-a")
    b = _checkpoint(tmp_path / "local" / "temporary-1234", "q-b")  # a query with no checkpoint location
    _checkpoint(tmp_path / "local" / "blockmgr-1" / "x", "never-looked-at")
    (tmp_path / "output" / "_spark_metadata").mkdir(parents=True)
    found = find_checkpoints([tmp_path])
    assert {q: Path(str(p)).resolve() for q, p in found.items()} == {"q-a": a.resolve(), "q-b": b.resolve()}
    assert find_checkpoints([tmp_path / "missing"]) == {}


def test_paths_in_args_are_checkpoint_candidates(tmp_path: Path) -> None:
    assert paths_in(["a", "/data/chk", "file:///other/chk", "x,/y/z", "hdfs://127.0.0.1:9820/chk/"], tmp_path) == [
        "/data/chk", "/other/chk", "/y/z", "hdfs://127.0.0.1:9820/chk"]


def _commit(sink: Path, batch: int, files: list[str], compact: bool = False) -> None:
    meta = sink / "_spark_metadata"
    meta.mkdir(parents=True, exist_ok=True)
    lines = ["v1", *(json.dumps({"path": f"file://{sink / f}", "size": 1, "isDir": False, "action": "add"})
                     for f in files)]
    (meta / (f"{batch}.compact" if compact else str(batch))).write_text("\n".join(lines) + "\n")


def test_file_sink_counts_only_files_its_metadata_log_committed(tmp_path: Path) -> None:
    sink = tmp_path / "output"
    sink.mkdir()
    (sink / "part-0.json").write_text('{"InvoiceNumber": "1", "ItemCode": "a"}\n{"InvoiceNumber": "1"}\n')
    (sink / "part-1.json").write_text('{"InvoiceNumber": "2"}\n')
    (sink / "part-9.json").write_text('{"InvoiceNumber": "99"}\n')  # a failed attempt's file: not output
    (sink / "part-2.csv").write_text("InvoiceNumber,x\n3,a\n")
    _commit(sink, 0, ["part-0.json"])
    _commit(sink, 1, ["part-0.json", "part-1.json"], compact=True)  # a compaction repeats earlier entries
    _commit(sink, 2, ["part-2.csv"])
    c = FileSinkCollector(sink, "InvoiceNumber")
    c.poll()
    out = c.outputs()
    assert sorted(out.ids.tolist()) == [1, 1, 2, 3]
    assert c.count == 4 and c.ids_seen == 3 and not c.has_seen([99])
    assert c.malformed == 0
    assert out.arrival_ts[0] == pytest.approx((sink / "_spark_metadata" / "0").stat().st_mtime)


def test_row_ids_paths_and_callables() -> None:
    assert row_ids({"value": {"ids": [1, "2"]}}, "value.ids") == [1, 2]
    assert row_ids({"value": '{"ids": [3]}'}, "value.ids") == [3]  # a JSON string column
    assert row_ids({"n": 4.0}, "n") == [4]
    assert row_ids({"a": 1}, lambda row, _: [row["a"] * 10]) == [10]
    with pytest.raises(KeyError):
        row_ids({"a": 1}, "b")
    with pytest.raises(ValueError):
        row_ids({"a": "x"}, "a")


def test_key_ids_reads_the_message_key() -> None:
    assert key_ids(b"{}", b"17") == [17]
    assert key_ids(b"{}", b"[1, 2]") == [1, 2]
    with pytest.raises(ValueError):
        key_ids(b"{}", None)


def test_concat_outputs_merges_by_arrival() -> None:
    a = OutputRecords.from_lists([1.0, 3.0], [[1], [2, 3]], topic=np.array(["a", "a"], dtype=object))
    b = OutputRecords.from_lists([2.0], [[9]])
    m = concat_outputs([a, b])
    assert m.arrival_ts.tolist() == [1.0, 2.0, 3.0]
    assert [m.ids[m.offsets[i]:m.offsets[i + 1]].tolist() for i in range(3)] == [[1], [9], [2, 3]]
    assert m.topic.tolist() == ["a", None, "a"]


def _sent(ids, send, keys=None) -> SentRecords:
    ids = np.asarray(ids, np.int64)
    return SentRecords(ids=ids, keys=np.asarray(keys if keys is not None else ids % 3, np.int64),
                       event_ts=np.asarray(send, np.float64), send_ts=np.asarray(send, np.float64))


def test_join_sent_keeps_ids_acked_on_every_topic_with_the_later_send_time() -> None:
    j = join_sent([_sent([0, 1, 2, 3], [1.0, 2.0, 3.0, 4.0]), _sent([0, 2, 3], [1.5, 2.5, 5.0])])
    assert j.ids.tolist() == [0, 2, 3]
    assert j.send_ts.tolist() == [1.5, 3.0, 5.0]


def test_outputs_from_progress_maps_processed_rows_to_batch_ends() -> None:
    sent = _sent(range(10), np.arange(10) * 0.1)
    batches = [{"numInputRows": 4, "t_end": 1.0}, {"numInputRows": 0, "t_end": 2.0},
               {"numInputRows": 6, "t_end": 3.0}]
    out = outputs_from_progress(sent, batches)
    assert out.ids.tolist() == list(range(10))
    assert out.arrival_ts.tolist() == [1.0] * 4 + [3.0] * 6
    joined = outputs_from_progress(sent, [{"numInputRows": 8, "t_end": 1.0}], inputs=2)
    assert joined.ids.tolist() == [0, 1, 2, 3]


def test_outputs_from_progress_follow_the_offsets_each_batch_read() -> None:
    """After a restart that skipped offsets 4..5 and replayed 6..7 (a new checkpoint, then a replay),
    the offset ranges say exactly which records each batch processed; ranks would not."""
    sent = _sent(range(10), np.arange(10) * 0.1)
    sent.partition, sent.offset = np.zeros(10, np.int64), np.arange(10, dtype=np.int64) + 100
    src = lambda lo, hi: {"sources": [{"startOffset": {"in": {"0": lo}}, "endOffset": {"in": {"0": hi}}}]}  # noqa: E731
    batches = [{"t_end": 1.0, **src(100, 104)}, {"t_end": 2.0, **src(106, 108)}, {"t_end": 3.0, **src(106, 110)}]
    out = outputs_from_progress(sent, batches, topic="in")
    assert out.ids.tolist() == [0, 1, 2, 3, 6, 7, 6, 7, 8, 9]
    assert out.arrival_ts.tolist() == [1.0] * 4 + [2.0] * 2 + [3.0] * 4
