"""What a saved baseline records about the machine and versions, so that a difference between two
sessions can be explained (another Spark, another JVM, another commit) before it is blamed on the job.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_streamchaos.machine import commands


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def spark_version() -> str | None:
    """``pyspark.__version__`` (read from the installed distribution: importing pyspark costs ~1 s)."""
    return _version("pyspark")


def java_version(java_home: str = "") -> str | None:
    """The first line of ``java -version`` (of ``java_home`` if given, else ``$JAVA_HOME``, else PATH)."""
    home = java_home or os.environ.get("JAVA_HOME", "")
    java = str(Path(home) / "bin" / "java") if home else "java"
    try:
        out = commands.completed([java, "-version"], timeout=20)
    except commands.CommandError:
        return None
    text = (out.stderr or out.stdout).strip().splitlines()
    return text[0] if text else None


def git_commit(root: Path) -> dict[str, object] | None:
    """The commit checked out in ``root`` and whether the work tree has uncommitted changes."""
    git = ["git", "-C", str(root)]
    try:
        sha = commands.completed([*git, "rev-parse", "HEAD"], timeout=10)
        if sha.returncode != 0:
            return None
        dirty = commands.completed([*git, "status", "--porcelain", "--untracked-files=no"], timeout=10)
        branch = commands.completed([*git, "rev-parse", "--abbrev-ref", "HEAD"], timeout=10)
    except commands.CommandError:
        return None
    return {"id": sha.stdout.strip(), "branch": branch.stdout.strip() or None, "dirty": bool(dirty.stdout.strip())}


def environment(root: Path, java_home: str = "") -> dict[str, object]:
    """Everything session-wide that can explain a difference between two saved sessions."""
    return {
        "datetime": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "plugin": _version("pytest-streamchaos"),
        "spark": spark_version(),
        "java": java_version(java_home),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.node(),
        "cores": os.cpu_count(),
        "argv": sys.argv[1:],
        "commit": git_commit(root),
    }


#: environment keys worth naming when they differ between two sessions
EXPLAINING = ("plugin", "spark", "java", "python", "cores", "machine")


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """``key: before -> after`` for each explaining key (and the commit) that differs."""
    lines = [f"{k}: {before.get(k)} -> {after.get(k)}" for k in EXPLAINING if before.get(k) != after.get(k)]
    cb, ca = before.get("commit") or {}, after.get("commit") or {}
    if cb.get("id") != ca.get("id") or cb.get("dirty") != ca.get("dirty"):
        lines.append(f"commit: {_commit(cb)} -> {_commit(ca)}")
    return lines


def _commit(c: dict[str, Any]) -> str:
    if not c.get("id"):
        return "none"
    return c["id"][:10] + (" (uncommitted changes)" if c.get("dirty") else "")
