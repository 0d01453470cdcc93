"""Where a run's checkpoint can be, as the plugin knows it: one registry, read by the settings
(``--chaos-checkpoint``'s choices and help), the run's arguments (``JobSetup(checkpoint=...)`` checked before
anything starts), the run (which service it asks for, what the job's paths are), the faults (which of them a
storage can serve: the checkpoint gate, a full local disk, the HDFS family) and the observers (which URLs a
checkpoint may be at).

A new storage is one :class:`CheckpointStorage` in :data:`STORAGES` and the folder of its service (S3 on
SeaweedFS took ``stack/s3``): its factory (``make``) starts a
:class:`~pytest_streamchaos.protocols.StorageService` -- ``default_fs`` (the URL of its root,
``scheme://authority``), ``filesystem()`` (an fsspec filesystem on it), ``client_conf()`` (the Hadoop client
settings a job needs to reach it), ``heal()`` -- and the fixture its ``fixture`` names is made from the entry;
the entry says the rest -- whether the job runs with it as its default filesystem
(:meth:`pytest_streamchaos.observe.storage.RunStorage.on_service`), whether a URL names one of its buckets, who
holds its renames for the checkpoint gate, the protocol its faults reach the service as (``FaultContext.store``),
and whether a Delta table on it can be read; its preflight, steps of ``python -m pytest_streamchaos.prepare`` and
timeline kinds are every entry's (:class:`~pytest_streamchaos.entries.BackendEntry`). This module imports only the
entries' base (the settings read it before any stack exists).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from pytest_streamchaos.entries import BackendEntry, named

if TYPE_CHECKING:
    from pytest_streamchaos.protocols import StorageService


@dataclass(frozen=True)
class CheckpointStorage(BackendEntry):
    """One place a run's checkpoint (and the job's relative paths) can be; what every backend entry brings (its
    preflight, its steps of ``prepare``, its timeline kinds) is :class:`~pytest_streamchaos.entries.BackendEntry`'s.

    ``help``: what it is, for the option's help and the refusal lines. ``title``: what it is called in a
    sentence ("the job's paths are on HDFS"). ``fixture``: the name of the pytest fixture of its service, made
    from the entry (None: this host's file system, a directory of the run). ``schemes``: the URL schemes a job's
    checkpoint may use in a run on it (another is a place the run cannot reach). ``gate``: whether the checkpoint gate
    can hold its renames -- ``preload``: a library preloaded into the job's JVMs holds ``rename()``, which sees
    only this host's files; ``service``: its service holds them (the object store's proxy holds S3A's COPY);
    ``""``: nothing can (``renames`` says how it renames instead, for the refusal of what needs the gate)."""

    title: str
    fixture: str | None = None
    schemes: tuple[str, ...] = ("file",)
    gate: str = "preload"
    renames: str = ""
    #: the job runs with the service as its default filesystem: its relative paths land there (HDFS, as on a
    #: Hadoop cluster); else they stay in the driver's working directory (an object store never is one)
    default_fs: bool = True
    #: a URL's authority names one of the service's buckets (``s3a://<bucket>/key``: any bucket is on it), not
    #: the service's address; such a service is started whenever the job's code names its scheme
    buckets: bool = False
    #: ``module:function``, the factory of the session's service: ``function(stacks, backend)`` returns it started
    #: (``stacks``: ``stack.fixtures.Stacks``, which keeps it for the session; the fixture named ``fixture`` is
    #: made from the entry and heals it before each test); it skips, or raises a ``StackError`` naming the fix, on a
    #: backend that has none
    make: str = ""
    #: ``module:Class``, the protocol its faults reach the service as (``FaultContext.store(protocol)``)
    protocol: str = ""
    #: whether a Delta table on it can be read (``outputs=["delta:<url>"]``: the service's ``storage_options``)
    tables: bool = False

    @property
    def preloaded(self) -> bool:
        """Its renames are held by the library preloaded into the job's JVMs (this host's files)."""
        return self.gate == "preload"

    @property
    def on_host(self) -> bool:
        """The checkpoint and the job's relative paths are on this host's file system (no service of its own)."""
        return self.fixture is None

    def service(self) -> str:
        """``the stack's HDFS``: what a run on it needs, for messages."""
        return f"the stack's {self.title}"

    def factory(self) -> Callable[..., StorageService]:
        """The service's factory (:attr:`make`), imported now."""
        if not self.make:
            raise ValueError(f"the {self.name!r} storage has no service (it is this host's file system)")
        return cast("Callable[..., StorageService]", named(self.make))

    def service_protocol(self) -> type | None:
        """The protocol its faults reach the service as (imported now); None when it has no service."""
        if not self.protocol:
            return None
        protocol = named(self.protocol)
        if not isinstance(protocol, type):
            raise TypeError(f"the {self.name!r} storage's protocol {self.protocol!r} is no class")
        return protocol


