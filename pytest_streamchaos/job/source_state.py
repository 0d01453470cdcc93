"""What Spark's Kafka connector persists about a query's start, emulated for the Python source.

Spark's connector writes the resolved initial offsets to the checkpoint (``sources/0/0``) before the
first batch, so a driver restarted before its first commit resumes from the *same* offsets (with
``startingOffsets=latest``, records produced in between are not skipped). The Python Data Source API
gives a source no checkpoint path, so when ``STREAMCHAOS_SOURCE_STATE_DIR`` is set (the harness sets
it per run) the resolved offsets are kept there, in ``initial-<key>.json``, keyed by the bootstrap
servers, the subscription and the starting spec, and reused on the next start. The file appears the
moment the initial offsets are fixed: :func:`read_initial_offsets` lets the harness start its load
only after that. Job-side module: imports nothing of the harness.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

#: directory where the Python Kafka source keeps its initial offsets (set by the harness per run)
ENV_SOURCE_STATE_DIR = "STREAMCHAOS_SOURCE_STATE_DIR"

Offsets = dict[str, dict[str, int]]


def state_key(bootstrap: str, subscription: Any, starting: str) -> str:
    """A stable key of (bootstrap servers, subscription spec, starting spec)."""
    blob = json.dumps([bootstrap, subscription, starting], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def state_dir() -> Path | None:
    """The state directory from the environment, or None (then nothing is persisted)."""
    value = os.environ.get(ENV_SOURCE_STATE_DIR)
    return Path(value) if value else None


def load_initial(directory: Path, key: str) -> Offsets | None:
    """The offsets saved under ``key`` by an earlier start, or None."""
    try:
        return json.loads((directory / f"initial-{key}.json").read_text())["offsets"]
    except (FileNotFoundError, ValueError, KeyError):
        return None


def save_initial(directory: Path, key: str, offsets: Offsets) -> Path:
    """Write ``initial-<key>.json`` atomically (a reader never sees half a file)."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = {"topics": sorted(offsets), "offsets": offsets, "t": time.time()}
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".initial-", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    target = directory / f"initial-{key}.json"
    os.replace(tmp, target)
    return target


def read_initial_offsets(state_dir: str | os.PathLike) -> list[dict]:
    """Every ``initial-*.json`` in ``state_dir``: ``[{"topics", "offsets", "t"}, ...]`` oldest first.

    Empty while no query's initial offsets are fixed yet (or the directory does not exist)."""
    docs = []
    for path in sorted(Path(state_dir).glob("initial-*.json")):
        try:
            docs.append(json.loads(path.read_text()))
        except (FileNotFoundError, ValueError):
            continue
    return sorted(docs, key=lambda d: d.get("t", 0))
