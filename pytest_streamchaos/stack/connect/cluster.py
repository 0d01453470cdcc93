"""Spark Connect as the session's cluster manager (``spark="connect"``): the session's standalone cluster,
whose launcher starts each job as a Connect server on it and the job's script as that server's client
(:mod:`.launcher`). Everything else -- workers, masters, executors, their faults -- is the standalone
cluster's, by delegation: a worker's loss under Connect is the same loss. It has every capability of the
standalone cluster but :class:`~..capabilities.SubmittedDrivers` (the job's script is a client here, not the
driver), and :class:`~..capabilities.ConnectServer`, which only a Connect cluster has.

:class:`ConnectOn` is any cluster under Connect, and the ``...Via`` classes forward one capability each to the
inner cluster, so that a Connect cluster has exactly the capabilities of the cluster it runs on:
:class:`ConnectSparkCluster` here, and Connect on YARN in :mod:`.yarn`."""

from __future__ import annotations

import abc
import os
import signal
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.machine.ports import port_holder
from pytest_streamchaos.stack.base import Endpoint, Executor, LaunchOptions, LinkScope, Node, SparkCluster
from pytest_streamchaos.stack.capabilities import (
    ActiveMaster,
    ExecutorKill,
    ExecutorPause,
    HostLinks,
    MasterKill,
    MasterPause,
    ResourceManagerRestart,
    WorkerKill,
    WorkerPause,
)
from pytest_streamchaos.stack.connect.launcher import ConnectLauncher

if TYPE_CHECKING:
    from pytest_streamchaos.stack.fixtures import Stacks
    from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster

C = TypeVar("C")


def session_cluster(stacks: Stacks, backend: str, ha: bool) -> SparkCluster:
    """The ``connect`` manager's factory: the session's standalone cluster on ``backend`` behind Connect's
    launcher. Local backend only (a Connect server on the docker backend never ran)."""
    import pytest

    if backend == "docker":
        pytest.skip("Spark Connect runs on the local backend only: run this test with --chaos-backend local")
    return ConnectSparkCluster(stacks.standalone(backend, ha=ha), port=session_port(stacks))


def session_port(stacks: Stacks) -> int:
    """The Connect servers' port of the session (``--chaos-connect-port``; 0: a free one), reserved."""
    port = stacks.settings.connect_port or stacks.host.ports.free()
    stacks.host.ports.reserve(port)
    return port


class ConnectOn(SparkCluster):
    """``inner`` (a started cluster) whose jobs run under Spark Connect on ``port``: the cluster's shape as it is,
    Connect's launcher on its driver site (:meth:`_launcher`). Its faults are the capabilities a subclass forwards
    to ``inner`` (the mixins below): only those ``inner`` has, and never
    :class:`~..capabilities.SubmittedDrivers`."""

    name = "connect"

    def __init__(self, inner: SparkCluster, *, port: int) -> None:
        self.inner, self.port = inner, port
        self.launchers: list[ConnectLauncher] = []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} port={self.port} on {self.inner!r}>"

    # -- what differs ------------------------------------------------------------------------------
    @property
    def manager(self) -> str:
        return self.name

    @property
    def connect_port(self) -> int:
        return self.port

    def start(self) -> None:
        """Nothing: the inner cluster is the session's, started already; each job starts its server."""

    def launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> ConnectLauncher:
        """Connect's launcher on the inner cluster's driver site; :class:`LaunchError` at once when another
        process holds the Connect port."""
        holder = port_holder(self.port)
        if holder is not None:
            raise LaunchError(f"the Spark Connect port 127.0.0.1:{self.port} is in use by {holder}: stop it, or give "
                              "the session another port (--chaos-connect-port / ini streamchaos_connect_port; a job "
                              "that hard-codes sc://localhost:15002 needs 15002)")
        launcher = self._launcher(workdir, options)
        self.launchers.append(launcher)
        return launcher

    @abc.abstractmethod
    def _launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None) -> ConnectLauncher:
        """Connect's launcher on the inner cluster (not yet in :attr:`launchers`)."""

    def stop(self) -> None:
        """Stop every job's server and client; the inner cluster is the session's, stopped with it."""
        for launcher in self.launchers:
            try:
                launcher.stop_all(timeout=15)
            except Exception:  # the session ends regardless
                pass

    # -- the inner cluster's, as it is -------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return self.inner.master_url

    @property
    def effective_conf(self) -> Mapping[str, str]:
        return self.inner.effective_conf

    @property
    def driver_host(self) -> str:
        return self.inner.driver_host

    @property
    def link_scope(self) -> LinkScope:
        return self.inner.link_scope

    @property
    def workers(self) -> Sequence[Node]:
        return self.inner.workers

    @property
    def masters(self) -> Sequence[Node]:
        return self.inner.masters

    def wait_for_workers(self, k: int, timeout: float = 60.0) -> None:
        self.inner.wait_for_workers(k, timeout)

    def heal(self, timeout: float = 60.0) -> None:
        self.inner.heal(timeout)

    def endpoints(self) -> list[Endpoint]:
        return self.inner.endpoints()

    def alive_workers(self) -> list[dict[str, Any]]:
        return self.inner.alive_workers()

    def executors(self, i: int) -> Sequence[Executor]:
        return self.inner.executors(i)

    def link_sides(self) -> list[tuple[str, str]]:
        return self.inner.link_sides()

    def executor_state(self, executor: Executor) -> str | None:
        return self.inner.executor_state(executor)

    def app_executors(self, app_id: str) -> Sequence[Executor]:
        return self.inner.app_executors(app_id)

    def _via(self, capability: type[C]) -> C:
        """``inner`` as one of its capabilities (a subclass forwards only those it has)."""
        return cast(C, self.inner)


