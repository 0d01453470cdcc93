"""The stack's assets in the top-level ``fixtures/`` folder: config templates, the shim's source.

``fixtures/`` is not package code. It is found next to the package in a source tree or an editable
install, and under ``<prefix>/share/pytest-streamchaos/fixtures/`` after a normal install (the
data files of ``pyproject.toml``). Imports nothing of the package.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

#: where a normal install puts the fixtures, below an installation prefix
SHARE = Path("share", "pytest-streamchaos", "fixtures")


def fixture_roots() -> list[Path]:
    """Where ``fixtures/`` may be, first match wins: the source tree, then the install prefixes."""
    roots = [Path(__file__).resolve().parent.parent / "fixtures"]
    for prefix in (sysconfig.get_path("data"), sys.prefix, sys.exec_prefix, getattr(site, "USER_BASE", None)):
        if prefix:
            roots.append(Path(prefix) / SHARE)
    return list(dict.fromkeys(roots))


def fixture_path(*parts: str) -> Path:
    """The path of ``fixtures/<parts...>`` (a file or a folder); ``FileNotFoundError`` naming the
    places looked at and the fix when it is nowhere."""
    roots = fixture_roots()
    for root in roots:
        path = root.joinpath(*parts)
        if path.exists():
            return path
    raise FileNotFoundError(
        f"fixtures/{'/'.join(parts)} of pytest-streamchaos not found (looked in "
        f"{', '.join(str(r) for r in roots)}); reinstall pytest-streamchaos (pip install pytest-streamchaos, "
        "or pip install -e . from its source tree)")


def read_fixture(*parts: str) -> str:
    """The text of ``fixtures/<parts...>``."""
    return fixture_path(*parts).read_text()


def cache_dir() -> Path:
    """Where what is built from the fixtures is kept, per machine (``$XDG_CACHE_HOME`` or
    ``~/.cache``, then ``pytest-streamchaos``): the shim jar, the CDS archives."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-streamchaos"
