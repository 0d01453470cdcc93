"""The files a batch ``DataFrameWriter`` committed under a directory (``foreachBatch`` writing files).

A job that writes files from ``foreachBatch`` (``df.write.mode("append").parquet(f"{out}/batch={id}")``,
or ``.partitionBy(...)`` into one directory) has no ``_spark_metadata`` log: only the streaming file
sink writes one. What such a write makes visible is decided by Hadoop's commit protocol
(``FileOutputCommitter``): tasks write under ``<dir>/_temporary``, the job commit moves their files
into ``<dir>`` and then writes ``<dir>/_SUCCESS``. So a data file is output once a ``_SUCCESS``
marker is in its directory or in one above it (``partitionBy`` puts the marker at the root only), and
nothing under ``_temporary`` (or any ``_`` / ``.`` name: markers, checksums, logs) ever is.

A batch replayed after a driver kill writes its rows again: into a new directory, or as new part files
beside the first ones -- duplicates, as a reader of the directory sees them. A replay that
*overwrites* its directory deletes the first files: :class:`CommittedFiles` reports them gone, so
they stop counting.

Each file's arrival is its marker's time when the marker is newer than the file (the commit that
made it visible), else the moment it was first seen (moved in after the last marker: an append whose
own marker is still being written).
"""

from __future__ import annotations

import time

from pytest_streamchaos.observe.storage import Place

MARKER = "_SUCCESS"


def hidden(name: str) -> bool:
    """Names Spark's and Hadoop's readers skip: ``_temporary``, ``_SUCCESS``, ``.crc`` files, ..."""
    return name.startswith(("_", "."))


class CommittedFiles:
    """Scans a directory tree for committed data files (see the module docstring).

    Directory listings are kept and reused while a directory's modification time is unchanged, so a
    poll of a tree of finished batch directories costs one listing of the root (one WebHDFS call on
    HDFS), not one per batch."""

    def __init__(self, root: Place) -> None:
        self.root = root
        self._listings: dict[str, tuple[float | None, list[tuple[str, bool, float | None]]]] = {}
        self._first_seen: dict[str, float] = {}

    def scan(self, fresh: bool = False) -> dict[str, float]:
        """Every committed data file now, ``path -> arrival`` (epoch seconds); ``fresh``: list every
        directory again (the final read)."""
        found: dict[str, float] = {}
        self._walk(self.root, None, None, fresh, found, time.time())
        for gone in set(self._first_seen) - set(found):
            del self._first_seen[gone]
        return found

    def _entries(self, where: Place, mtime: float | None, fresh: bool) -> list[tuple[str, bool, float | None]]:
        cached = self._listings.get(where.path)
        if not fresh and mtime is not None and cached is not None and cached[0] == mtime:
            return cached[1]
        entries = where.entries()
        self._listings[where.path] = (mtime, entries)
        return entries

    def _walk(self, where: Place, mtime: float | None, marker: float | None, fresh: bool,
              found: dict[str, float], now: float) -> None:
        entries = self._entries(where, mtime, fresh)
        marker = next((t for n, d, t in entries if n == MARKER and not d), None) or marker
        for name, is_dir, t in entries:
            if hidden(name):
                continue
            child = where.child(name)
            if is_dir:
                self._walk(child, t, marker, fresh, found, now)
            elif marker is not None:
                found[child.path] = self._arrival(child.path, t, marker, now)

    def _arrival(self, path: str, mtime: float | None, marker: float, now: float) -> float:
        if path not in self._first_seen:
            self._first_seen[path] = marker if mtime is None or marker >= mtime else now
        return self._first_seen[path]
