"""The reference runs kept across sessions, in pytest's cache (as Hypothesis keeps its database and pytest its
``lastfailed``): a second session whose reference has the same key (:mod:`.reference_key`) reuses it with
no run at all.

Kept under ``config.cache.mkdir("streamchaos-reference")`` (``--cache-clear`` drops it, ``-p
no:cacheprovider`` turns it off), two files per key::

    <key>.json          {"schema": 1, "key": ..., "plugin": "0.2.0", "made_at": 1764410520.3, "seconds": 251.0,
                         "counts": [5267], "origin": 1764410270.0, "pacing": {...}, "parts": {...},
                         "outputs": [{"name": "file:/tmp/out", "rows": 2230}], "rows": "<key>.rows.json.gz",
                         "tagged": false}
    <key>.rows.json.gz  {"first": [<output>...], "second": [<output>...]}   (gzip'd JSON)

The head holds what the compared run needs (the input's size per topic, the origin of its event times, the
pacing) and what the line about it says (when and in how long it was made, the key's parts to name what
changed); the rows file the two fault-free runs' rows of every output
(:class:`~pytest_streamchaos.facts.OutputRows`), compressed: two runs of a million rows of three columns take
about 10 MB. A value JSON has no form for (a table's timestamp, decimal, bytes) is kept tagged and read back
as the same value (``tagged``: plain rows are read without looking for tags). The rows file is written first
and the head last, each whole or not at all, so that a reader never takes half an entry; an entry of another
schema, or one that cannot be read, is not used and said so (:meth:`ReferenceCache.load`), never a crash. At
most :data:`KEEP_PER_JOB` entries of one job are kept (the newest).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import gzip
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos.deprecation import installed_version
from pytest_streamchaos.facts import OutputRows
from pytest_streamchaos.runner.reference_key import Parts, RefKey, changes

#: the schema of an entry; an entry of another is made again (its fields may mean something else there)
SCHEMA = 1
#: the pytest cache directory the references live in
CACHE_DIR = "streamchaos-reference"
#: entries kept per job (its file name): the newest, older ones are removed when a new one is kept
KEEP_PER_JOB = 8
#: the tag of a value JSON has no form for
_TAG = "$t"


@dataclass
class Stored:
    """A reference as kept: the two fault-free runs' rows per output, the input (its size per topic, the
    origin of its event times), the pacing it was sent at, when it was made and in how long."""

    key: str
    parts: Parts
    first: list[OutputRows]
    second: list[OutputRows]
    counts: tuple[int, ...]
    origin: float | None
    seconds: float
    made_at: float
    pacing: dict[str, float] = field(default_factory=dict)


class ReferenceCache:
    """The references kept in ``directory`` (None: nothing kept across sessions, :attr:`off` says why)."""

    def __init__(self, directory: Path | Callable[[], Path] | None, off: str = "") -> None:
        self._directory = directory  # a callable: made on first use (a session without a reference makes none)
        self.off = off

    @classmethod
    def for_config(cls, config: pytest.Config) -> ReferenceCache:
        cache = getattr(config, "cache", None)
        if cache is None:
            return cls(None, "pytest's cache is off (-p no:cacheprovider)")
        return cls(lambda: Path(cache.mkdir(CACHE_DIR)))

    @property
    def directory(self) -> Path | None:
        if callable(self._directory):
            self._directory = self._directory()
        return self._directory

    @property
    def on(self) -> bool:
        return self._directory is not None

    def _head_path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{key}.json"

    def load(self, key: RefKey) -> tuple[Stored | None, str]:
        """The entry of ``key``, or None and why not (no entry -- with what changed since this job's nearest
        one --, another schema, unreadable)."""
        if self.directory is None:
            return None, self.off
        path = self._head_path(key.key)
        if not path.exists():
            return None, self._missing(key)
        try:
            head = json.loads(path.read_text())
            if head.get("schema") != SCHEMA:
                return None, (f"the cached entry {path.name} is of schema {head.get('schema')!r}, this plugin reads "
                              f"{SCHEMA}")
            if head["key"] != key.key:
                raise ValueError(f"it holds key {head['key']!r}")
            with gzip.open(self.directory / head["rows"], "rt") as f:
                rows = json.load(f, object_hook=_untag if head.get("tagged", True) else None)
            return _stored(head, rows), ""
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            return None, f"the cached entry {path.name} cannot be read ({type(exc).__name__}: {exc})"

    def _missing(self, key: RefKey) -> str:
        """Why there is no entry: the first of this job here, or what changed since its nearest entry."""
        job = next(iter(key.parts.get("job", {})), "")
        near: tuple[int, float, list[str]] | None = None
        for head in self._heads():
            if job not in head.get("parts", {}).get("job", {}):
                continue
            diff = changes(head["parts"], key.parts)
            if diff and (near is None or (len(diff), -head["made_at"]) < (near[0], -near[1])):
                near = (len(diff), float(head["made_at"]), diff)
        if near is None:
            return f"no entry in the cache (the first reference of {job} with this cache)"
        shown = ", ".join(near[2][:4]) + (f" and {len(near[2]) - 4} more" if len(near[2]) > 4 else "")
        return f"key changed since the one made {when(near[1])}: {shown}"

    def _heads(self) -> list[dict[str, Any]]:
        out = []
        folder = self.directory
        for path in sorted(p for p in folder.iterdir() if p.suffix == ".json") if folder and folder.is_dir() else []:
            try:
                head = json.loads(path.read_text())
                if isinstance(head, dict) and head.get("schema") == SCHEMA:
                    out.append({**head, "_path": path})
            except (OSError, ValueError):
                continue
        return out

    def save(self, stored: Stored) -> str | None:
        """Keep ``stored`` (the rows first, then the head, each replaced whole); None, or why it was not kept."""
        if self.directory is None:
            return self.off
        rows_name = f"{stored.key}.rows.json.gz"
        try:
            text, tagged = _dumps({"first": [_output(o) for o in stored.first],
                                   "second": [_output(o) for o in stored.second]})
            head = {"schema": SCHEMA, "key": stored.key, "plugin": installed_version(), "made_at": stored.made_at,
                    "seconds": stored.seconds, "counts": list(stored.counts), "origin": stored.origin,
                    "pacing": stored.pacing, "parts": stored.parts, "rows": rows_name, "tagged": tagged,
                    "outputs": [{"name": o.name, "rows": len(o.rows)} for o in stored.first]}
            self.directory.mkdir(parents=True, exist_ok=True)
            _write(self.directory / rows_name, text, compressed=True)
            _write(self._head_path(stored.key), json.dumps(head, indent=1), compressed=False)
        except (OSError, ValueError, TypeError) as exc:
            return f"not kept: {type(exc).__name__}: {exc}"
        self._prune(next(iter(stored.parts.get("job", {})), ""))
        return None

    def _prune(self, job: str) -> None:
        """This job's entries beyond the newest :data:`KEEP_PER_JOB`, removed."""
        mine = [m for m in self._heads() if job in m.get("parts", {}).get("job", {})]
        for head in sorted(mine, key=lambda m: -float(m.get("made_at", 0)))[KEEP_PER_JOB:]:
            for path in (head["_path"], head["_path"].parent / str(head.get("rows", ""))):
                if path.is_file():
                    path.unlink(missing_ok=True)


