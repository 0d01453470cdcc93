"""What an interpreter's pytest-streamchaos is, as JSON on stdout: run by ``tests/chaos/test_wheel.py`` with
the editable install's interpreter and with the clean virtual environment's, which must agree.

Every file of the package (relative path -> SHA-256, ``__pycache__`` left out) and of the ``fixtures/`` the
plugin resolves at run time (``assets.fixture_path()``: the source tree's, or the wheel's data files under
``<venv>/share/pytest-streamchaos/fixtures``), where both are, the version, the entry points, the
requirements (normalised by ``packaging``) and the licence of the installed metadata.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

import pytest_streamchaos
from pytest_streamchaos import assets


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def main() -> None:
    package = Path(pytest_streamchaos.__file__).resolve().parent
    fixtures = assets.fixture_path().resolve()
    dist = metadata.distribution("pytest-streamchaos")
    print(json.dumps({
        "version": pytest_streamchaos.__version__,
        "package_dir": str(package), "fixtures_dir": str(fixtures),
        "package": files(package), "fixtures": files(fixtures),
        "entry_points": sorted(f"{ep.group}: {ep.name} = {ep.value}" for ep in dist.entry_points),
        "requires": sorted(str(Requirement(r)) for r in dist.requires or ()),
        "license": dist.metadata.get("License-Expression"),
    }))


if __name__ == "__main__":
    main()
