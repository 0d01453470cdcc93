"""The ``local`` placement: every daemon a process of this host, bound to 127.0.0.1 (:mod:`..placement`).

A daemon of the system under test starts in the job's group (:mod:`..jobgroup`): faults tell its
connections from the harness's by the group's mark, and a node that needs its own connections told apart
(a Kafka broker, for a cut between brokers) starts in a child group with a mark of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import psutil

from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.stack.base import LinkScope
from pytest_streamchaos.stack.host import Host, current
from pytest_streamchaos.stack.jobgroup import HostScope
from pytest_streamchaos.stack.process import Daemon, DaemonProcess, ManagedProcess


class LocalPlacement:
    """Daemons as processes of this host (see the module docstring)."""

    shares_host_network = True
    driver_host = HOST

    def __init__(self, host: Host | None = None) -> None:
        self.host = host or current()

    @property
    def link_scope(self) -> LinkScope:
        return HostScope(self.host.isolating_group)

    def prepare(self) -> None:
        """Nothing to prepare: the JVMs run from the host's own files."""

    def address(self, name: str) -> str:
        return HOST

    def launch(self, argv: Sequence[str], *, env: dict[str, str], name: str, log_path: Path, cwd: Path,
               job: bool = True, subgroup: str | None = None) -> DaemonProcess:
        return ManagedProcess(argv, env=env, log_path=log_path, cwd=cwd, name=name, job=job, subgroup=subgroup,
                              host=self.host)

    def listening(self, daemon: Daemon, port: int) -> bool:
        """Whether the daemon's own process has a listening socket on ``port`` (not just anyone's)."""
        try:
            conns = psutil.Process(daemon.pid).net_connections("inet")
        except (psutil.Error, ValueError):  # gone, or never started (pid None)
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns)

    def link_sides(self, daemons: Sequence[Daemon]) -> list[tuple[str, str]]:
        """[]: the job shares this host's namespace; the job group's mark scopes network faults."""
        return []

    def node_mark(self, subgroup: str, n: int) -> tuple[int, int] | None:
        return self.host.job_group.mark_sub(subgroup, n)

    def release(self, processes: Sequence[DaemonProcess]) -> None:
        """Nothing is left of a stopped process group."""
