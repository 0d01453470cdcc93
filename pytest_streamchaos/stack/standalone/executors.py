"""Spark's executors as fault targets: JVMs a worker forks, found in that worker's own process tree
(no scan of the host), each a :class:`~..base.Executor`. A worker in a container is seen from this host
too: its processes are this host's, in another namespace."""

from __future__ import annotations

import os
import signal

import psutil

from pytest_streamchaos.stack.process import descendants

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


class ProcessExecutor:
    """One executor JVM (:class:`~..base.Executor`): its pid is its name in messages and the timeline."""

    def __init__(self, pid: int, app_id: str | None = None) -> None:
        self.pid: int = pid
        self.app_id = app_id

    def __repr__(self) -> str:
        return f"<executor {self.pid} of {self.app_id}>"

    def __str__(self) -> str:
        return str(self.pid)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProcessExecutor) and other.pid == self.pid

    def __hash__(self) -> int:
        return hash(self.pid)

    @property
    def id(self) -> str:
        return str(self.pid)

    @property
    def state(self) -> str | None:
        """psutil's status of the JVM (``running``, ``stopped`` ...), None once it is gone."""
        try:
            st = psutil.Process(self.pid).status()
        except psutil.Error:
            return None
        return None if st == psutil.STATUS_ZOMBIE else st

    @property
    def alive(self) -> bool:
        return self.state is not None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (ProcessLookupError when it is gone)."""
        os.kill(self.pid, sig)

    def processes(self) -> list[int]:
        """The JVM and its children (its Python workers)."""
        return [self.pid, *descendants(self.pid)]


def executors_under(root: int, app_id: str | None = None) -> list[ProcessExecutor]:
    """The live executor JVMs among ``root``'s descendants (of application ``app_id`` only, when given)."""
    found = []
    for pid in descendants(root):
        try:
            proc = psutil.Process(pid)
            cmd = proc.cmdline()
            if EXECUTOR_CLASS not in cmd or proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except psutil.Error:
            continue
        app = _arg(cmd, "--app-id")
        if app_id is None or app == app_id:
            found.append(ProcessExecutor(pid, app))
    return found


def _arg(cmd: list[str], flag: str) -> str | None:
    try:
        return cmd[cmd.index(flag) + 1]
    except (ValueError, IndexError):
        return None
