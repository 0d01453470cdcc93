"""Collect the output of a job that writes files: Spark's file sink (``writeStream.format("json" |
"csv" | "parquet")``) or batch writes from ``foreachBatch`` (``df.write.parquet(...)``).

The file sink's exactly-once contract is its metadata log: ``<path>/_spark_metadata/<batch>`` (and
every ``compactInterval`` batches ``<batch>.compact``, which repeats all earlier entries) lists the
files a committed batch added. Files in the directory that no committed batch lists -- written by a
task attempt that failed or by a batch the driver did not commit before it died -- are not output:
Spark's own readers of that directory ignore them too. So for a directory with a metadata log this
collector reads only listed files, and an output *arrives* when its batch's log file was written (its
mtime: when the commit happened, not when we happened to look).

A directory without a metadata log is read as batch writes leave it (:mod:`.committed_files`): the
data files that Hadoop's commit protocol committed (a ``_SUCCESS`` marker in their directory or one
above it, nothing under ``_temporary``), arriving when their marker was written. A batch replayed
after a driver kill shows as the duplicates a reader of the directory sees; files a replay overwrote
stop counting (:attr:`FileSinkCollector.overwritten`). Partition directories (``batch=3``) add their
column to each row, as Spark's readers do.

Rows are read as dicts (JSON lines, CSV with a header, Parquet through pyarrow); the input ids of a
row come from ``ids``: a field path (``"InvoiceNumber"``, ``"value.ids"``) or a callable
``(row: dict, None) -> ids`` (:mod:`.row_output`, which a Delta table's reader shares). The directory
may be on the local disk or on HDFS (:mod:`.storage`: fsspec's WebHDFS client).
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any
from urllib.parse import unquote, urlparse

from pytest_streamchaos.observe.committed_files import CommittedFiles
from pytest_streamchaos.observe.row_output import IdSpec, RowOutput, row_ids
from pytest_streamchaos.observe.storage import Place, locate


class FileSinkCollector(RowOutput):
    """Poll a directory of a job's files and read every committed file: the files its metadata log
    lists (the file sink), else the files batch writes committed (see the module docstring). A data file
    is a unit of :class:`~.row_output.RowOutput` (the query interface a run uses)."""

    def __init__(self, path: str | os.PathLike | Place, ids: IdSpec, name: str | None = None,
                 poll_s: float = 0.2, what: str | None = None) -> None:
        super().__init__(name or f"file:{path}", ids, poll_s, what)
        self.place = path if isinstance(path, Place) else locate(path)
        self._batches: set[int] = set()
        #: ``metadata`` (the file sink's log) or ``commits`` (batch writes' ``_SUCCESS``); None: not known yet
        self.mode: str | None = None
        self._committed = CommittedFiles(self.place)

    def rows(self) -> list[dict[str, Any]]:
        """Every row of the files that are output now, in the order they became visible, with their
        partition columns (what a reader of the directory sees: a reference run compares it)."""
        with self._lock:
            files = sorted(self._files.items(), key=lambda kv: kv[1][0])
        out: list[dict[str, Any]] = []
        for path, _ in files:
            partition = _partition_values(self.place.path, path)
            out += [{**partition, **row} if isinstance(row, dict) else {"value": row}
                    for row in read_rows(self.place.at(path))]
        return out

    # -- reading -------------------------------------------------------------------------------
    def poll(self, fresh: bool = False) -> None:
        """Read the data files committed since the last poll (``fresh``: list every directory again)."""
        if self.mode != "metadata" and self.place.child("_spark_metadata").is_dir():
            self.mode = "metadata"
        if self.mode == "metadata":
            self._poll_metadata()
        else:
            self._poll_commits(fresh)

    def _poll_commits(self, fresh: bool) -> None:
        found = self._committed.scan(fresh)
        if found:
            self.mode = "commits"
        for path in [p for p in self._files if p not in found]:
            self._forget(path)
        for path in sorted(found, key=lambda p: (found[p], p)):
            if not self._counts(path):
                self._read_data(self.place.at(path), found[path])

    def _poll_metadata(self) -> None:
        for batch, log_file in self._new_log_files():
            t = log_file.mtime()
            text = log_file.read_text()
            if t is None or text is None:
                continue  # listed a moment ago, gone now (compacted away): the next poll sees the compact file
            for data in _listed_files(text):
                if not self._counts(data):
                    self._read_data(self.place.at(data), t)
            self._batches.add(batch)

    def _new_log_files(self) -> list[tuple[int, Place]]:
        meta = self.place.child("_spark_metadata")
        out = []
        for n in meta.names():
            base = n.removesuffix(".compact")
            if base.isdigit() and int(base) not in self._batches:
                out.append((int(base), meta.child(n)))
        return sorted(out, key=lambda x: x[0])

    def _read_data(self, where: Place, t: float) -> None:
        try:
            rows = read_rows(where)
        except Exception as e:
            self._unreadable(where.path, t, str(e))  # once: the error is the finding
            return
        self._record(where.path, t, rows, _partition_values(self.place.path, where.path))


def columns_of(where: Place) -> list[str]:
    """The columns of the first committed data file under ``where`` (metadata-listed or under a
    ``_SUCCESS``), [] when there is none yet: what a test can name as the id field."""
    c = FileSinkCollector(where, lambda row, _: [])
    c.poll(fresh=True)
    for path in c._files:
        rows = read_rows(where.at(path))
        if rows:
            return list({**_partition_values(where.path, path), **rows[0]})
    return []


def _partition_values(root: str, path: str) -> dict[str, str]:
    """The ``column=value`` directories between ``root`` and the file ``path`` (``batch=3``)."""
    rel = path[len(root.rstrip("/")) + 1:] if path.startswith(root.rstrip("/") + "/") else ""
    parts = (p.split("=", 1) for p in rel.split("/")[:-1] if "=" in p)
    return {k: unquote(v) for k, v in parts}


def _listed_files(log_text: str) -> list[str]:
    """The data files a metadata log file adds (``action: add``), as paths on its filesystem (the
    ``file:`` or ``hdfs://host:port`` of the URL Spark wrote taken off)."""
    out = []
    for line in log_text.splitlines()[1:]:  # the first line is the log format version, "v1"
        if not line.strip():
            continue
        entry = json.loads(line)
        if entry.get("action", "add") == "add" and not entry.get("isDir"):
            url = urlparse(str(entry["path"]))
            out.append(unquote(url.path) if url.scheme else str(entry["path"]))
    return out


def read_rows(where: Place | str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of one data file of the sink, by its extension (``.json``, ``.csv``, ``.parquet``;
    compressed variants such as ``.json.gz`` are read too)."""
    place = where if isinstance(where, Place) else locate(where)
    name = place.path.rsplit("/", 1)[-1]
    raw = place.read_bytes()
    if raw is None:
        raise FileNotFoundError(place.path)
    if ".parquet" in name:
        import pyarrow.parquet as pq

        return pq.read_table(io.BytesIO(raw)).to_pylist()
    if name.endswith(".gz"):
        import gzip

        raw = gzip.decompress(raw)
    text = raw.decode()
    if ".csv" in name:
        return list(csv.DictReader(io.StringIO(text)))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


__all__ = ["FileSinkCollector", "IdSpec", "columns_of", "read_rows", "row_ids"]
