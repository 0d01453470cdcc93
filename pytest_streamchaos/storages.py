"""Where a run's checkpoint can be, as the plugin knows it: one registry, read by the settings
(``--chaos-checkpoint``'s choices and help), the run's arguments (``JobSetup(checkpoint=...)`` checked before
anything starts), the run (which service it asks for, what the job's paths are), the faults (which of them a
storage can serve: the checkpoint gate, a full local disk, the HDFS family) and the observers (which URLs a
checkpoint may be at).

A new storage (S3 on MinIO, say) is one :class:`CheckpointStorage` in :data:`STORAGES` and the folder of its
service: the fixture its ``fixture`` names yields a started service with ``default_fs`` (the URL of its root,
``scheme://authority``), ``filesystem()`` (an fsspec filesystem on it) and ``client_conf()`` (the Hadoop
client settings a job needs to reach it); the job then runs with it as its default filesystem
(:meth:`pytest_streamchaos.observe.storage.RunStorage.on_service`). This module imports nothing of the package
(the settings read it before any stack exists).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckpointStorage:
    """One place a run's checkpoint (and the job's relative paths) can be.

    ``help``: what it is, for the option's help and the refusal lines. ``title``: what it is called in a
    sentence ("the job's paths are on HDFS"). ``fixture``: the pytest fixture that yields its started service
    (None: this host's file system, a directory of the run). ``schemes``: the URL schemes a job's checkpoint
    may use in a run on it (another is a place the run cannot reach). ``gate``: whether the checkpoint gate
    (an ``LD_PRELOAD`` on the JVMs' ``rename``, which sees only this host's files) can hold its renames;
    ``renames``: how it renames instead, for the refusal of what needs the gate."""

    name: str
    help: str
    title: str
    fixture: str | None = None
    schemes: tuple[str, ...] = ("file",)
    gate: bool = True
    renames: str = ""

    @property
    def on_host(self) -> bool:
        """The checkpoint and the job's relative paths are on this host's file system (no service of its own)."""
        return self.fixture is None

    def service(self) -> str:
        """``the stack's HDFS``: what a run on it needs, for messages."""
        return f"the stack's {self.title}"


#: every checkpoint storage by name; the first is the default
STORAGES: dict[str, CheckpointStorage] = {s.name: s for s in (
    CheckpointStorage("local", "a directory of the run", "this host's file system"),
    CheckpointStorage("hdfs", "the stack's NameNode and two DataNodes, started on first use, as the job's default "
                      "filesystem", "HDFS", fixture="hdfs", schemes=("file", "hdfs"), gate=False,
                      renames="a rename is an RPC"),
)}
#: the storages' names, in order: ``--chaos-checkpoint``'s choices and ``JobSetup(checkpoint=...)``'s
NAMES: tuple[str, ...] = tuple(STORAGES)
#: the default checkpoint storage
DEFAULT = NAMES[0]
#: a storage whose renames the checkpoint gate holds: the fix a refusal of a gate-landed fault names
GATED = next(s.name for s in STORAGES.values() if s.gate)
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


def with_fixture(fixture: str) -> CheckpointStorage:
    """The storage the fixture ``fixture`` provides (what that service's faults need the run's checkpoint on)."""
    return next(s for s in STORAGES.values() if s.fixture == fixture)
