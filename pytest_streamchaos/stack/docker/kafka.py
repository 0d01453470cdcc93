"""The real Kafka cluster on containers: one container per KRaft node, the same jars and configuration.

The cluster logic is :class:`~..kafka_local.LocalKafkaCluster`'s (formatting, start-up gates, topics,
faults); only where a node lives differs: each in its own container at a fixed address on the session's
network, running the same ``kafka.Kafka`` JVM from the jars in the plugin's cache, with the host's JDK,
mounted read-only (no image is pulled). The harness (on this host), the driver and the executors (in
the worker containers) all reach the brokers at their container addresses. A kill is ``docker kill``,
a pause ``docker pause``.

The job's Kafka links have no proxy here: network faults on them act inside the job's containers'
namespaces, like every network fault of this backend (docs/docker-backend.md). A fixed bootstrap port
on 127.0.0.1 (``kafka_port``) is out of the executors' reach, and a cut between brokers needs their
connections marked on one host: both fail, naming the fix.
"""

from __future__ import annotations

import os
from typing import Any

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.docker.container import ContainerProcess
from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.docker.images import host_mounts, resolve
from pytest_streamchaos.stack.environment import find_java
from pytest_streamchaos.stack.kafka_links import JobLinks
from pytest_streamchaos.stack.kafka_local import KAFKA_MAIN, LocalKafkaCluster


class DockerKafkaCluster(LocalKafkaCluster):
    """A real Kafka cluster of containers (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, *, session: DockerSession, image: str = "", **kwargs: Any) -> None:
        super().__init__(workdir, **kwargs)
        self.session, self.image = session, image
        self._ips: dict[str, str] = {}

    def start(self) -> None:
        self.image = resolve(self.session.client, self.image)
        super().start()

    def _address(self, name: str) -> str:
        if name not in self._ips:
            self._ips[name] = self.session.next_ip()
        return self._ips[name]

    def _launch_node(self, nid: int) -> Any:
        name = f"broker-{nid}"
        argv = self._java_argv(KAFKA_MAIN, str(self.workdir / "conf" / f"{name}.properties"))
        _, java_home = find_java(self.java_home)
        return ContainerProcess(self.session, self.image, argv, env=self._env(),
                                log_path=self.workdir / "logs" / f"{name}.log", name=f"{self.session.id}-{name}",
                                ip=self._address(name), volumes=host_mounts(java_home, rw=(str(self.workdir),)))

    def stop(self, timeout: float = 1.0) -> None:
        super().stop(timeout)
        for n in self.nodes:
            if n.process is not None:
                n.process.remove()

    def _start_links(self) -> None:
        """No proxies: network faults on the job's Kafka links act in the job's containers' namespaces."""
        self.links = JobLinks(None, "the docker backend's job links run through the job's containers' namespaces")

    def node_mark(self, broker_id: int) -> tuple[int, int] | None:
        """None: each broker has its own namespace, and no mark tells its connections apart on this host."""
        return None

    def listen(self, port: int) -> None:
        """Refused: a fixed ``127.0.0.1`` port on this host (``kafka_port=`` / ``--chaos-kafka-port``, for a
        job that hard-codes ``localhost:9092``) is out of the executors' reach in their containers, where
        ``localhost`` is the container itself. Failing here, before the job starts, beats a job that
        waits two minutes for a broker it cannot see."""
        raise StackError(f"kafka port {port}: the docker backend cannot serve a job that hard-codes "
                         f"localhost:{port} (its executors run in containers, where localhost is the container); "
                         "fix: pass the bootstrap servers to the job (e.g. args=['{bootstrap_servers}']), or run "
                         "this test on the local backend (@pytest.mark.chaos(backend='local'))")

    def unlisten(self, port: int) -> None:
        """Nothing to undo (see :meth:`listen`)."""

    def containers(self) -> dict[str, str]:
        """Node name -> container name (for ``docker logs`` / ``docker exec`` while debugging)."""
        return {name: f"{self.session.id}-{name}" for name in self._ips}
