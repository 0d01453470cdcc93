"""The user's job under Spark Connect (:class:`ConnectJob`, the stack's
:class:`~pytest_streamchaos.stack.base.ConnectSession`): two processes of one job directory.

- the **server**, the query's driver: ``spark-submit`` of Spark's Connect server on the cluster, in its own
  process group (a :class:`~pytest_streamchaos.stack.driver.job.SparkJob` whose timeline events are
  ``connect_server_launched`` / ``_killed`` / ``_stopped``); its event log is the job's progress, and its
  Python children are the ``foreachBatch`` workers;
- the **client**, the user's script run as it is by Python with ``SPARK_REMOTE`` naming the server (a job
  that hard-codes ``sc://localhost:15002`` reaches the same server: it listens on the run's Connect port). It
  is what the runner calls the job's driver: started, killed, paused and restarted as a driver is
  elsewhere (``driver_launched`` ... on the timeline), so a supervised run restarts it when it exits.

The first start starts the server and waits until it listens, then the client; a restart restarts the client
(and the server when it is down). Which session the client holds is the server's business: a client that dies
leaves its query running on the server; a server that dies takes the query with it, and the client sees its
session gone (docs/connect.md says what the plugin restarts and what it leaves to the job).
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.stack.base import Executor, JobHandle, Launch
from pytest_streamchaos.stack.connect import ConnectKind
from pytest_streamchaos.stack.driver.job import SparkJob
from pytest_streamchaos.stack.process import descendants, process_cmdline

#: how long a Connect server may take to listen (a JVM start, Spark's context, the executors' registration)
SERVER_START_S = 120.0
#: what names a ``foreachBatch`` function's Python worker (``pyspark.sql.connect.streaming.worker``)
FOREACH_BATCH_WORKER = "foreach_batch_worker"
#: the timeline's kind of the moment a restarted server answers again
SERVER_BACK = ConnectKind.CONNECT_SERVER_LISTENING


class ServerJob(JobHandle, Protocol):
    """The server's spark-submit: a :class:`~pytest_streamchaos.stack.driver.job.SparkJob` on the standalone
    cluster, a ``YarnJob`` (client mode) on YARN; what the cluster runs of it is its application's."""

    @property
    def app_id(self) -> str | None:
        ...

    def executors(self) -> list[Executor]:
        ...


