"""Where a run's checkpoints and file-sink outputs live -- the local disk or a storage's service (HDFS, the object
store) -- read the same way.

A job's checkpoint and its file-sink output are named by a path or a URL (``/tmp/chk``, ``file:/tmp/chk``,
``hdfs://127.0.0.1:9820/streamchaos/run0/chk``, ``s3a://lake/orders/_checkpoint``). :func:`locate` turns one into
a :class:`Place`: an fsspec filesystem (the local one, or the one a storage's service hands out,
:mod:`pytest_streamchaos.storages`: WebHDFS on the stack's NameNode, pyarrow's S3 client on the object store;
well-kept clients, not hand-written ones) and the path on it, with the few reads the observers need (names in a
directory, a file's text or bytes, its modification time). Every read of a missing path answers "nothing" (``[]``
/ None) rather than raising: a checkpoint appears while it is watched.
"""

from __future__ import annotations

import datetime
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pytest_streamchaos import storages
from pytest_streamchaos.observe.paths import DriverDirs, qualify
from pytest_streamchaos.protocols import StorageService
from pytest_streamchaos.storages import CheckpointStorage

if TYPE_CHECKING:  # untyped (mypy reads it as Any): named for the reader
    from fsspec import AbstractFileSystem


@dataclass(frozen=True)
class Place:
    """A path on a filesystem (local, or a storage's service: HDFS)."""

    fs: AbstractFileSystem
    path: str  #: absolute, without scheme (on an object store: ``<bucket>/<key>``)
    scheme: str = "file"  #: ``file``, or the service's (``hdfs``, ``s3a``)
    authority: str = ""  #: ``host:port`` of the service (an HDFS NameNode; "" on an object store: in the path)
    #: the storage's service it is on (None: the local disk), for what a reader needs besides the filesystem
    service: StorageService | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return self.path if self.scheme == "file" else f"{self.scheme}://{self.authority}{self.path}"

    def at(self, path: str) -> Place:
        """Another path on the same filesystem."""
        return Place(self.fs, path, self.scheme, self.authority, self.service)

    def child(self, *parts: str) -> Place:
        return Place(self.fs, posixpath.join(self.path, *parts), self.scheme, self.authority, self.service)

    def names(self) -> list[str]:
        """The names in this directory ([] when it is not there)."""
        try:
            return sorted(posixpath.basename(p.rstrip("/")) for p in self.fs.ls(self.path, detail=False))
        except (FileNotFoundError, NotADirectoryError, OSError):
            return []

    def entries(self) -> list[tuple[str, bool, float | None]]:
        """``(name, is_dir, mtime)`` of each entry of this directory ([] when it is not there): one
        listing, with the modification times a poller needs to skip what did not change."""
        try:
            infos = self.fs.ls(self.path, detail=True)
        except (FileNotFoundError, NotADirectoryError, OSError):
            return []
        return sorted((posixpath.basename(str(i["name"]).rstrip("/")), str(i.get("type", "")).lower() == "directory",
                       _mtime(i)) for i in infos)

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
        return _mtime(info)


def _mtime(info: dict[str, Any]) -> float | None:
    """Epoch seconds of an fsspec info dict: ``mtime`` (local; a datetime from pyarrow's S3 client) or
    ``modificationTime`` (WebHDFS, ms)."""
    if isinstance(info.get("mtime"), datetime.datetime):
        return float(info["mtime"].timestamp())
    if "mtime" in info:
        return float(info["mtime"])
    t = info.get("modificationTime")
    return None if t is None else float(t) / 1000.0


def local_fs() -> AbstractFileSystem:
    import fsspec

    return fsspec.filesystem("file")


def locate(where: str | os.PathLike[str], *services: StorageService | None) -> Place:
    """The :class:`Place` of a path or URL; ``services``: the services of the run's storages (the stack's HDFS,
    a ``LocalHdfsCluster``; the object store), needed for URLs of their schemes (``hdfs://``: one of another
    server is refused, naming both; ``s3a://<bucket>/``: any bucket of the store)."""
    text = str(where)
    url = urlparse(text)
    storage = storages.of_scheme(url.scheme)
    if storage is None:
        path = text.removeprefix("file://").removeprefix("file:") if url.scheme in ("file", "") else text
        return Place(local_fs(), path)
    service = next((s for s in services if s is not None and urlparse(s.default_fs).scheme == url.scheme), None)
    if service is None:
        raise ValueError(f"{text}: an {url.scheme}:// path, but this run has no {storage.title} "
                         f"(chaos.run(..., setup=JobSetup(checkpoint={storage.name!r})))")
    if storage.buckets:  # the authority is a bucket: its objects are <bucket>/<key> on the store's filesystem
        return Place(service.filesystem(), f"{url.netloc}{url.path}".rstrip("/") or url.netloc, url.scheme, "", service)
    root = urlparse(service.default_fs)
    if url.netloc and url.netloc != root.netloc:
        raise ValueError(f"{text}: on {storage.title} {url.netloc}, but {storage.service()} is at {root.netloc}")
    return Place(service.filesystem(), url.path or "/", url.scheme, root.netloc, service)


