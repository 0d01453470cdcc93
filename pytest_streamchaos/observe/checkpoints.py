"""Find a streaming query's checkpoint without being told where it is.

A user's job names its checkpoint itself: a relative ``checkpointLocation`` (resolved against the
driver's working directory, which the plugin makes fresh per run), an absolute path in its code or
argv, or ``spark.sql.streaming.checkpointLocation``. Spark writes ``<checkpoint>/metadata`` (JSON with
the query id) when the query starts, then ``offsets/`` and ``commits/``. So the checkpoint of a
started query is a directory whose ``metadata`` names that query's id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

#: directories never worth descending into while looking for checkpoints
_SKIP = {"eventlog", "conf", "__pycache__", "_spark_metadata", "offsets", "commits", "sources", "state", ".git"}
#: prefixes of Spark's scratch directories under ``java.io.tmpdir`` (a query without a checkpoint
#: location gets ``temporary-<uuid>`` there, which must still be found)
_SKIP_PREFIXES = ("blockmgr-", "spark-", "liblz4", "snappy", "hsperf")


def checkpoint_query_id(path: Path) -> str | None:
    """The query id recorded in ``path/metadata``, or None if ``path`` is not a checkpoint (yet)."""
    try:
        first = (path / "metadata").read_text().splitlines()[0]
        return str(json.loads(first)["id"])
    except (OSError, IndexError, ValueError, KeyError, TypeError):
        return None


def find_checkpoints(roots: Iterable[str | os.PathLike], max_depth: int = 6) -> dict[str, Path]:
    """Every checkpoint under ``roots`` (a root may itself be one): ``{query id: directory}``.

    The walk is bounded (``max_depth``) and skips Spark's own bulky subdirectories, so it stays cheap
    to poll while a run warms up."""
    found: dict[str, Path] = {}
    seen: set[Path] = set()
    for root in roots:
        p = Path(str(root).removeprefix("file://").removeprefix("file:"))
        if p.is_dir():
            _walk(p.resolve(), max_depth, found, seen)
    return found


def _walk(d: Path, depth: int, found: dict[str, Path], seen: set[Path]) -> None:
    if d in seen:
        return
    seen.add(d)
    qid = checkpoint_query_id(d)
    if qid is not None:
        found.setdefault(qid, d)
        return
    if depth <= 0:
        return
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    for e in entries:
        if (e.is_dir(follow_symlinks=False) and e.name not in _SKIP and not e.name.startswith(".")
                and not e.name.startswith(_SKIP_PREFIXES)):
            _walk(Path(e.path), depth - 1, found, seen)


def paths_in(args: Iterable[str], cwd: Path) -> list[Path]:
    """Absolute directories named in a job's argv or conf values (candidates for its checkpoint)."""
    out = []
    for a in args:
        for part in str(a).split(","):
            part = part.removeprefix("file://").removeprefix("file:")
            if part.startswith("/") and len(part) > 1:
                p = Path(part)
                out.append(p if p.is_dir() or not p.exists() else p.parent)
    return [p for p in out if p != Path("/") and p != cwd]