def listening(host: str, port: int) -> bool:
    """Whether something accepts connections at ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


class ConnectJob:
    """One job on Spark Connect (see the module docstring): ``server`` and ``client`` share its directory."""

    def __init__(self, server: ServerJob, client: SparkJob, *, host: str, port: int) -> None:
        self.server, self.client, self.host, self.port = server, client, host, port
        self._events: list[TimelineEvent] = []
        #: one start of the server at a time (a fault's heal and a supervisor's restart of the client may race)
        self._server_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<ConnectJob {self.name} server={self.server!r} client={self.client!r}>"

    # -- what the job is --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.client.name

    @property
    def script(self) -> Path:
        return self.client.script

    @property
    def args(self) -> Sequence[str]:
        return self.client.args

    @property
    def workdir(self) -> Path:
        return self.client.workdir

    @property
    def log_path(self) -> Path:
        """The client's log (the script's own output and traceback)."""
        return self.client.log_path

    @property
    def server_log_path(self) -> Path:
        return self.server.log_path

    @property
    def event_log_dir(self) -> Path:
        return self.server.event_log_dir

    @property
    def effective_conf(self) -> Mapping[str, str]:
        """The server's conf: where the query runs."""
        return self.server.effective_conf

    @property
    def notes(self) -> Sequence[str]:
        return self.client.notes

    @property
    def launches(self) -> Sequence[Launch]:
        """The client's launches."""
        return self.client.launches

    @property
    def timeline(self) -> Sequence[TimelineEvent]:
        """The server's and the client's events, and the session's (the server listening again)."""
        return sorted([*self.server.timeline, *self.client.timeline, *self._events], key=lambda e: e.t)

    @property
    def progress(self) -> SparkProgress:
        """The query's progress: the server's event log, every server launch."""
        return self.server.progress

    @property
    def pid(self) -> int | None:
        return self.client.pid

    @property
    def alive(self) -> bool:
        return self.client.alive

    @property
    def returncode(self) -> int | None:
        return self.client.returncode

    @property
    def remote(self) -> str:
        """The client's ``SPARK_REMOTE``."""
        return f"sc://{self.host}:{self.port}"

    # -- the client: what the runner calls the driver ---------------------------------------------
    def start(self) -> ConnectJob:
        """Start the server if it is not running, wait until it listens, then start the client."""
        with self._server_lock:
            if not self.server.alive:
                self.start_server()
        if not listening(self.host, self.port):  # being started by someone else (a fault's heal)
            self.wait_server(record=False)
        self.client.start()
        return self

    def restart(self, timeout: float = 30.0) -> ConnectJob:
        """The client again (it submits its query anew, from the checkpoint); the server too if it is down."""
        if self.client.alive:
            self.client.stop(timeout)
        return self.start()

    def kill(self, timeout: float = 15.0, wait: bool = True) -> None:
        """SIGKILL the client's group; the server and its query go on."""
        self.client.kill(timeout, wait=wait)

    def wait_gone(self, timeout: float = 15.0) -> None:
        self.client.wait_gone(timeout)

    def pause(self, wait: bool = True) -> None:
        self.client.pause(wait=wait)

    def wait_paused(self, timeout: float = 5.0) -> None:
        self.client.wait_paused(timeout)

    def resume(self) -> None:
        self.client.resume()

    def stop(self, timeout: float = 30.0) -> None:
        """The client, then the server (its query stops with it). Idempotent."""
        try:
            self.client.stop(timeout)
        finally:
            self.server.stop(timeout)

    def tail_log(self, n: int = 40) -> str:
        tail = self.client.tail_log(n)
        if self.server.returncode not in (None, 0):
            tail += f"\n--- the Connect server exited with code {self.server.returncode}:\n{self.server.tail_log(n)}"
        return tail

    def last_error(self) -> str | None:
        return self.client.last_error()

    # -- the server -------------------------------------------------------------------------------
    @property
    def server_alive(self) -> bool:
        return self.server.alive

    def start_server(self, timeout: float = SERVER_START_S) -> None:
        """Start the server and wait until it listens on the run's Connect port; :class:`LaunchError` with its log
        when it exits first or does not listen in time."""
        if listening(self.host, self.port):
            raise LaunchError(f"the Connect port {self.host}:{self.port} is taken by another process before the run's "
                              "server started: stop it, or give the run another port (--chaos-connect-port / ini "
                              "streamchaos_connect_port)")
        self.server.start()
        self.wait_server(timeout)

    def wait_server(self, timeout: float = SERVER_START_S, record: bool = True) -> None:
        """Until the server listens (stamped ``connect_server_listening`` when ``record``)."""
        def up() -> bool:
            if not self.server.alive:
                raise LaunchError(f"the Spark Connect server exited (code {self.server.returncode}) before it "
                                  f"listened on {self.host}:{self.port}; its log {self.server.log_path}:\n"
                                  f"{self.server.tail_log(25)}")
            return listening(self.host, self.port)

        poll(up, timeout, lambda _: LaunchError(
            f"the Spark Connect server did not listen on {self.host}:{self.port} within {timeout:.0f}s; its log "
            f"{self.server.log_path}:\n{self.server.tail_log(25)}"), interval=0.2)
        if record:
            self._events.append(TimelineEvent(time.time(), SERVER_BACK, "connect-server",
                                              {"launch": len(self.server.launches), "port": self.port}))

    def kill_server(self, wait: bool = True) -> None:
        """SIGKILL the server's group (its JVM, its ``foreachBatch`` workers): the query dies with it."""
        self.server.kill(wait=wait)

    def server_wait_gone(self, timeout: float = 15.0) -> None:
        self.server.wait_gone(timeout)

    def restart_server(self, wait: bool = True) -> None:
        """The server again on the same port (the client's address holds); ``wait``: until it listens."""
        with self._server_lock:
            if self.server.alive:
                self.server.stop()
            self.server.start()
            if wait:
                self.wait_server()

    # -- the foreachBatch workers -----------------------------------------------------------------
    def foreach_batch_workers(self) -> list[int]:
        """The server's Python workers that run a ``foreachBatch`` function now (found in its process tree)."""
        pid = self.server.pid
        if pid is None or not self.server.alive:
            return []
        return [p for p in descendants(pid) if FOREACH_BATCH_WORKER in process_cmdline(p)]

    def signal_foreach_batch_worker(self, pid: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one of :meth:`foreach_batch_workers`."""
        if pid not in self.foreach_batch_workers():
            raise LaunchError(f"pid {pid} is not a foreachBatch worker of the Connect server")
        import os

        os.kill(pid, sig)

    # -- what the cluster knows -------------------------------------------------------------------
    def executors(self) -> list[Executor]:
        return self.server.executors()

    @property
    def app_id(self) -> str | None:
        return self.server.app_id
