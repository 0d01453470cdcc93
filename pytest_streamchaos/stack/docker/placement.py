"""The ``docker`` placement: one container per daemon on the session's network (:mod:`..placement`).

Each daemon gets a fixed address on the session's network and runs the same command line as on the
local backend, with the host's JDK, Python and the plugin's cache mounted read-only (:mod:`.images`)
and the cluster's working directory (plus ``shared`` directories) read-write at the same paths, so its
logs and data read like local ones. A kill is ``docker kill``, a pause ``docker pause``
(:class:`~.container.ContainerProcess`); network faults act inside a container's namespace
(:meth:`DockerPlacement.link_sides`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from pathlib import Path

from pytest_streamchaos.machine.environment import find_java
from pytest_streamchaos.stack.base import LinkScope
from pytest_streamchaos.stack.docker.container import ContainerProcess
from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.docker.images import host_mounts, resolve
from pytest_streamchaos.stack.host import Host, current
from pytest_streamchaos.stack.jobgroup import HostScope
from pytest_streamchaos.stack.process import Daemon, DaemonProcess


class DockerPlacement:
    """Daemons as containers of one :class:`~.engine.DockerSession` (see the module docstring).

    ``image``: the runtime image (default: built from this host, :func:`~.images.host_runtime_image`);
    ``java_home``: the JDK mounted into every container (default: the host's ``java``); ``shared``: host
    directories mounted read-write at the same path (the session's temporary directory: job checkpoints
    and outputs); ``project``: mounted read-only (the user's project, whose modules a job's functions may
    import on the executors)."""

    shares_host_network = False

    def __init__(self, session: DockerSession, *, image: str = "", java_home: str = "",
                 shared: Sequence[str | os.PathLike] = (), project: Sequence[str | os.PathLike] = (),
                 host: Host | None = None) -> None:
        self.session, self.image, self.java_home = session, image, java_home
        self.shared = tuple(str(Path(p).absolute()) for p in shared)
        self.project = tuple(str(Path(p).absolute()) for p in project)
        self.host = host or current()
        self._ips: dict[str, str] = {}
        self._jdk: Path | None = None

    @property
    def driver_host(self) -> str:
        """The host's address on the session network: where executors in the containers reach the driver."""
        return self.session.gateway

    @property
    def link_scope(self) -> LinkScope:
        return HostScope(self.host.isolating_group)

    def prepare(self) -> None:
        """The image (built once from this host, or the one given, checked present) and the JDK to mount."""
        self.image = resolve(self.session.client, self.image)
        self._jdk = find_java(self.java_home)[1]

    def address(self, name: str) -> str:
        if name not in self._ips:
            self._ips[name] = self.session.next_ip()
        return self._ips[name]

    def launch(self, argv: Sequence[str], *, env: dict[str, str], name: str, log_path: Path, cwd: Path,
               job: bool = True, subgroup: str | None = None) -> DaemonProcess:
        """A container at the daemon's address (``job`` / ``subgroup`` need nothing here: every container
        is a namespace of its own, where network faults act)."""
        if self._jdk is None:
            self.prepare()
        assert self._jdk is not None
        volumes = host_mounts(self._jdk, rw=(str(cwd), *self.shared), ro_extra=self.project)
        return ContainerProcess(self.session, self.image, list(argv), env=env, log_path=log_path,
                                name=f"{self.session.id}-{name}", ip=self.address(name), volumes=volumes)

    def listening(self, daemon: Daemon, port: int) -> bool:
        """Whether the daemon's address accepts a connection on ``port`` (its container is its own host)."""
        try:
            with socket.create_connection((daemon.host, port), timeout=0.5):
                return True
        except OSError:
            return False

    def link_sides(self, daemons: Sequence[Daemon]) -> list[tuple[str, str]]:
        """Each running daemon's container namespace (the job's side of every link it has)."""
        return [(d.name, f"/proc/{d.pid}/ns/net") for d in daemons if d.alive and not d.paused]

    def node_mark(self, subgroup: str, n: int) -> None:
        """None: each node has its own namespace, and no mark tells its connections apart on this host."""
        return None

    def release(self, processes: Sequence[DaemonProcess]) -> None:
        """Remove the stopped containers."""
        for p in processes:
            if isinstance(p, ContainerProcess):
                p.remove()

    def containers(self) -> dict[str, str]:
        """Node name -> container name (for ``docker logs`` / ``docker exec`` while debugging)."""
        return {name: f"{self.session.id}-{name}" for name in self._ips}
