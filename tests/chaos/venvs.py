"""Virtual environments a test runs a user's session in (the installed wheel's, another Spark line's): made with
this interpreter's pip, some kept in the machine's cache, their commands run with a clean environment."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from planted import CACHE_HOME

#: the environment of everything but the editable install: no PYTHONPATH, through which a checkout (a worktree's
#: run) would leak into pip's view of the venv (it took the checkout's metadata for the wheel, installed) and
#: into the venv's imports
CLEAN = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(argv: list[str], timeout: float, env: dict[str, str] = CLEAN, **kw) -> subprocess.CompletedProcess:
    """``argv``, its output captured; a failure shows it."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kw)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def venv(where: Path) -> Path:
    """A new virtual environment without pip of its own (no ensurepip needed: Debian's python3 has none
    without python3-venv); this interpreter's pip installs into it. Its Python."""
    run([sys.executable, "-m", "venv", "--without-pip", str(where)], 120)
    return where / "bin" / "python"


def pip_install(where: Path, *args: str, timeout: float) -> None:
    run([sys.executable, "-m", "pip", "--python", str(where / "bin" / "python"), "install", "-q",
         "--disable-pip-version-check", *args], timeout)


def cached_venv(name: str, *requirements: str, timeout: float = 900) -> Path:
    """The Python of a venv with ``requirements`` installed, made once per machine under the cache's ``venvs/name``
    (in a new directory, renamed into place: an interrupted install is never taken for a made one)."""
    home = Path(CACHE_HOME, "pytest-streamchaos", "venvs", name)
    if not (home / "bin" / "python").exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=home.parent))
        try:
            venv(fresh)
            pip_install(fresh, "--no-compile", *requirements, timeout=timeout)
            fresh.rename(home)
        except BaseException:
            shutil.rmtree(fresh, ignore_errors=True)
            raise
    return home / "bin" / "python"


def user_env(home: Path) -> dict[str, str]:
    """The environment of a session in the venv at ``home``: the venv first on PATH, the machine's cache of prepared
    jars and binaries."""
    return {**CLEAN, "XDG_CACHE_HOME": CACHE_HOME, "VIRTUAL_ENV": str(home),
            "PATH": f"{home / 'bin'}:{os.environ['PATH']}"}
