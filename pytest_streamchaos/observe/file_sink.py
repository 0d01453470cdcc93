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
``(row: dict, None) -> ids``. The directory may be on the local disk or on HDFS (:mod:`.storage`:
fsspec's WebHDFS client).
"""

from __future__ import annotations

import csv
import io
import json
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from pytest_streamchaos.observe.committed_files import CommittedFiles
from pytest_streamchaos.observe.storage import Place, locate
from pytest_streamchaos.records import OutputRecords
from pytest_streamchaos.usercode import UserCodeError, name_of

IdSpec = str | Callable[[Any, Any], Sequence[int]]


class FileSinkCollector:
    """Poll a directory of a job's files and read every committed file: the files its metadata log
    lists (the file sink), else the files batch writes committed (see the module docstring).

    Has the query interface of :class:`~pytest_streamchaos.observe.collector.Collector` that a run
    uses (``start``, ``stop``, ``count``, ``ids_seen``, ``last_arrival``, ``outputs()``, ...). A
    callable ``ids`` that raises is the test's bug, not a malformed row: :attr:`failure` keeps the first
    (a :class:`~pytest_streamchaos.usercode.UserCodeError` naming it, ``what`` saying whose it is)."""

    def __init__(self, path: str | os.PathLike | Place, ids: IdSpec, name: str | None = None,
                 poll_s: float = 0.2, what: str | None = None) -> None:
        self.place = path if isinstance(path, Place) else locate(path)
        self.name = name or f"file:{path}"
        self._ids = ids
        self._what = what or f"outputs[{self.name!r}] id reader"
        self.failure: UserCodeError | None = None
        self._poll_s = poll_s
        self._files: dict[str, tuple[float, list[list[int]]]] = {}  #: data file -> (arrival, ids per row)
        self._batches: set[int] = set()
        self._seen: set[int] = set()
        #: ``metadata`` (the file sink's log) or ``commits`` (batch writes' ``_SUCCESS``); None: not known yet
        self.mode: str | None = None
        self._committed = CommittedFiles(self.place)
        #: input id -> when it first showed, for ids of files a later write overwrote
        self._first_shown: dict[int, float] = {}
        self.overwritten = 0  #: data files read and later deleted (a replayed batch overwrote its directory)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.malformed = 0
        self.malformed_samples: list[str] = []
        self.errors: list[str] = []
        self.lost_to_retention = 0
        self.retention_gaps: list[dict[str, Any]] = []
        self.last_arrival: float | None = None
        #: no write stamp a reader can trust (file times are the writer's and the storage's): None
        self.last_written: float | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FileSinkCollector:
        name = self.place.path.rstrip("/").rsplit("/", 1)[-1]
        self._thread = threading.Thread(target=self._run, name=f"streamchaos-files-{name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, drain_timeout: float = 10.0) -> bool:
        """Stop polling after one last full read of the log (or of every directory)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(drain_timeout)
        self.poll(fresh=True)
        return True

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.poll()
            except Exception as e:  # a broken file is a finding, not a crash of the run
                self._note_error(f"{type(e).__name__}: {e}")

    # -- state ---------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        with self._lock:
            return sum(len(rows) for _, rows in self._files.values())

    @property
    def ids_seen(self) -> int:
        return len(self._seen)

    def has_seen(self, ids: Any) -> bool:
        return all(int(i) in self._seen for i in np.atleast_1d(ids))

    def outputs(self) -> OutputRecords:
        """The rows of every file that is output now, at the time each became visible (ids that an
        overwritten file showed earlier keep that earlier time)."""
        with self._lock:
            arrival, ids = [], []
            for t, rows in self._files.values():
                for row in rows:
                    shown = [self._first_shown[i] for i in row if i in self._first_shown]
                    arrival.append(min([t, *shown]))
                    ids.append(list(row))
        order = np.argsort(np.asarray(arrival, dtype=np.float64), kind="stable")
        return OutputRecords.from_lists([arrival[i] for i in order], [ids[i] for i in order],
                                        topic=np.asarray([self.name] * len(arrival), dtype=object))

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
            if path not in self._files:
                self._read_data(self.place.at(path), found[path])

    def _forget(self, path: str) -> None:
        """A file read earlier is gone (its directory was overwritten): its rows no longer count."""
        with self._lock:
            t, rows = self._files.pop(path)
            for row in rows:
                for i in row:
                    self._first_shown[i] = min(self._first_shown.get(i, t), t)
        self.overwritten += 1

    def _poll_metadata(self) -> None:
        for batch, log_file in self._new_log_files():
            t = log_file.mtime()
            text = log_file.read_text()
            if t is None or text is None:
                continue  # listed a moment ago, gone now (compacted away): the next poll sees the compact file
            for data in _listed_files(text):
                if data not in self._files:
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
            self._note_error(f"cannot read {where.path.rsplit('/', 1)[-1]}: {e}")
            self._files[where.path] = (t, [])  # once: the error is the finding
            return
        partition = _partition_values(self.place.path, where.path)
        got: list[list[int]] = []
        for row in rows:
            if partition and isinstance(row, dict):
                row = {**partition, **row}
            try:
                got.append(self._row_ids(row))
            except UserCodeError as e:  # the test's reader failed: the run stops on the first
                self.failure = self.failure or e
            except (ValueError, KeyError, TypeError) as e:
                self.malformed += 1
                if len(self.malformed_samples) < 20:
                    self.malformed_samples.append(f"{row!r}: {e}")
        with self._lock:
            self._files[where.path] = (t, got)
        for ids in got:
            self._seen.update(ids)
        if got:
            self.last_arrival = max(self.last_arrival or 0.0, t)

    def _row_ids(self, row: Any) -> list[int]:
        if not callable(self._ids):
            return row_ids(row, self._ids)
        try:
            got = self._ids(row, None)
        except Exception as e:
            raise UserCodeError(f"{self._what} {name_of(self._ids)}", e, f"row {str(row)[:80]}") from e
        return [int(i) for i in got]

    def _note_error(self, msg: str) -> None:
        if len(self.errors) < 100:
            self.errors.append(msg)


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


def row_ids(row: Any, spec: IdSpec) -> list[int]:
    """The input ids of one output row (see the module docstring)."""
    if callable(spec):
        return [int(i) for i in spec(row, None)]
    v = row
    for part in spec.split("."):
        if isinstance(v, str):
            v = json.loads(v)
        if not isinstance(v, dict) or part not in v:
            raise KeyError(f"no field {spec!r}")
        v = v[part]
    values = v if isinstance(v, list) else [v]
    return [_as_int(x) for x in values]


def _as_int(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError(f"id is a boolean: {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    raise ValueError(f"id is not an integer: {v!r}")

