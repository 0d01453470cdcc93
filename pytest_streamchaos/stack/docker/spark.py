"""The Spark standalone cluster on containers: one container per master, worker (and ZooKeeper).

The cluster logic is :class:`~..spark_local.LocalSparkCluster`'s (start-up gates, healing, faults);
only where a daemon lives differs: each in its own container at a fixed address on the session's
network, and the driver (on this host, in the job's group) binds the host's address on that network
so that executors in the worker containers reach it. Executors run inside their worker's container:
a worker kill (``docker kill``) takes them with it, as a lost machine does.

Checkpoints and outputs: the session's temporary directory is mounted read-write at the same path in
every container, so a job's checkpoint (written by the driver and, for stateful jobs, by executors)
and its file outputs are the same files everywhere. (HDFS is not used: no Hadoop image or server jars
are available here; docs/docker-backend.md.)
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_streamchaos.stack.docker.container import ContainerProcess
from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.docker.images import host_mounts, resolve
from pytest_streamchaos.stack.process import Daemon
from pytest_streamchaos.stack.spark_local import LocalSparkCluster


class DockerSparkCluster(LocalSparkCluster):
    """A Spark standalone cluster of containers (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, *, session: DockerSession, shared: Sequence[str | os.PathLike] = (),
                 project: Sequence[str | os.PathLike] = (), image: str = "", **kwargs: Any) -> None:
        """``shared``: host directories mounted read-write at the same path in every container (the
        session's temporary directory: job checkpoints and outputs). ``project``: mounted read-only (the
        user's project, whose modules a job's functions may import on the executors). ``image``: the
        runtime image (default: built from this host, :func:`~.images.host_runtime_image`)."""
        super().__init__(workdir, **kwargs)
        self.session = session
        self.shared = tuple(str(Path(p).absolute()) for p in shared)
        self.project = tuple(str(Path(p).absolute()) for p in project)
        self.image = image
        self.driver_host = session.gateway
        self._ips: dict[str, str] = {}

    @classmethod
    def from_settings(cls, settings: Any, workdir: str | os.PathLike, *, ha: bool | None = None,
                      session: DockerSession | None = None, shared: Sequence[str | os.PathLike] = (),
                      project: Sequence[str | os.PathLike] = ()) -> DockerSparkCluster:
        assert session is not None, "the docker backend needs the session's DockerSession"
        return cls(workdir, session=session, shared=shared, project=project, image=settings.docker_image,
                   workers=settings.workers,
                   worker_cores=settings.worker_cores, worker_memory=settings.worker_memory,
                   ha=settings.ha if ha is None else ha, java_home=settings.java_home,
                   start_timeout=settings.start_timeout)

    def start(self) -> None:
        self.image = resolve(self.session.client, self.image)
        super().start()

    def _address(self, name: str) -> str:
        if name not in self._ips:
            self._ips[name] = self.session.next_ip()
        return self._ips[name]

    def _launch(self, argv: list[str], env: dict[str, str], name: str, job: bool = True) -> ContainerProcess:
        assert self.env is not None
        volumes = host_mounts(self.env.java_home, rw=(str(self.workdir), *self.shared), ro_extra=self.project)
        return ContainerProcess(self.session, self.image, argv, env=env, log_path=self.workdir / "logs" / f"{name}.log",
                                name=f"{self.session.id}-{name}", ip=self._address(name), volumes=volumes)

    def _listening(self, d: Daemon, port: int) -> bool:
        try:
            with socket.create_connection((d.host, port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self, timeout: float = 3.0) -> None:
        super().stop(timeout)
        for p in self.processes():
            p.remove()  # type: ignore[attr-defined]

    def link_sides(self) -> list[tuple[str, str]]:
        """Each running worker's container namespace: its executors are the job's side of every link."""
        return [(w.name, f"/proc/{w.pid}/ns/net") for w in self.workers if w.alive and not w.paused]

    def containers(self) -> dict[str, str]:
        """Node name -> container name (for ``docker logs`` / ``docker exec`` while debugging)."""
        return {name: f"{self.session.id}-{name}" for name in self._ips}