def when(t: float) -> str:
    """``2026-11-29 10:02``, local time."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _write(path: Path, text: str, compressed: bool) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if compressed:
            with gzip.open(tmp, "wt", compresslevel=5) as f:
                f.write(text)
        else:
            tmp.write_text(text)
        tmp.replace(path)  # a reader never sees half a file
    finally:
        tmp.unlink(missing_ok=True)


def _stored(head: Mapping[str, Any], rows: Mapping[str, Any]) -> Stored:
    return Stored(key=str(head["key"]), parts=head["parts"], first=[_rows(o) for o in rows["first"]],
                  second=[_rows(o) for o in rows["second"]], counts=tuple(int(c) for c in head["counts"]),
                  origin=None if head["origin"] is None else float(head["origin"]), seconds=float(head["seconds"]),
                  made_at=float(head["made_at"]), pacing=dict(head.get("pacing") or {}))


# -- rows as JSON -----------------------------------------------------------------------------------------

def _output(out: OutputRows) -> dict[str, object]:
    return {"name": out.name, "rows": list(out.rows), "keys": None if out.keys is None else list(out.keys),
            "table": out.table}


def _rows(doc: Mapping[str, Any]) -> OutputRows:
    keys = doc.get("keys")
    return OutputRows(str(doc["name"]), list(doc["rows"]), None if keys is None else list(keys), bool(doc["table"]))


def _dumps(doc: object) -> tuple[str, bool]:
    """``doc`` as JSON, and whether values in it are tagged: a value JSON has no form for (a table's timestamp,
    decimal, bytes) is (:func:`_tag`), read back as itself by :func:`_untag`. Plain rows (the common case: JSON
    from Kafka or a file sink) take the fast path both ways, unless one holds a key spelled like the tag (it is
    escaped then)."""
    try:
        text = json.dumps(doc)
        if f'"{_TAG}"' not in text:
            return text, False
    except (TypeError, ValueError):
        pass
    return json.dumps(_tag(doc)), True


def _tag(v: object) -> Any:
    if isinstance(v, bool | int | float | str) or v is None:
        return v
    if isinstance(v, dict):
        if _TAG in v:  # a row's own dict spelled like a tag: as pairs, which no hook reads as a tag
            return {_TAG: "dict", "v": [[str(k), _tag(x)] for k, x in v.items()]}
        return {str(k): _tag(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_tag(x) for x in v]
    if isinstance(v, dt.datetime):
        return {_TAG: "datetime", "v": v.isoformat()}
    if isinstance(v, dt.date):
        return {_TAG: "date", "v": v.isoformat()}
    if isinstance(v, dt.time):
        return {_TAG: "time", "v": v.isoformat()}
    if isinstance(v, dt.timedelta):
        return {_TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]}
    if isinstance(v, decimal.Decimal):
        return {_TAG: "decimal", "v": str(v)}
    if isinstance(v, bytes | bytearray):
        return {_TAG: "bytes", "v": base64.b64encode(bytes(v)).decode()}
    return {_TAG: "str", "v": str(v)}  # compared as its text (analysis.reference): kept as that text


_UNTAG: dict[str, Callable[[Any], Any]] = {
    "dict": lambda v: {k: x for k, x in v}, "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat, "timedelta": lambda v: dt.timedelta(days=v[0], seconds=v[1], microseconds=v[2]),
    "decimal": decimal.Decimal, "bytes": base64.b64decode, "str": str}


def _untag(d: dict[str, Any]) -> Any:
    if len(d) == 2 and _TAG in d and "v" in d and d[_TAG] in _UNTAG:
        return _UNTAG[d[_TAG]](d["v"])
    return d
