"""Collect the output of a job that writes a Delta Lake table: ``writeStream.format("delta")``, or
``foreachBatch`` writing ``df.write.format("delta")`` / ``DeltaTable...merge(...)``.

A Delta table's exactly-once contract is its log: a version is committed or it is not, and readers see
committed versions only. So the collector reads the table version by version (:mod:`.delta`, delta-rs):
each data file a version adds is a unit of :class:`~.row_output.RowOutput` whose rows *arrive* at the
version's commit time (its ``commitInfo.timestamp``, stamped by the writing driver on this machine's
clock: latency, throughput and recovery are measured as for Kafka output), and each file a version
removes stops counting (its ids keep the time they first showed: the unchanged rows a MERGE or an
OPTIMIZE rewrites arrived when they first did). What the run judges is the table as a reader sees it
after the last version: a micro-batch replayed and appended again (``foreachBatch`` without
``txnAppId``) is there twice, duplicates; an id missing from the table is lost; a batch that Delta's
streaming sink (or ``txnAppId`` / ``txnVersion``) skipped on replay is no version at all.

A table that exists when the collector starts (an earlier run's, under a path the job hard-codes) is
read from the versions after that one, saying so (:attr:`DeltaSinkCollector.notes`). A path that holds
another format (a file sink's ``_spark_metadata``, a batch write's ``_SUCCESS``) is an error naming the
``file:`` output to use instead; an id column the table does not have stops the run at its first version,
naming the table's columns; a path that never became a table is an error when the collector stops.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

from pytest_streamchaos import storages
from pytest_streamchaos.observe import delta
from pytest_streamchaos.observe.delta import DeltaReadError, Snapshot, check_protocol, commits, is_table, open_table
from pytest_streamchaos.observe.row_output import IdSpec, RowOutput
from pytest_streamchaos.observe.storage import Place, locate
from pytest_streamchaos.protocols import TableStore

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable


def table_at(place: Place, name: str) -> delta.Where:
    """Where delta-rs reads the table at ``place``: its local path, or the table on an object store (the store's
    ``storage_options``); a ``ValueError`` naming the fix for a storage whose tables the run cannot read (HDFS)."""
    if place.scheme == "file":
        return place.path
    entry = storages.of_scheme(place.scheme)
    if entry is None or not entry.tables or not isinstance(place.service, TableStore):
        readable = ", ".join(f"{s}://" for e in storages.STORAGES.values() if e.tables
                             for s in e.schemes if s != "file")
        raise ValueError(f"outputs={{{name!r}: ...}}: a Delta table is read on the local disk or an object store "
                         f"({readable}); {place} is on {place.scheme}")
    service = place.service
    return delta.TableAt(service.table_uri(place.path), service.storage_options(), service.arrow_fs(), place.path,
                         str(place))


class DeltaSinkCollector(RowOutput):
    """Poll a Delta table and read every version committed since the collector started (see the module
    docstring); ``path``: the table's directory on the local disk."""

    def __init__(self, path: str | os.PathLike | Place, ids: IdSpec, name: str | None = None,
                 poll_s: float = 0.2, what: str | None = None) -> None:
        super().__init__(name or f"delta:{path}", ids, poll_s, what)
        self.place = path if isinstance(path, Place) else locate(path)
        self.path = self.place.path if self.place.scheme == "file" else str(self.place)  #: for messages
        #: where the table is read: its local path, or the table on an object store
        self.at: delta.Where = table_at(self.place, self.name)
        self.since: int | None = None  #: the table's version when the collector started (None: no table)
        self.versions_read = 0  #: versions read (committed after :attr:`since`)
        self.notes: list[str] = []  #: one line each on how the table was read (an earlier run's versions)
        self._prev = Snapshot.empty(self.at)
        self._done = -1  #: the newest version read
        self._checked = False  #: the id column was checked against the table's schema
        self._latest: DeltaTable | None = None  #: the table at its newest version, updated on each look
        self._reading = threading.Lock()  # the polling thread and a last read at stop() take turns

    #: a table: a reference run compares its final value per key (:mod:`~pytest_streamchaos.observe.rows`)
    table = True

    def rows(self) -> list[dict[str, Any]]:
        """The table's rows after its last version, as a reader sees it (without what an earlier run's versions
        left, :attr:`since`): what a reference run compares. [] when the path is not a table."""
        if self._done < 0:
            return []
        return delta.rows(delta.final_rows(self.at, since=self.since))

    def start(self) -> DeltaSinkCollector:
        """Note the table's version now (an earlier run's table: only the versions after it are read), then poll."""
        table = self._table()
        if table is not None:
            self.since = self._done = table.version()
            self._prev = Snapshot.of(table, self.at)
            self.notes.append(f"{self.name}: the table existed before the run (version {self.since}); the run reads "
                              f"the versions after it")
        super().start()
        return self

    def stop(self, drain_timeout: float = 10.0) -> bool:
        """Stop after one last read; a path that never became a Delta table is the :attr:`failure`."""
        super().stop(drain_timeout)
        if self._done < 0 and self.failure is None:
            self.failure = DeltaReadError(self._not_a_table("after the run"))
        return True

    def poll(self, fresh: bool = False) -> None:
        """Read the versions committed since the last poll."""
        with self._reading:
            self._poll()

    def _poll(self) -> None:
        table = self._table()
        if table is None:
            self._check_other_format()
            return
        newest = table.version()
        if newest <= self._done:
            return
        info = commits(table, self._done + 1, newest)
        for v in range(self._done + 1, newest + 1):
            t = float(info.get(v, {}).get("timestamp", 0)) / 1000.0
            self._read_version(Snapshot.of(open_table(self.at, v), self.at), t)
            self._done = v
            self.versions_read += 1

    def _read_version(self, snap: Snapshot, t: float) -> None:
        if not self._checked:
            self._check_ids(snap)
        for f in [f for f in self._prev.files if f not in snap.files]:
            if self._counts(f):
                self._forget(f)
        for f in [f for f in snap.files if f not in self._prev.files]:
            try:
                rows = self._rows(snap.read([f]))
            except Exception as e:
                self._unreadable(f, t, str(e))
                continue
            self._record(f, t, rows)
        self._prev = snap
        self.last_written = max(self.last_written or 0.0, t)

    def _rows(self, table: pa.Table) -> list[dict[str, Any]]:
        """A data file's rows as the id reader takes them: only the id column when ids are a column's (a
        callable or a nested field path gets whole rows)."""
        if isinstance(self._ids, str) and "." not in self._ids and self._ids in table.column_names:
            return [{self._ids: v} for v in table.column(self._ids).to_pylist()]
        return list(table.to_pylist())

    def _check_ids(self, snap: Snapshot) -> None:
        """An id field path whose first name is not a column of the table stops the run, naming the columns."""
        self._checked = True
        if callable(self._ids) or snap.schema is None:
            return
        names = list(snap.schema.names)
        column = self._ids.split(".")[0]
        if column not in names:
            self.failure = self.failure or DeltaReadError(
                f"outputs={{{self.name!r}: {self._ids!r}}}: the table {self.path} has no column {column!r} (its "
                f"columns: {', '.join(names)}): name the column that holds the input id, or pass a callable "
                "(row, None) -> ids")

    def _table(self) -> DeltaTable | None:
        """The table now (a ``deltalake.DeltaTable`` at its newest version, brought up to date from the last
        look), None when the path holds no table (yet) or the table cannot be read (:attr:`failure` says why)."""
        try:
            if self._latest is None:
                if not is_table(self.at):
                    return None
                self._latest = open_table(self.at)
            else:
                self._latest.update_incremental()
            check_protocol(self._latest, self.path)
        except DeltaReadError as exc:
            self.failure = self.failure or exc
            return None
        return self._latest

    def _check_other_format(self) -> None:
        """A directory another writer committed to (the file sink's log, a batch write's ``_SUCCESS``) will
        never be a Delta table: the run stops, naming the output to declare instead."""
        names = set(self.place.names())
        if self.failure is None and names & {"_spark_metadata", "_SUCCESS"}:
            self.failure = DeltaReadError(self._not_a_table("now: the job writes files there, not Delta "
                                                            f"(outputs={{'file:{self.path}': ...}} reads them)"))

    def _not_a_table(self, when: str) -> str:
        return (f"outputs={{{self.name!r}: ...}}: {self.path} is not a Delta table {when} (no _delta_log with a "
                "commit); name the directory the job writes with format(\"delta\") or DeltaTable.forPath")
