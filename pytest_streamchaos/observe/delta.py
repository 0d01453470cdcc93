"""Reading a Delta Lake table, version by version, with a reader made for Delta (``deltalake``, delta-rs).

What a streaming job left in a table, as the run and the reference comparison need it:

- :func:`final_rows` -- the table's rows after its last version (or after ``version``): for a table
  that MERGE / UPDATE / DELETE maintain, the final value per key;
- :func:`version_changes` -- each committed version: when it was committed (its ``commitInfo``
  timestamp, epoch seconds), its operation (``STREAMING UPDATE``, ``WRITE``, ``MERGE``, ...), the rows of the
  data files it added and of those it removed, and :meth:`VersionChange.appended` -- the rows it made
  appear (added minus removed, as multisets: for an append, everything it added; for a copy-on-write
  MERGE, the new and changed rows, not the unchanged rows it copied);
- :func:`is_table`, :func:`columns`, :func:`rows` (a pyarrow table as plain dicts).

A version's change is the difference between the data files of its snapshot and of the one before
(delta-rs reads the log, its checkpoints and its protocol; nothing here parses ``_delta_log``). A
replayed micro-batch that a ``foreachBatch`` writer appended again is a version of its own, and its rows
show twice in :func:`final_rows`; a batch Delta's streaming sink (or ``txnAppId`` / ``txnVersion``) skipped
is no version at all.

A table whose protocol needs what the reader cannot apply per file (deletion vectors, column mapping)
raises :class:`DeltaReadError` naming it. A table is a local path, or a :class:`TableAt` on an object store
(delta-rs with the store's options, its data files read with pyarrow's S3 client); the functions are pure
but for that read.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as pds
    import pyarrow.fs as pafs
    from deltalake import DeltaTable

#: reader features whose effect is not in the data files themselves: a per-file read would be wrong
_UNSUPPORTED = {"deletionVectors": "deletion vectors", "columnMapping": "column mapping"}


@dataclass(frozen=True)
class TableAt:
    """A table on an object store: its URL for delta-rs (``s3://<bucket>/<key>``), the store's options for it, and
    pyarrow's filesystem on the store with the table's root there (``<bucket>/<key>``) for its data files."""

    uri: str
    options: dict[str, str]
    fs: pafs.FileSystem
    root: str
    name: str = ""  #: how the job names it (``s3a://lake/orders``), for messages

    def __str__(self) -> str:
        return self.name or self.uri


#: where a table is: a local path, or a table on an object store
Where = str | os.PathLike | TableAt


def _open(where: Where, version: int | None = None) -> DeltaTable:
    from deltalake import DeltaTable

    if isinstance(where, TableAt):
        return DeltaTable(where.uri, version=version, storage_options=where.options)
    return DeltaTable(str(where), version=version)


class DeltaReadError(ValueError):
    """The table cannot be read as asked (not a table, a feature the reader cannot apply, a bad version);
    the message names the table and the fix."""


@dataclass(frozen=True)
class VersionChange:
    """One committed version of a table and the rows it changed."""

    version: int
    committed_at: float  #: the commit's time (its ``commitInfo.timestamp``), epoch seconds
    operation: str  #: ``STREAMING UPDATE``, ``WRITE``, ``MERGE``, ``OPTIMIZE``, ... ("" when not recorded)
    added: pa.Table  #: the rows of the data files this version added
    removed: pa.Table  #: the rows of the data files it removed (empty for an append)
    #: the commit's ``operationParameters`` (e.g. a streaming write's ``queryId``, ``epochId``)
    parameters: dict[str, Any]

    def appended(self) -> pa.Table:
        """The rows this version made appear: :attr:`added` minus :attr:`removed`, as multisets (a row
        that a rewrite carried over unchanged is not one; a row added twice in one version is twice)."""
        return minus(self.added, self.removed)


def minus(rows_of: pa.Table, gone: pa.Table) -> pa.Table:
    """The rows of ``rows_of`` that are not in ``gone``, as multisets (each row of ``gone`` cancels one
    equal row), in ``rows_of``'s order."""
    if gone.num_rows == 0:
        return rows_of
    left = Counter(_key(r) for r in gone.to_pylist())
    keep = []
    for i, r in enumerate(rows_of.to_pylist()):
        k = _key(r)
        if left[k] > 0:
            left[k] -= 1
        else:
            keep.append(i)
    return rows_of.take(keep)


def _key(row: Mapping[str, object]) -> Hashable:
    """A hashable form of a row (nested lists and dicts included)."""
    def freeze(v: object) -> Hashable:
        if isinstance(v, dict):
            return tuple(sorted((k, freeze(x)) for k, x in v.items()))
        if isinstance(v, list):
            return tuple(freeze(x) for x in v)
        return v

    return freeze(row)


def is_table(path: Where) -> bool:
    """Whether ``path`` holds a Delta table (a ``_delta_log`` with at least one commit)."""
    from deltalake import DeltaTable

    if isinstance(path, TableAt):
        return bool(DeltaTable.is_deltatable(path.uri, storage_options=path.options))
    return bool(DeltaTable.is_deltatable(str(path)))


def latest_version(path: Where) -> int | None:
    """The table's newest version, None when ``path`` is not a table (yet)."""
    if not is_table(path):
        return None
    return open_table(path).version()


def columns(path: Where) -> list[str]:
    """The table's column names (its schema now); :class:`DeltaReadError` when it is not a table."""
    return [f.name for f in open_table(path).schema().fields]


def final_rows(path: Where, version: int | None = None, since: int | None = None) -> pa.Table:
    """The table's rows after ``version`` (None: its newest), as a pyarrow table (:func:`rows` for dicts).
    ``since``: without the rows the table already held at that version (:func:`minus`: what the versions
    after it left, e.g. the rows of this run in a table an earlier run wrote to)."""
    snapshot = Snapshot.of(open_table(path, version), path)
    now = snapshot.read(list(snapshot.files))
    if since is None or since < 0:
        return now
    before = Snapshot.of(open_table(path, since), path)
    return minus(now, before.read(list(before.files)).select(now.column_names))


def version_changes(path: Where, start: int = 0, end: int | None = None,
                    removed: bool = True) -> list[VersionChange]:
    """Each committed version from ``start`` to ``end`` (inclusive; None: the newest), in order, with the
    rows it added and (``removed``) removed. :class:`DeltaReadError` when ``path`` is not a table."""
    return list(iter_changes(path, start, end, removed=removed))


def iter_changes(path: Where, start: int = 0, end: int | None = None, *,
                 removed: bool = True) -> Iterator[VersionChange]:
    """:func:`version_changes` one version at a time."""
    newest = open_table(path)
    last = newest.version() if end is None else min(end, newest.version())
    info_of = commits(newest, start, last)
    prev = Snapshot.of(open_table(path, start - 1), path) if start > 0 else Snapshot.empty(path)
    for v in range(max(start, 0), last + 1):
        snap = Snapshot.of(open_table(path, v), path)
        added = [f for f in snap.files if f not in prev.files]
        gone = [f for f in prev.files if f not in snap.files]
        info = info_of.get(v, {})
        yield VersionChange(v, float(info.get("timestamp", 0)) / 1000.0, str(info.get("operation") or ""),
                            snap.read(added), prev.read(gone if removed else []),
                            dict(info.get("operationParameters") or {}))
        prev = snap


def rows(table: pa.Table) -> list[dict[str, object]]:
    """A pyarrow table's rows as plain dicts (column -> Python value)."""
    return list(table.to_pylist())


@dataclass(frozen=True)
class Snapshot:
    """The data files of one version of a table -- each file's path (relative to the table, as the log names
    it, URL-decoded as Delta's protocol says) and its partition values -- and how to read a few of them."""

    root: str  #: the table's directory (on an object store: ``<bucket>/<key>``)
    files: dict[str, dict[str, object]]  #: data file -> its partition values (column -> value)
    schema: pa.Schema | None  #: the table's schema (None for the empty snapshot before version 0)
    fs: pafs.FileSystem | None = None  #: pyarrow's filesystem of an object store's table (None: the local disk)

    @classmethod
    def empty(cls, root: Where = "") -> Snapshot:
        at = root if isinstance(root, TableAt) else None
        return cls(at.root if at else str(root), {}, None, at.fs if at else None)

    @classmethod
    def of(cls, table: DeltaTable, where: Where) -> Snapshot:
        """The snapshot of ``table`` (a ``deltalake.DeltaTable`` at some version) of the table at ``where``."""
        import pyarrow as pa

        check_protocol(table, str(where))
        actions = pa.table(table.get_add_actions(flatten=True))
        columns = list(table.metadata().partition_columns)
        values = {c: actions.column(f"partition.{c}").to_pylist() for c in columns}
        files = {unquote(path): {c: values[c][i] for c in columns}
                 for i, path in enumerate(actions.column("path").to_pylist())}
        at = where if isinstance(where, TableAt) else None
        return cls(at.root if at else str(where), files, pa.schema(table.schema().to_arrow()), at.fs if at else None)

    def read(self, paths: list[str]) -> pa.Table:
        """The rows of the data files ``paths`` (of this snapshot), partition columns included, in the
        table's schema."""
        import pyarrow as pa
        import pyarrow.dataset as pds
        import pyarrow.fs as pafs

        schema = self.schema
        if schema is None:
            return pa.table({})
        fmt = pds.ParquetFileFormat()
        fs = self.fs if self.fs is not None else pafs.LocalFileSystem()
        root = self.root if self.fs is not None else os.path.abspath(self.root)
        fragments = [fmt.make_fragment(f"{root}/{p}", filesystem=fs, partition_expression=self._partition(p, schema))
                     for p in paths]
        return pds.FileSystemDataset(fragments, schema, fmt, fs).to_table()

    def _partition(self, path: str, schema: pa.Schema) -> pds.Expression:
        """The expression binding a file's partition columns to its values (how pyarrow fills them in)."""
        import pyarrow as pa
        import pyarrow.dataset as pds

        expr = pds.scalar(True)
        for column, value in self.files[path].items():
            field = pds.field(column)
            expr = expr & (field.is_null() if value is None
                           else field == pa.scalar(value).cast(schema.field(column).type))
        return expr


def open_table(path: Where, version: int | None = None) -> DeltaTable:
    """The ``deltalake.DeltaTable`` at ``path`` (at ``version``; None: the newest); :class:`DeltaReadError`
    naming the fix when it is not a table or the version cannot be read."""
    from deltalake.exceptions import DeltaError, TableNotFoundError

    try:
        return _open(path, version)
    except TableNotFoundError:
        raise DeltaReadError(f"{path} is not a Delta table (no _delta_log with a commit): "
                             "name the directory the job writes with format(\"delta\")") from None
    except DeltaError as exc:
        raise DeltaReadError(f"{path}: version {version} cannot be read: {exc}") from None


def check_protocol(table: DeltaTable, where: str) -> None:
    """:class:`DeltaReadError` when the table needs a reader feature that a per-file read cannot apply."""
    features = set(table.protocol().reader_features or [])
    unsupported = [name for key, name in _UNSUPPORTED.items() if key in features]
    if unsupported:
        raise DeltaReadError(f"{where} uses {' and '.join(unsupported)}, which the run cannot apply file by file: "
                             "create the table with TBLPROPERTIES ('delta.enableDeletionVectors' = false) "
                             "(and without column mapping) for a chaos run")


def commits(table: DeltaTable, start: int, end: int) -> dict[int, dict[str, Any]]:
    """The commit info (``timestamp`` in ms, ``operation``, ``operationParameters``) of versions ``start`` ..
    ``end`` of ``table`` (a ``DeltaTable`` at ``end`` or later), from its history."""
    if end < start:
        return {}
    newest = table.version()
    return {int(h["version"]): h for h in table.history(limit=newest - start + 1)
            if "version" in h and start <= int(h["version"]) <= end}