# -- the capabilities a Connect cluster forwards to its inner one (docs/architecture.md) -------------------

class WorkerKillVia(ConnectOn):
    def kill_worker(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        self._via(WorkerKill).kill_worker(i, sig, wait)

    def restart_worker(self, i: int) -> Node:
        return self._via(WorkerKill).restart_worker(i)

    def wait_gone(self, node: Node, timeout: float = 10.0) -> None:
        self._via(WorkerKill).wait_gone(node, timeout)


class WorkerPauseVia(ConnectOn):
    def pause_worker(self, i: int, wait: bool = True) -> None:
        self._via(WorkerPause).pause_worker(i, wait)

    def resume_worker(self, i: int) -> None:
        self._via(WorkerPause).resume_worker(i)

    def wait_paused(self, node: Node, timeout: float = 5.0) -> None:
        self._via(WorkerPause).wait_paused(node, timeout)


class MasterKillVia(WorkerKillVia):  # its wait_gone is the worker kill's
    def kill_master(self, i: int | None = None, sig: int = signal.SIGKILL, wait: bool = True) -> Node:
        return self._via(MasterKill).kill_master(i, sig, wait)

    def restart_master(self, i: int) -> Node:
        return self._via(MasterKill).restart_master(i)

    def active_master(self) -> Node:
        return self._via(ActiveMaster).active_master()


class MasterPauseVia(WorkerPauseVia):  # its wait_paused is the worker pause's
    def pause_master(self, i: int, wait: bool = True) -> None:
        self._via(MasterPause).pause_master(i, wait)

    def resume_master(self, i: int) -> None:
        self._via(MasterPause).resume_master(i)


class HostLinksVia(ConnectOn):
    def host_links(self) -> str:
        return self._via(HostLinks).host_links()


class ExecutorKillVia(ConnectOn):
    def kill_executor(self, executor: Executor, sig: int = signal.SIGKILL) -> None:
        self._via(ExecutorKill).kill_executor(executor, sig)


class ExecutorPauseVia(ConnectOn):
    def pause_executor(self, executor: Executor) -> None:
        self._via(ExecutorPause).pause_executor(executor)

    def resume_executor(self, executor: Executor) -> None:
        self._via(ExecutorPause).resume_executor(executor)


class ResourceManagerRestartVia(ConnectOn):
    def kill_resourcemanager(self, sig: int = signal.SIGKILL) -> Node:
        return self._via(ResourceManagerRestart).kill_resourcemanager(sig)

    def wait_resourcemanager_gone(self, timeout: float = 10.0) -> None:
        self._via(ResourceManagerRestart).wait_resourcemanager_gone(timeout)

    def restart_resourcemanager(self) -> Node:
        return self._via(ResourceManagerRestart).restart_resourcemanager()


class ConnectSparkCluster(MasterKillVia, MasterPauseVia, ExecutorKillVia, ExecutorPauseVia, HostLinksVia):
    """The session's standalone cluster under Spark Connect: every capability of it but
    :class:`~..capabilities.SubmittedDrivers`, and :class:`~..capabilities.ConnectServer`."""

    def __init__(self, inner: StandaloneCluster, *, port: int) -> None:
        super().__init__(inner, port=port)
        self.standalone = inner

    def _launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None) -> ConnectLauncher:
        return ConnectLauncher(self.standalone.driver_site(), workdir, options, port=self.port)
