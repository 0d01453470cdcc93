"""The real Kafka cluster on containers: one container per KRaft node, the same jars and configuration.

The cluster is the shared one (:class:`~..kraft.cluster.KRaftCluster`: formatting, start-up gates,
topics, faults); only where a node lives differs (:class:`~.placement.DockerPlacement`): each in its own
container at a fixed address on the session's network, running the same ``kafka.Kafka`` JVM from the
jars in the plugin's cache, with the host's JDK, mounted read-only (no image is pulled). The harness (on
this host), the driver and the executors (in the worker containers) all reach the brokers at their
container addresses. A kill is ``docker kill``, a pause ``docker pause``.

The job's Kafka links have no proxy here: network faults on them act inside the job's containers'
namespaces, like every network fault of this backend (docs/docker-backend.md). A fixed bootstrap port
on 127.0.0.1 (``kafka_port``) is out of the executors' reach, and a cut between brokers needs their
connections marked on one host: both fail, naming the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.docker.placement import DockerPlacement
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.kraft.cluster import KRaftCluster


class DockerKafkaCluster(KRaftCluster):
    """A real Kafka cluster of containers (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, brokers: int = 3, *, session: DockerSession, image: str = "",
                 java_home: str = "", start_timeout: float = 90.0, progress: Callable[[str], None] | None = None,
                 host: Host | None = None) -> None:
        self.docker = DockerPlacement(session, image=image, java_home=java_home, host=host)
        super().__init__(workdir, brokers, placement=self.docker, java_home=java_home, start_timeout=start_timeout,
                         progress=progress)

    def containers(self) -> dict[str, str]:
        """Node name -> container name (for ``docker logs`` / ``docker exec`` while debugging)."""
        return self.docker.containers()
