"""A streaming query's checkpoint: found without being told where it is, and watched while the job runs.

A user's job names its checkpoint itself: a relative ``checkpointLocation`` (resolved against the
driver's working directory, which the plugin makes fresh per run, or against the HDFS home of the run's
user when the default filesystem is HDFS), an absolute path or ``hdfs://`` URL in its code or argv, or
``spark.sql.streaming.checkpointLocation``. Spark writes ``<checkpoint>/metadata`` (JSON with the query
id) when the query starts, then ``sources/``, ``offsets/`` and ``commits/``. So the checkpoint of a
started query is a directory whose ``metadata`` names that query's id; :class:`CheckpointWatcher` then
answers "what is planned / committed now" on the local disk or HDFS alike (:mod:`.storage`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_streamchaos import storages
from pytest_streamchaos.observe.storage import Place, locate
from pytest_streamchaos.poll import poll

#: directories never worth descending into while looking for checkpoints
_SKIP = {"eventlog", "conf", "__pycache__", "_spark_metadata", "offsets", "commits", "sources", "state", ".git"}
#: prefixes of Spark's scratch directories under ``java.io.tmpdir`` (a query without a checkpoint
#: location gets ``temporary-<uuid>`` there, which must still be found)
_SKIP_PREFIXES = ("blockmgr-", "spark-", "liblz4", "snappy", "hsperf")

Where = Place | str | os.PathLike


def _place(where: Where) -> Place:
    return where if isinstance(where, Place) else locate(where)


def checkpoint_query_id(where: Where) -> str | None:
    """The query id recorded in ``<where>/metadata``, or None if it is not a checkpoint (yet)."""
    text = _place(where).child("metadata").read_text()
    try:
        return str(json.loads(text.splitlines()[0])["id"]) if text else None
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def find_checkpoints(roots: Iterable[Where], max_depth: int = 6) -> dict[str, Place]:
    """Every checkpoint under ``roots`` (a root may itself be one): ``{query id: place}``.

    The walk is bounded (``max_depth``) and skips Spark's own bulky subdirectories, so it stays cheap
    to poll while a run warms up."""
    found: dict[str, Place] = {}
    seen: set[str] = set()
    for root in roots:
        place = _place(root)
        if place.is_dir():
            _walk(place, max_depth, found, seen)
    return found


def _walk(d: Place, depth: int, found: dict[str, Place], seen: set[str]) -> None:
    key = str(d) if d.scheme != "file" else os.path.realpath(d.path)
    if key in seen:
        return
    seen.add(key)
    qid = checkpoint_query_id(d)
    if qid is not None:
        found.setdefault(qid, d)
        return
    if depth <= 0:
        return
    for name in d.names():
        if name not in _SKIP and not name.startswith(".") and not name.startswith(_SKIP_PREFIXES):
            child = d.child(name)
            if child.is_dir():
                _walk(child, depth - 1, found, seen)


def paths_in(args: Iterable[str], cwd: Path) -> list[str]:
    """Absolute directories and URLs of a storage's service (``hdfs://``) named in a job's argv or conf values
    (candidates for its checkpoint)."""
    out: list[str] = []
    remote = tuple(f"{prefix}//" for prefix in storages.remote_prefixes())
    for a in args:
        for part in str(a).split(","):
            if part.startswith(remote):
                out.append(part.rstrip("/"))
                continue
            part = part.removeprefix("file://").removeprefix("file:")
            if part.startswith("/") and len(part) > 1:
                p = Path(part)
                p = p if p.is_dir() or not p.exists() else p.parent
                if p != Path("/") and p != cwd:
                    out.append(str(p))
    return out


#: a checkpoint location the job's code names: ``.option("checkpointLocation", X)``, ``.start(...,
#: checkpointLocation=X)``, ``{"checkpointLocation": X}`` or the session-wide
#: ``.config("spark.sql.streaming.checkpointLocation", X)``; X a string literal or a bare name
_LOCATION = re.compile(r"""(?:["'](?:spark\.sql\.streaming\.)?checkpointLocation["']\s*[,:]|\bcheckpointLocation\s*=)"""
                       r"""\s*(?:[rR]?["']([^"'\n]+)["']|([A-Za-z_]\w*)\b)""")
_CONSTANT = r"""^\s*{name}\s*(?::\s*\w+\s*)?=\s*[rR]?["']([^"'\n]+)["']"""


def checkpoint_literals(source: str, where: str = "") -> list[tuple[str, str]]:
    """The checkpoint locations a job's source names as literals -- directly, or through a module-level
    constant (``CHECKPOINT = "/tmp/x"``) -- as ``(location, "<where>:<line>")``, in order. What the job
    computes at run time (an f-string, ``os.path.join``) is not seen."""
    found: list[tuple[str, str]] = []
    for n, line in enumerate(source.splitlines(), 1):
        for m in _LOCATION.finditer(line):
            value = m.group(1)
            if value is None:
                const = re.search(_CONSTANT.format(name=re.escape(m.group(2))), source, re.MULTILINE)
                value = const.group(1) if const else None
            if value is not None and (value, f"{where}:{n}") not in found:
                found.append((value, f"{where}:{n}"))
    return found


#: Spark's own line when a query starts (``ResolveWriteToStream``, logged at INFO; the plugin's driver logging
#: keeps it): ``Checkpoint root /tmp/x resolved to file:/tmp/x.``
_RESOLVED = re.compile(r"Checkpoint root (.+?) resolved to (\S+?)\.?$", re.MULTILINE)


def logged_checkpoints(log_text: str) -> list[str]:
    """The checkpoint roots Spark's driver says it resolved (``file:/...`` or ``hdfs://...``), in order: a
    query's checkpoint wherever the job built its path -- in a helper module, from its environment, at
    run time -- with nothing to read in its code."""
    return list(dict.fromkeys(m.group(2) for m in _RESOLVED.finditer(log_text)))


def is_checkpoint(place: Where) -> bool:
    """Whether ``place`` holds a streaming query's checkpoint (its ``metadata``, or an offsets or commits log)."""
    p = _place(place)
    return p.child("metadata").mtime() is not None or bool(p.child("offsets").names() or p.child("commits").names())


class CheckpointWatcher:
    """Read-only view of a streaming query's checkpoint; every call re-reads it (local disk or HDFS).

    ``offsets/N`` exists once batch N is planned (its source offsets written ahead), ``commits/N``
    once batch N's sink finished. Between the two, the output of batch N may be visible while a
    restart would re-run it -- the window in which at-least-once sinks duplicate.
    """

    def __init__(self, checkpoint: Where) -> None:
        self.place = _place(checkpoint)

    @property
    def checkpoint_dir(self) -> str:
        """Where the checkpoint is (a path, or an ``hdfs://`` URL), for messages and the run's JSON."""
        return str(self.place)

    def point_at(self, checkpoint: Where) -> None:
        """Watch another checkpoint (a restarted driver's new query)."""
        self.place = _place(checkpoint)

    def _ids(self, sub: str) -> list[int]:
        # Only final files: Spark writes ``.N.<uuid>.tmp`` / ``.N.crc`` beside them.
        return sorted(int(n) for n in self.place.child(sub).names() if n.isdigit())

    def offset_batches(self) -> list[int]:
        """Batch ids with an offsets file (planned)."""
        return self._ids("offsets")

    def committed_batches(self) -> list[int]:
        """Batch ids with a commit file (finished)."""
        return self._ids("commits")

    def latest_offset_batch(self) -> int | None:
        """The newest planned batch id, or None."""
        ids = self.offset_batches()
        return ids[-1] if ids else None

    def latest_committed_batch(self) -> int | None:
        """The newest committed batch id, or None."""
        ids = self.committed_batches()
        return ids[-1] if ids else None

    def uncommitted_batch(self) -> int | None:
        """The planned batch that is not committed yet (at most one in micro-batch mode), or None."""
        planned, done = self.latest_offset_batch(), self.latest_committed_batch()
        if planned is None or (done is not None and done >= planned):
            return None
        return planned

    def commit_time(self, batch_id: int) -> float | None:
        """When ``commits/<batch_id>`` was written (epoch seconds), or None."""
        return self.place.child("commits", str(batch_id)).mtime()

    def planned_time(self, batch_id: int) -> float | None:
        """When ``offsets/<batch_id>`` was written (the batch was planned), or None."""
        return self.place.child("offsets", str(batch_id)).mtime()

    def starting_offsets_written(self) -> bool:
        """The query's sources fixed where they start (Spark's Kafka source writes ``sources/0/0``
        before the first micro-batch is planned), or a batch was planned already."""
        sources = self.place.child("sources")
        return any("0" in sources.child(n).names() for n in sources.names()) or bool(self.offset_batches())

    def names(self, *parts: str) -> list[str]:
        """The names in a directory of the checkpoint (hidden files too), [] when it is not there."""
        return self.place.child(*parts).names()

    def size(self, *parts: str) -> int | None:
        """The size of a file of the checkpoint in bytes, None when it is not there."""
        try:
            return int(self.place.fs.size(self.place.child(*parts).path))
        except (FileNotFoundError, OSError):
            return None

    def read(self, *parts: str) -> bytes | None:
        return self.place.child(*parts).read_bytes()

    def remove(self, *parts: str) -> None:
        """Delete a file of the checkpoint (a checkpoint fault's damage); nothing when it is not there."""
        path = self.place.child(*parts).path
        if self.place.fs.exists(path):
            self.place.fs.rm(path)

    def write(self, *parts: str, data: bytes) -> None:
        """Write a file of the checkpoint (a checkpoint fault's damage: a truncated or a stray file)."""
        with self.place.fs.open(self.place.child(*parts).path, "wb") as f:
            f.write(data)

    def offsets(self, batch_id: int) -> dict[str, Any] | None:
        """The offsets log entry of a batch: ``{"metadata": {...}, "sources": [offset per source]}``.

        A source offset is its JSON value when it parses, else the raw string; ``None`` for ``-``
        (a source without an offset yet). Returns None when the batch has no offsets file.
        """
        text = self.place.child("offsets", str(batch_id)).read_text()
        if text is None:
            return None
        lines = text.splitlines()
        if not lines or not lines[0].startswith("v"):
            raise ValueError(f"{self.checkpoint_dir}/offsets/{batch_id}: unknown format (first line {lines[:1]})")
        metadata = json.loads(lines[1]) if len(lines) > 1 and lines[1].strip() else {}
        sources: list[Any] = []
        for raw in lines[2:]:
            if raw == "-":
                sources.append(None)
                continue
            try:
                sources.append(json.loads(raw))
            except ValueError:
                sources.append(raw)
        return {"metadata": metadata, "sources": sources}

    def wait_for_commit(self, batch_id: int, timeout: float, interval: float = 0.2) -> None:
        """Poll until batch ``batch_id`` (or a later one) is committed; ``TimeoutError`` otherwise."""
        seen: list[int | None] = [None]

        def committed() -> bool:
            done = seen[0] = self.latest_committed_batch()
            return done is not None and done >= batch_id

        poll(committed, timeout, interval=interval, on_timeout=lambda _: TimeoutError(
            f"timed out after {timeout:.0f}s waiting for batch {batch_id} to be committed in "
            f"{self.checkpoint_dir}; last committed {seen[0]}, last planned {self.latest_offset_batch()}"))

    def state_store(self) -> StateStore | None:
        """The query's state store as its checkpoint shows it (None: the query keeps no state): the
        provider Spark recorded in the newest offsets entry, and which files its versions are."""
        state = self.place.child("state")
        kinds = _version_kinds(state, depth=4)
        if not kinds:
            return None
        latest = self.latest_offset_batch()
        entry = self.offsets(latest) if latest is not None else None
        conf = ((entry or {}).get("metadata") or {}).get("conf") or {}
        provider = conf.get(PROVIDER_CONF, HDFS_BACKED)
        return StateStore(provider=str(provider), files=tuple(sorted(k.lstrip("_") for k in kinds)),
                          format_v2=any(k.startswith("_") for k in kinds))


#: where Spark records a query's state store provider (in every offsets entry's metadata)
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
HDFS_BACKED = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
#: a state store version's file: V.delta (HDFS-backed), V.snapshot, V.changelog / V.zip (RocksDB), with
#: state checkpoint format v2 V_<unique id>.<ext>
_VERSION_FILE = re.compile(r"^\d+(_[^./]+)?\.(delta|snapshot|changelog|zip)$")


@dataclass(frozen=True)
class StateStore:
    """A query's state store: its provider class, which files its versions are written as (``delta``,
    ``snapshot``, ``changelog``, ``zip``) and whether they carry a unique id (state checkpoint format v2)."""

    provider: str
    files: tuple[str, ...]
    format_v2: bool = False

    def describe(self) -> str:
        """``RocksDB (changelog checkpointing; versions as changelog, zip)``."""
        name = self.provider.rsplit(".", 1)[-1].removesuffix("StateStoreProvider") or self.provider
        rocksdb = "RocksDB, changelog checkpointing" if "changelog" in self.files else "RocksDB"
        how = {"HDFSBacked": "Spark's default, HDFS-backed", "RocksDB": rocksdb}.get(name, name)
        v2 = ", checkpoint format v2" if self.format_v2 else ""
        return f"{how}{v2} (versions written as {', '.join(f'.{f}' for f in self.files)})"

    def to_dict(self) -> dict[str, object]:
        return {"provider": self.provider, "files": list(self.files), "format_v2": self.format_v2}


def _version_kinds(d: Place, depth: int) -> set[str]:
    """The kinds of state store version files under ``d`` (``delta``, ``_changelog`` for a v2 one, ...),
    looking ``depth`` directories down; at most a few partitions of each operator are read."""
    kinds: set[str] = set()
    names = d.names()
    for name in names:
        m = _VERSION_FILE.match(name)
        if m:
            kinds.add(("_" if m.group(1) else "") + m.group(2))
    if depth > 0:
        subdirs = [n for n in names if not _VERSION_FILE.match(n) and not n.startswith((".", "_")) and n != "SSTs"]
        for name in subdirs[:4]:
            kinds |= _version_kinds(d.child(name), depth - 1)
    return kinds
