"""A path as Spark's driver resolves it, so that the path a test names and the path a sink prints compare
as the same place.

Spark hands a sink's path to Hadoop as the job wrote it (``DeltaSink[data/bronze]``, ``FileSink[out]``, a
``foreachBatch`` write's ``[path=data/bronze]``), and Hadoop qualifies it on the default filesystem
(``fs.defaultFS``, ``Path.makeQualified``): a URL stays as it is; an absolute path is on the default
filesystem; a relative one is under that filesystem's working directory -- the driver's working directory
(its JVM's ``user.dir``) on the local filesystem, the user's home (``/user/<name>``) on HDFS. A ``file:``
path without a leading ``/`` is relative on the local filesystem whatever the default one is.
:func:`qualify` does the same for either side of a comparison, with ``file:`` / ``file://`` / no scheme, a
trailing ``/``, ``.`` and ``..`` normalised alike. Pure: where the driver's working directory is comes from
the caller (:class:`DriverDirs`: the run's own knowledge before the job starts, Spark's event log after).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

from pytest_streamchaos.observe.output_names import output_path

LOCAL_FS = "file:///"


@dataclass(frozen=True)
class DriverDirs:
    """Where a driver resolves relative paths: its default filesystem, its working directory on this host
    (``user.dir``) and, when the default filesystem is not the local one, its home there."""

    cwd: str  #: the driver's working directory (an absolute local path)
    default_fs: str = LOCAL_FS  #: ``fs.defaultFS`` (``file:///``, ``hdfs://127.0.0.1:9820``)
    home: str | None = None  #: the working directory on a default filesystem that is not the local one

    @property
    def on_local_fs(self) -> bool:
        return (urlparse(self.default_fs).scheme or "file") == "file"


def same_fs(a: str, b: str) -> bool:
    """Whether two ``fs.defaultFS`` values name one filesystem (``file:///`` and ``file:/``; a trailing ``/``)."""
    ua, ub = urlparse(a), urlparse(b)
    return ((ua.scheme or "file"), ua.netloc) == ((ub.scheme or "file"), ub.netloc)


def qualify(path: str, dirs: DriverDirs) -> str:
    """``path`` (a path or a URL, as a job or a test wrote it) as the driver qualifies it:
    ``<scheme>://<authority><absolute path>`` (``file:///w/jobs/j/data/bronze``, ``hdfs://nn:9820/user/u/out``)."""
    url = urlparse(path)
    if url.scheme == "file":
        rest = path[len("file:"):]
        p = url.path if rest.startswith("/") else rest
        return _url("file", "", p if p.startswith("/") else posixpath.join(dirs.cwd, p))
    if url.scheme and len(url.scheme) > 1:  # another filesystem's URL (a one-letter scheme would be a drive)
        return _url(url.scheme, url.netloc, url.path or "/")
    fs = urlparse(dirs.default_fs)
    scheme = fs.scheme or "file"
    if path.startswith("/"):
        return _url(scheme, fs.netloc if scheme != "file" else "", path)
    if scheme == "file":
        return _url("file", "", posixpath.join(dirs.cwd, path))
    home = urlparse(dirs.home or "/")
    return _url(scheme, fs.netloc, posixpath.join(home.path or "/", path))


def _url(scheme: str, authority: str, path: str) -> str:
    return f"{scheme}://{authority}/{posixpath.normpath(path).lstrip('/')}"


def local_path(qualified: str) -> str | None:
    """The local path of a qualified ``file://`` URL (None for another filesystem's)."""
    return qualified[len("file://"):] if qualified.startswith("file://") else None


def elsewhere(outputs: Sequence[str], driver: DriverDirs, planned: DriverDirs) -> str | None:
    """One line when a relative ``file:`` / ``delta:`` output the run reads where ``planned`` puts it lands
    elsewhere for the job's ``driver`` (its working directory or default filesystem are not the ones the run
    set up: the job changed them), naming both places; None when each lands where the run reads it."""
    for name in outputs:
        path = output_path(name)
        if path is None or urlparse(path).scheme or path.startswith("/"):
            continue
        got, read = qualify(path, driver), qualify(path, planned)
        if _real(got) != _real(read):
            return (f"outputs= names {name}, a relative path: the job's driver resolves it to {got} (its working "
                    f"directory {driver.cwd}, default filesystem {driver.default_fs}), but the run reads {read}; "
                    "give the path as an absolute one or a URL")
    return None


def _real(qualified: str) -> str:
    """A qualified URL with a local path's symbolic links resolved (the driver's ``user.dir`` is a real path)."""
    local = local_path(qualified)
    return qualified if local is None else "file://" + os.path.realpath(local)
