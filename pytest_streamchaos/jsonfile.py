"""The one way the plugin writes a JSON file: the ``--chaos-report`` list, each run's file of
``--chaos-report-dir``, a saved baseline and the cache's markers (resolved jars, the built Toxiproxy)
all read the same (indented, anything not JSON by nature -- a path, a numpy scalar -- as its
``str``). Imports nothing of the package, so every layer may use it."""

from __future__ import annotations

import json
from pathlib import Path


def write_json(path: str | Path, obj: object) -> Path:
    """Write ``obj`` to ``path`` (its directory must exist) and return the path."""
    path = Path(path)
    path.write_text(json.dumps(obj, indent=1, default=str))
    return path
