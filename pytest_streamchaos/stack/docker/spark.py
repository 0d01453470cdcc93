"""The Spark standalone cluster on containers: one container per master, worker (and ZooKeeper).

The cluster is the shared one (:class:`~..standalone.cluster.StandaloneCluster`: start-up gates,
healing, faults); only where a daemon lives differs (:class:`~.placement.DockerPlacement`): each in its
own container at a fixed address on the session's network, and the driver (on this host, in the job's
group) binds the host's address on that network so that executors in the worker containers reach it.
Executors run inside their worker's container: a worker kill (``docker kill``) takes them with it, as a
lost machine does; network faults act in the worker containers' namespaces.

Checkpoints and outputs: the session's temporary directory is mounted read-write at the same path in
every container, so a job's checkpoint (written by the driver and, for stateful jobs, by executors)
and its file outputs are the same files everywhere. (HDFS is not used: no Hadoop image or server jars
are available here; docs/docker-backend.md.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pytest_streamchaos.settings import Settings
from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.docker.placement import DockerPlacement
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster


class DockerSparkCluster(StandaloneCluster):
    """A Spark standalone cluster of containers (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, *, session: DockerSession, shared: Sequence[str | os.PathLike] = (),
                 project: Sequence[str | os.PathLike] = (), image: str = "", host: Host | None = None,
                 **kwargs: Any) -> None:
        """``shared``, ``project``, ``image``: :class:`~.placement.DockerPlacement`; the rest:
        :class:`~..standalone.cluster.StandaloneCluster`."""
        self.docker = DockerPlacement(session, image=image, java_home=kwargs.get("java_home", ""), shared=shared,
                                      project=project, host=host)
        super().__init__(workdir, placement=self.docker, **kwargs)

    @classmethod
    def from_settings(cls, settings: Settings, workdir: str | os.PathLike, *, session: DockerSession,
                      ha: bool | None = None, shared: Sequence[str | os.PathLike] = (),
                      project: Sequence[str | os.PathLike] = (), host: Host | None = None) -> DockerSparkCluster:
        return cls(workdir, session=session, shared=shared, project=project, image=settings.docker_image, host=host,
                   **cls.settings_kwargs(settings, ha=ha))

    def containers(self) -> dict[str, str]:
        """Node name -> container name (for ``docker logs`` / ``docker exec`` while debugging)."""
        return self.docker.containers()
