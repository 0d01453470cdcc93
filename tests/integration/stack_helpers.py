"""Helpers of the stack's integration tests (HDFS, YARN): the processes left under a directory."""

from __future__ import annotations

from pathlib import Path

import psutil


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