@dataclass
class RunStorage:
    """Where one run's checkpoint and the job's relative paths go: a local directory, or a storage's service.

    On a service (HDFS: ``chaos.run(..., setup=JobSetup(checkpoint="hdfs"))``) the job runs with it as its
    default filesystem, under a user of its own (``streamchaos-<run tag>``), so a relative
    ``checkpointLocation`` or output path lands in that user's fresh home directory, as in production
    where HDFS is the default filesystem; the run's own checkpoint (``{checkpoint_dir}``) and the
    default location of queries that name none are under ``/streamchaos/<run tag>``. A service that is no
    default filesystem (the object store: ``checkpoint="s3"``) gets the run's checkpoint and the queries'
    default location there, and the job's relative paths stay in its working directory. A storage the job
    reaches by URL besides (the object store of a job whose code names ``s3a://``) is in :attr:`reached`:
    its settings are in :attr:`conf`, its paths are places of the run."""

    checkpoint: str  #: the run's checkpoint location, a path or a URL of the service (``hdfs://``)
    conf: dict[str, str]  #: the Spark conf that puts the job there
    env: dict[str, str]  #: the driver's environment for it
    roots: list[str]  #: where the job's own checkpoints may be (besides its working directory)
    home: str | None = None  #: where relative paths of the job land (None: its working directory)
    #: the storage it is on: its entry in :data:`pytest_streamchaos.storages.STORAGES`
    entry: CheckpointStorage = storages.STORAGES[storages.DEFAULT]
    #: the storage's service (the stack's HDFS, a ``LocalHdfsCluster``), None on this host's disk
    service: StorageService | None = None
    #: the services of other storages the job reaches by URL, by storage name
    reached: dict[str, StorageService] = field(default_factory=dict)

    @classmethod
    def local(cls, run_dir: Path) -> RunStorage:
        return cls(checkpoint=str(run_dir / "checkpoint"), conf={}, env={}, roots=[str(run_dir / "checkpoint")])

    @classmethod
    def on_service(cls, storage: CheckpointStorage, service: StorageService, tag: str) -> RunStorage:
        """The run on ``storage``'s started ``service`` (``default_fs``, ``filesystem()``, ``client_conf()``:
        :mod:`pytest_streamchaos.storages`), the job's default filesystem."""
        root = f"{service.default_fs}/streamchaos/{tag}"
        conf = {"spark.sql.streaming.checkpointLocation": f"{root}/queries",
                **{f"spark.hadoop.{k}": v for k, v in service.client_conf().items()}}
        if not storage.default_fs:
            return cls(checkpoint=f"{root}/checkpoint", conf=conf, env={}, roots=[root], entry=storage, service=service)
        user = f"streamchaos-{tag}"
        home = f"{service.default_fs}/user/{user}"
        conf.update({"spark.hadoop.fs.defaultFS": service.default_fs, "spark.executorEnv.HADOOP_USER_NAME": user})
        return cls(checkpoint=f"{root}/checkpoint", conf=conf, env={"HADOOP_USER_NAME": user}, roots=[root, home],
                   home=home, entry=storage, service=service)

    def reach(self, storage: CheckpointStorage, service: StorageService) -> None:
        """The job reaches ``storage``'s started ``service`` by URL too: its settings join the job's conf."""
        self.reached[storage.name] = service
        self.conf.update({f"spark.hadoop.{k}": v for k, v in service.client_conf().items()})

    def services(self) -> dict[str, StorageService]:
        """Every service of the run by storage name: its storage's and the ones the job reaches."""
        own = {self.entry.name: self.service} if self.service is not None else {}
        return {**self.reached, **own}

    @property
    def kind(self) -> str:
        """The storage's name (``--chaos-checkpoint``'s choices)."""
        return self.entry.name

    def place(self, where: str | os.PathLike[str]) -> Place:
        """The :class:`Place` of a path or URL the run or the job names."""
        return locate(where, *self.services().values())

    def driver_dirs(self, workdir: str | os.PathLike[str]) -> DriverDirs:
        """Where a driver whose working directory is ``workdir`` resolves the job's paths: on this host's disk,
        or with the storage's service as its default filesystem (a relative path in the run user's home)."""
        if self.service is None:
            return DriverDirs(str(workdir))
        return DriverDirs(str(workdir), self.service.default_fs, self.home)

    def output(self, path: str, workdir: str | os.PathLike[str]) -> Place:
        """Where a job's output path (``outputs={"file:<path>": ...}``) is, as the driver resolves it
        (:func:`~.paths.qualify`): a URL as given, an absolute path on the default filesystem, a relative one in
        the job's home (on a service) or its working directory ``workdir``."""
        return self.place(qualify(path, self.driver_dirs(workdir)))
