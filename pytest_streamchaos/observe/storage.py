"""Where a run's checkpoints and file-sink outputs live -- the local disk or HDFS -- read the same way.

A job's checkpoint and its file-sink output are named by a path or a URL (``/tmp/chk``, ``file:/tmp/chk``,
``hdfs://127.0.0.1:9820/streamchaos/run0/chk``). :func:`locate` turns one into a :class:`Place`: an
fsspec filesystem (the local one, or WebHDFS on the stack's NameNode: a well-kept client, not a
hand-written one) and the path on it, with the few reads the observers need (names in a directory, a
file's text or bytes, its modification time). Every read of a missing path answers "nothing"
(``[]`` / None) rather than raising: a checkpoint appears while it is watched.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse


@dataclass(frozen=True)
class Place:
    """A path on a filesystem (local or HDFS)."""

    fs: Any  #: an fsspec filesystem
    path: str  #: absolute, without scheme
    scheme: str = "file"  #: ``file`` or ``hdfs``
    authority: str = ""  #: ``host:port`` of an HDFS NameNode

    def __str__(self) -> str:
        return self.path if self.scheme == "file" else f"{self.scheme}://{self.authority}{self.path}"

    def child(self, *parts: str) -> Place:
        return Place(self.fs, posixpath.join(self.path, *parts), self.scheme, self.authority)

    def names(self) -> list[str]:
        """The names in this directory ([] when it is not there)."""
        try:
            return sorted(posixpath.basename(p.rstrip("/")) for p in self.fs.ls(self.path, detail=False))
        except (FileNotFoundError, NotADirectoryError, OSError):
            return []

    def is_dir(self) -> bool:
        try:
            return bool(self.fs.isdir(self.path))
        except OSError:
            return False

    def read_bytes(self) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(self.path))
        except (FileNotFoundError, IsADirectoryError, OSError):
            return None

    def read_text(self) -> str | None:
        raw = self.read_bytes()
        return None if raw is None else raw.decode(errors="replace")

    def mtime(self) -> float | None:
        """When the file was last written (epoch seconds), None when it is not there."""
        try:
            info = self.fs.info(self.path)
        except (FileNotFoundError, OSError):
            return None
        if "mtime" in info:  # local
            return float(info["mtime"])
        t = info.get("modificationTime")  # WebHDFS: milliseconds
        return None if t is None else float(t) / 1000.0


def local_fs() -> Any:
    import fsspec

    return fsspec.filesystem("file")


def locate(where: str | Any, hdfs: Any = None) -> Place:
    """The :class:`Place` of a path or URL; ``hdfs``: the stack's HDFS (a ``LocalHdfsCluster``), needed
    for ``hdfs://`` URLs (one of another NameNode is refused, naming both)."""
    text = str(where)
    url = urlparse(text)
    if url.scheme == "hdfs":
        if hdfs is None:
            raise ValueError(f"{text}: an hdfs:// path, but this run has no HDFS (chaos.run(..., checkpoint='hdfs'))")
        authority = hdfs.default_fs.removeprefix("hdfs://")
        if url.netloc and url.netloc != authority:
            raise ValueError(f"{text}: on HDFS {url.netloc}, but the stack's NameNode is {authority}")
        return Place(hdfs.filesystem(), url.path or "/", "hdfs", authority)
    path = text.removeprefix("file://").removeprefix("file:") if url.scheme in ("file", "") else text
    return Place(local_fs(), path)
