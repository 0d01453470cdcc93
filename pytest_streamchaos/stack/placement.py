"""Where a cluster's daemons run: the one part of a cluster that differs between the backends.

The clusters (:mod:`.standalone`, :mod:`.kraft`, :mod:`.hdfs`) plan their daemons, start them, watch,
break and heal them the same way on every backend; a :class:`Placement` says where each daemon lives
and how it is started, signalled and seen from here:

- ``local`` (:mod:`.local`): processes on this host, in the job's group (:mod:`.jobgroup`), whose
  connections the faults tell apart by the group's mark;
- ``docker`` (:mod:`.docker`): one container per daemon on the session's network, each in its own
  network namespace, where network faults act.

A third backend (another container runtime, machines reached over SSH) is one more placement in a
folder of its own; a cluster manager that is not Spark standalone (YARN) is one more cluster on the
same placements (docs/architecture.md, "Adding a backend").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pytest_streamchaos.stack.base import LinkScope

if TYPE_CHECKING:
    from pytest_streamchaos.stack.host import Host
    from pytest_streamchaos.stack.process import Daemon, DaemonProcess


class Placement(Protocol):
    """Where a cluster's daemons live (see the module docstring)."""

    @property
    def host(self) -> Host:
        """The session's host resources (ports, reaper, job group)."""
        ...

    @property
    def shares_host_network(self) -> bool:
        """Whether the daemons and the job share this host's network namespace (127.0.0.1 reaches them)."""
        ...

    @property
    def driver_host(self) -> str:
        """The address a driver on this host binds so that executors reach it."""
        ...

    @property
    def link_scope(self) -> LinkScope:
        """Whose connections a network fault on this host acts on."""
        ...

    def prepare(self) -> None:
        """Before the first daemon starts (the docker backend resolves its image)."""
        ...

    def address(self, name: str) -> str:
        """The address daemon ``name`` (``master-0``, ``broker-2`` ...) binds and is reached at."""
        ...

    def launch(self, argv: Sequence[str], *, env: dict[str, str], name: str, log_path: Path, cwd: Path,
               job: bool = True, subgroup: str | None = None) -> DaemonProcess:
        """Start one daemon (``job``: a part of the system under test, in the job's group; ``subgroup``: a
        child group of its own, whose connections carry a mark of their own: :meth:`node_mark`)."""
        ...

    def listening(self, daemon: Daemon, port: int) -> bool:
        """Whether ``daemon`` accepts connections on ``port`` now."""
        ...

    def link_sides(self, daemons: Sequence[Daemon]) -> list[tuple[str, str]]:
        """The network namespaces the job's side of a link lives in, as (daemon name, the namespace file of a
        process in it); [] when the job shares this host's namespace."""
        ...

    def node_mark(self, subgroup: str, n: int) -> tuple[int, int] | None:
        """(mark, mask) on every connection daemon child group ``subgroup`` opens (``n``: 1..15), so that a cut
        can tell one node's connections from its peers'; None where the host cannot mark them."""
        ...

    def release(self, processes: Sequence[DaemonProcess]) -> None:
        """After the daemons stopped: what is left of them (the docker backend removes the containers)."""
        ...
