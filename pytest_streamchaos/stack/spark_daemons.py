"""Spark's daemon JVMs on this host: the flags they start with, and the handles of a master, a worker
(whose executors are its child processes) and the HA mode's ZooKeeper.

:data:`DAEMON_JAVA_OPTS` and :func:`jvm_tmp_opts` serve every JVM the stack starts (Kafka and HDFS
nodes, the driver too), not only Spark's.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.process import Daemon

EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"

#: Daemon JVM flags, chosen for start-up CPU (measured: a master or worker burns ~6.5 CPU-s to boot
#: with defaults, ~3 with these; on 2 cores that is the cold-start time). C1 only and the serial GC:
#: the daemons do little work, so peak JIT performance does not matter. Bytecode verification off:
#: the classes are Spark's own jars from the pyspark wheel (saves ~15 %). IPv4 only: plain
#: 127.0.0.1 sockets rather than IPv4-mapped IPv6 ones.
DAEMON_JAVA_OPTS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -Djava.net.preferIPv4Stack=true "
                    "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")
DAEMON_MEMORY = "256m"


def jvm_tmp_opts(tmp: os.PathLike | str) -> str:
    """JVM flags that keep its scratch files (unpacked native libraries) in ``tmp`` -- a directory
    the plugin removes -- and write no hsperfdata file that a SIGKILLed JVM would leave behind."""
    Path(tmp).mkdir(parents=True, exist_ok=True)
    return f"-Djava.io.tmpdir={tmp} -XX:-UsePerfData"


def _http_json(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - 127.0.0.1 only
            return json.loads(resp.read().decode())
    except (urllib.error.URLError, OSError, ValueError):
        return None


class LocalMaster(Daemon):
    """A Spark master JVM."""

    role = "master"

    def __init__(self, index: int, rpc_port: int, webui_port: int, rest_port: int, start) -> None:
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


class LocalWorker(Daemon):
    """A Spark worker JVM; its executors are its child processes (same process group)."""

    role = "worker"

    def __init__(self, index: int, port: int, webui_port: int, workdir: Path, start) -> None:
        super().__init__(index, start)
        self.port, self.webui_port, self.workdir = port, webui_port, workdir

    @property
    def webui_url(self) -> str:
        return f"http://{self.host}:{self.webui_port}"

    def executor_pids(self) -> list[int]:
        """PIDs of the executor JVMs (``CoarseGrainedExecutorBackend``) this worker runs."""
        if not self.alive:
            return []
        pids = []
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return []
        for child in children:
            try:
                if EXECUTOR_CLASS in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                    pids.append(child.pid)
            except psutil.Error:
                continue
        return pids

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "worker", self.host, {"rpc": self.port, "webui": self.webui_port})


class LocalZooKeeper(Daemon):
    """A standalone ZooKeeper server (HA mode only)."""

    role = "zookeeper"

    def __init__(self, port: int, start) -> None:
        super().__init__(0, start)
        self.port = port

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "zookeeper", self.host, {"client": self.port})


def check_alive(daemons: list[Daemon]) -> None:
    """Raise :class:`StackError` (with its log) when one of ``daemons`` has exited: a daemon that dies
    during start-up does not come back by waiting."""
    for d in daemons:
        p = d.process
        if p is not None and not p.alive:
            raise StackError(f"Spark {d.name} exited with code {p.returncode} during start-up "
                             f"(log {p.log_path}):\n{p.tail_log(25)}")
