"""The embedded Kafka-protocol cluster in a container of its own.

The brokers are the local backend's (librdkafka's mock cluster behind a JSON-line pipe,
``stack/kafka_broker_process.py``), run in a container at a fixed address on the session's network:
broker ``b`` answers at ``<address>:9090+b`` and advertises exactly that, so the job's executors (in
the worker containers), its driver and the harness (on this host) all reach the same brokers the same
way. The command pipe is the container's stdin (``docker run -i``): when the owner goes away - also by
SIGKILL - the pipe reaches EOF, the helper exits and the container removes itself; the reaper's
label sweep is the second line of defence.

This is the one container not started through testcontainers: testcontainers has no attached stdin,
and the pipe's EOF is what makes the broker die with its owner.

What it is not: a real Kafka. No transactions isolation (read_committed), no zombie fencing; a
run's exactly-once verdict for transactional output says "unverified" (``isolates_transactions``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.docker.container import remove_named
from pytest_streamchaos.stack.docker.engine import DockerSession
from pytest_streamchaos.stack.docker.images import host_mounts, resolve
from pytest_streamchaos.stack.environment import find_java
from pytest_streamchaos.stack.kafka_local import _PKG_PARENT, LocalKafkaCluster

BASE_PORT = 9090  #: broker ``b`` listens on BASE_PORT + b inside its container


class DockerKafkaCluster(LocalKafkaCluster):
    """N embedded brokers in one container (see the module docstring)."""

    def __init__(self, brokers: int = 3, workdir: str | os.PathLike | None = None, *, session: DockerSession,
                 image: str = "", **kwargs: Any) -> None:
        super().__init__(brokers, workdir, **kwargs)
        self.session = session
        self.image = image
        self.broker_host = session.next_ip()
        self.container_name = f"{session.id}-kafka"

    def start(self, timeout: float = 30.0) -> None:
        if shutil.which("docker") is None:
            raise StackError("the docker backend runs the embedded brokers with the docker command-line client, "
                             "which is not on PATH; fix: apt-get install docker.io (or docker-ce-cli)")
        self.image = resolve(self.session.client, self.image)
        if not self.running:  # the container of an earlier start (reset) may still be on its way out
            remove_named(self.session, self.container_name)
        super().start(timeout)

    def _helper_argv(self, extra: Any = ()) -> list[str]:
        inner = super()._helper_argv(["--advertise", f"{self.broker_host}:{BASE_PORT}"])
        _, java_home = find_java()
        argv = ["docker", "run", "-i", "--rm", "--init", "--name", self.container_name,
                "--hostname", "kafka", "--network", self.session.network.name, "--ip", self.broker_host]
        for k, v in self.session.labels.items():
            argv += ["--label", f"{k}={v}"]
        for host, m in host_mounts(Path(java_home)).items():
            argv += ["-v", f"{host}:{m['bind']}:{m['mode']}"]
        # the package this harness imported (a checkout on sys.path may shadow the installed one)
        pythonpath = os.pathsep.join(p for p in (_PKG_PARENT, os.environ.get("PYTHONPATH", "")) if p)
        argv += ["-e", f"PYTHONPATH={pythonpath}", "-e", "PYTHONUNBUFFERED=1",
                 "-e", f"HOME={os.environ.get('HOME', '/root')}", self.image]
        return argv + inner

    def listen(self, port: int) -> None:
        """Refused: a fixed ``127.0.0.1`` port on this host (``kafka_port=`` / ``--chaos-kafka-port``, for a
        job that hard-codes ``localhost:9092``) is out of the executors' reach in their containers, where
        ``localhost`` is the container itself. Failing here, before the job starts, beats a job that
        waits two minutes for a broker it cannot see."""
        raise StackError(f"kafka port {port}: the docker backend cannot serve a job that hard-codes "
                         f"localhost:{port} (its executors run in containers, where localhost is the container); "
                         "fix: pass the bootstrap servers to the job (e.g. args=['{bootstrap_servers}']), or run "
                         "this test on the local backend (@pytest.mark.chaos(backend='local'))")

    # -- faults on the container --------------------------------------------------------------
    def _container(self) -> Any:
        """The brokers' container, None when there is none (other Docker errors propagate: a fault must not
        pass for done when the daemon refused it)."""
        import docker

        try:
            return self.session.client.containers.get(self.container_name)
        except docker.errors.NotFound:
            return None

    def pause_brokers(self) -> None:
        """``docker pause``: every broker hangs with its connections open."""
        container = self._container()
        if container is not None:
            container.pause()

    def resume_brokers(self) -> None:
        container = self._container()
        if container is not None and container.status == "paused":
            container.unpause()

    def brokers_state(self) -> str | None:
        """``running``, ``stopped`` while paused, None when the container is gone."""
        container = self._container()
        return None if container is None else {"running": "running", "paused": "stopped"}.get(container.status)