#: every checkpoint storage by name; the first is the default
STORAGES: dict[str, CheckpointStorage] = {s.name: s for s in (
    CheckpointStorage("local", "a directory of the run", "this host's file system"),
    CheckpointStorage("hdfs", "the stack's NameNode and two DataNodes, started on first use, as the job's default "
                      "filesystem", "HDFS", fixture="hdfs", schemes=("file", "hdfs"), gate="",
                      renames="a rename is an RPC", make="pytest_streamchaos.stack.hdfs.session:session_service",
                      protocol="pytest_streamchaos.stack.capabilities:HdfsCluster",
                      events="pytest_streamchaos.stack.hdfs:KINDS",
                      faults=("pytest_streamchaos.faults.families.hdfs:KINDS",), prepare=("hadoop",),
                      steps=("pytest_streamchaos.stack.hdfs.session:prepare_steps",)),
    CheckpointStorage("s3", "the stack's S3-compatible object store (SeaweedFS), started on first use; a job's "
                      "s3a:// paths land there; docs/s3.md", "S3", fixture="object_store", schemes=("file", "s3a"),
                      gate="service", renames="a rename is a COPY and a DELETE, held by the store's proxy",
                      default_fs=False, buckets=True, make="pytest_streamchaos.stack.s3.session:session_service",
                      protocol="pytest_streamchaos.stack.capabilities:ObjectStoreService",
                      events="pytest_streamchaos.stack.s3:KINDS", prepare=("seaweedfs", "s3a"),
                      faults=("pytest_streamchaos.faults.families.s3:KINDS",),
                      checks=("pytest_streamchaos.stack.s3.check:ObjectStoreCheck",),
                      steps=("pytest_streamchaos.stack.s3.install:prepare_steps",
                             "pytest_streamchaos.spark.s3a:prepare_steps"), tables=True),
)}
#: the default checkpoint storage
DEFAULT = next(iter(STORAGES))
#: a storage whose renames the checkpoint gate holds: the fix a refusal of a gate-landed fault names
GATED = next(s.name for s in STORAGES.values() if s.gate)
#: a storage whose renames the preloaded gate holds (this host's files): what a fault that needs more than a
#: held rename (the checkpoint damage, which reads and writes the files there) names
PRELOADED = next(s.name for s in STORAGES.values() if s.preloaded)
#: a storage on this host's file system: the fix a refusal of a fault on the local disk names
ON_HOST = next(s.name for s in STORAGES.values() if s.on_host)


def get(name: str) -> CheckpointStorage:
    """The storage called ``name``; a ``ValueError`` naming every one (:func:`choices_help`) when there is none."""
    try:
        return STORAGES[name]
    except (KeyError, TypeError):
        import difflib

        close = difflib.get_close_matches(str(name), list(STORAGES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"checkpoint={name!r}{hint}: use {choices_help()}") from None


def remote_prefixes() -> tuple[str, ...]:
    """``('hdfs:',)``: the URL prefixes of the storages' services, where a job may name a checkpoint off this host."""
    return tuple(sorted({f"{scheme}:" for s in STORAGES.values() for scheme in s.schemes if of_scheme(scheme)}))


def choices_help() -> str:
    """``'local' (a directory of the run) or 'hdfs' (...)``: the storages for an option's help and error lines."""
    parts = [f"{s.name!r} ({s.help})" for s in STORAGES.values()]
    return ", ".join(parts[:-1]) + " or " + parts[-1]


def of_scheme(scheme: str) -> CheckpointStorage | None:
    """The storage whose service serves URLs of ``scheme`` (``hdfs``), None for this host's (``file``, none) or an
    unknown one."""
    if scheme in ("file", ""):
        return None
    return next((s for s in STORAGES.values() if not s.on_host and scheme in s.schemes), None)


def named_by_url() -> tuple[CheckpointStorage, ...]:
    """The storages whose URLs name a bucket (:attr:`CheckpointStorage.buckets`): a job that names their scheme
    gets their service, whatever its checkpoint's storage."""
    return tuple(s for s in STORAGES.values() if s.buckets)


def reached(checkpoint: str, urls: Iterable[str]) -> list[str]:
    """The names of a run's storages: its checkpoint's, and each whose URLs name a bucket that ``urls`` use."""
    schemes = {u.split("://", 1)[0] for u in urls if "://" in u}
    return [checkpoint, *(s.name for s in named_by_url() if s.name != checkpoint and schemes & set(s.schemes))]


def with_protocol(protocol: type | None) -> CheckpointStorage | None:
    """The storage whose service its faults reach as ``protocol`` (its entry's :attr:`~CheckpointStorage.protocol`:
    what a fault kind's ``store`` names), None for none."""
    return next((s for s in STORAGES.values() if protocol is not None and s.protocol
                 and s.service_protocol() is protocol), None)
