"""What the run asks of a backend's service, one small protocol each: a checkpoint storage's service
(:class:`StorageService`, what :data:`pytest_streamchaos.storages.STORAGES` entries start), and what an object
store adds (:class:`BucketStore`: buckets made on demand; :class:`TableStore`: Delta tables read on it).

The run, the observers and the faults hold a service by these types, never by a backend's class, so a new
storage is its entry and the folder of its service (docs/architecture.md, "Adding a storage"). This module
imports nothing of the package: the registries, ``observe/`` and ``stack/`` all read it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # third-party and untyped (mypy reads them as Any): named for the reader
    import pyarrow.fs as pafs
    from fsspec import AbstractFileSystem


@runtime_checkable
class StorageService(Protocol):
    """A storage's started service (the stack's HDFS, the object store): the session starts and stops it
    (``start``/``stop``), heals it before each test, and a run puts the job on it (``default_fs``,
    ``client_conf``) and reads its files there (``filesystem``)."""

    @property
    def default_fs(self) -> str:
        """The URL of its root, ``scheme://authority`` (``hdfs://127.0.0.1:9820``, ``s3a://streamchaos``)."""
        ...

    def filesystem(self) -> AbstractFileSystem:
        """An fsspec filesystem on it (paths without the scheme)."""
        ...

    def client_conf(self) -> dict[str, str]:
        """The Hadoop client settings a job needs to reach it (for Spark, each key prefixed ``spark.hadoop.``)."""
        ...

    def heal(self, timeout: float = 60.0) -> object:
        """Back to its configured shape (every node up, no fault left on the job's way in)."""
        ...

    def start(self) -> object:
        """Start it and wait until it serves."""
        ...

    def stop(self) -> None:
        """Stop everything it started. Idempotent."""
        ...


@runtime_checkable
class BucketStore(StorageService, Protocol):
    """A service whose URLs name buckets (``s3a://<bucket>/key``): a bucket a job names is made before it starts."""

    def ensure_bucket(self, name: str) -> bool:
        """Create bucket ``name`` unless it is there; whether it was created."""
        ...


@runtime_checkable
class TableStore(StorageService, Protocol):
    """A service the run reads Delta tables on (delta-rs: the table's URL, its ``storage_options``, a pyarrow
    filesystem for the log)."""

    def table_uri(self, path: str) -> str:
        """delta-rs's URL of the table at ``path`` (``<bucket>/<key>``)."""
        ...

    def storage_options(self) -> dict[str, str]:
        """The service for delta-rs (``deltalake``'s ``storage_options``)."""
        ...

    def arrow_fs(self) -> pafs.FileSystem:
        """pyarrow's filesystem on it."""
        ...


class Held(Protocol):
    """A hold a checkpoint gate reports (``stack.checkpoint_gate.Hold``, the object store proxy's ``ProxyHold``): where
    (``log`` entry ``batch``, ``when``: before or after the rename), who (``pid``, the ``thread``'s name), since when
    (``t``) and the file (``path``)."""

    @property
    def log(self) -> str: ...

    @property
    def when(self) -> str: ...

    @property
    def batch(self) -> int: ...

    @property
    def pid(self) -> int: ...

    @property
    def t(self) -> float: ...

    @property
    def in_task(self) -> bool | None: ...

    @property
    def thread(self) -> str: ...

    @property
    def path(self) -> str: ...


class Gate(Protocol):
    """The harness's side of a checkpoint gate (``stack.checkpoint_gate.CheckpointGate``, a :class:`GatedStore`'s
    own): the aimed moments of ``faults/gate_moments`` arm it and wait for its holds."""

    holds: list[Held]  #: every hold of the run, in order (the fault's target may be the held process)

    def arm(self, log: str, when: str, min_batch: int, scope: str | None = None) -> None:
        """``scope``: the query's checkpoint (``CheckpointView.checkpoint_dir``): only its renames hold."""
        ...

    def wait_held(self, timeout: float, stop: threading.Event | None = None) -> Held | None: ...

    def release(self) -> None: ...

    def disarm(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class GatedStore(StorageService, Protocol):
    """A service that holds the job's checkpoint renames itself (its entry's ``gate="service"``: the object
    store's proxy holds S3A's COPY), for the faults aimed at a moment the checkpoint gate lands."""

    def gate(self) -> Gate:
        """The gate on its renames."""
        ...
