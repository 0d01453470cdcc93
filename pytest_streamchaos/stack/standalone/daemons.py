"""The daemons of a Spark standalone cluster: a master, a worker (whose executors are its child
processes) and the HA mode's ZooKeeper, each a restartable :class:`~..process.Daemon`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_streamchaos.stack.base import Endpoint
from pytest_streamchaos.stack.process import Daemon, DaemonProcess
from pytest_streamchaos.stack.standalone.executors import ProcessExecutor, executors_under

Starter = Callable[[], DaemonProcess]


def _http_json(url: str, timeout: float = 2.0) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - the cluster's own address
            return json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


class SparkMaster(Daemon):
    """A Spark master JVM."""

    role = "master"

    def __init__(self, index: int, rpc_port: int, webui_port: int, rest_port: int, start: Starter) -> None:
        super().__init__(index, start)
        self.rpc_port, self.webui_port, self.rest_port = rpc_port, webui_port, rest_port

    @property
    def url(self) -> str:
        return f"spark://{self.host}:{self.rpc_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def state(self) -> dict[str, Any] | None:
        """The master's ``/json/`` document (``status``: ALIVE / STANDBY / RECOVERING ...), or None
        when it does not answer."""
        if not self.alive or self.paused:
            return None
        return _http_json(self.webui_url + "/json/")

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "master", self.host, {"rpc": self.rpc_port, "webui": self.webui_port,
                                                         "rest": self.rest_port})


class SparkWorker(Daemon):
    """A Spark worker JVM; its executors are its child processes (same process group)."""

    role = "worker"

    def __init__(self, index: int, port: int, webui_port: int, workdir: Path, start: Starter) -> None:
        super().__init__(index, start)
        self.port, self.webui_port, self.workdir = port, webui_port, workdir

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def executors(self, app_id: str | None = None) -> list[ProcessExecutor]:
        """The executor JVMs this worker runs now (of application ``app_id`` only, when given)."""
        if not self.alive or self.pid is None:
            return []
        return executors_under(self.pid, app_id)

    def executor_pids(self) -> list[int]:
        """PIDs of the executor JVMs (``CoarseGrainedExecutorBackend``) this worker runs."""
        return [e.pid for e in self.executors()]

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "worker", self.host, {"rpc": self.port, "webui": self.webui_port})


class ZooKeeper(Daemon):
    """A standalone ZooKeeper server (HA mode only)."""

    role = "zookeeper"

    def __init__(self, port: int, start: Starter) -> None:
        super().__init__(0, start)
        self.port = port

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "zookeeper", self.host, {"client": self.port})
