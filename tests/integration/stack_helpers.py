"""Helpers of the stack's integration tests: the processes left under a directory (HDFS, YARN), an inner pytest
to SIGKILL (the reaper's tests)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest


def processes_under(workdir: Path) -> list[int]:
    """PIDs of live processes whose command line names ``workdir`` (a cluster's JVMs and YARN's containers do)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and str(workdir) in " ".join(p.info["cmdline"] or ()):
                found.append(p.pid)
        except psutil.Error:
            continue
    return found


def inner_pytest(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 *args: str) -> tuple[subprocess.Popen[bytes], Callable[[], str | None]]:
    """pytest ``args`` in pytester's folder, in a session of its own (a SIGKILL of it is pytest's death, which its
    reaper watches for), its output in ``tmp_path/inner.out``; and a condition to poll: the record its test writes
    to ``$SC_RECORD`` (``tmp_path/record.json``) once there, an AssertionError with its output if it exits first."""
    record = tmp_path / "record.json"
    monkeypatch.setenv("SC_RECORD", str(record))  # pytester.popen builds the child env from os.environ
    out_path = tmp_path / "inner.out"
    with open(out_path, "wb") as out:
        inner = pytester.popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", *args],
                               start_new_session=True, stdout=out, stderr=subprocess.STDOUT)

    def recorded() -> str | None:
        if inner.poll() is not None:
            raise AssertionError(f"inner pytest exited early:\n{out_path.read_text()[-3000:]}")
        return record.read_text() if record.exists() else None

    return inner, recorded
