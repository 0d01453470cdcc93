"""Spark Connect on YARN (``spark="connect-yarn"``): the Connect server submitted to YARN in client mode, as
``sbin/start-connect-server.sh --master yarn`` does -- the server's JVM here is the query's driver, its executors
are containers of its YARN application -- and the job's script its client, as on the standalone cluster
(:mod:`.launcher`).

What YARN adds to the server's submission is :class:`~..yarn.launcher.YarnSubmission`'s (its conf dir, two
executors, a tag by which the application is found), and the server's handle is a
:class:`~..yarn.launcher.YarnJob` (YARN's events of the application on the timeline, the application killed
through the RM when the run stops). The cluster has the YARN cluster's capabilities -- on the mini cluster a
NodeManager's loss and the ResourceManager's restart, on any YARN an executor container's kill -- and
:class:`~..capabilities.ConnectServer`, never :class:`~..capabilities.SubmittedDrivers`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_streamchaos.stack.base import LaunchOptions, SparkApp, SparkCluster
from pytest_streamchaos.stack.connect.cluster import (
    ConnectOn,
    ExecutorKillVia,
    HostLinksVia,
    MasterKillVia,
    ResourceManagerRestartVia,
    session_port,
)
from pytest_streamchaos.stack.connect.job import ConnectJob, ServerJob
from pytest_streamchaos.stack.connect.launcher import ConnectLauncher
from pytest_streamchaos.stack.driver import command
from pytest_streamchaos.stack.driver.job import SparkJob
from pytest_streamchaos.stack.driver.launcher import DriverSite
from pytest_streamchaos.stack.yarn.launcher import YARN_CONF, YarnJob, YarnSubmission, YarnTarget
from pytest_streamchaos.stack.yarn.spark import MiniYarnSparkCluster, YarnSparkCluster

if TYPE_CHECKING:
    from pytest_streamchaos.stack.fixtures import Stacks


class ConnectYarnLauncher(ConnectLauncher):
    """Connect's launcher whose server is submitted to ``yarn`` in client mode (see the module docstring)."""

    def __init__(self, yarn: YarnTarget, site: DriverSite, workdir: str | os.PathLike,
                 options: LaunchOptions | None = None, *, port: int) -> None:
        super().__init__(site, workdir, options, port=port)
        self.submission = YarnSubmission(yarn)

    @property
    def yarn_jobs(self) -> list[YarnJob]:
        """The servers, YARN's applications (what the YARN cluster finds its executors in)."""
        return [j.server for j in self.connect_jobs if isinstance(j.server, YarnJob)]

    @property
    def defaults(self) -> Mapping[str, str]:
        return {**super().defaults, **YARN_CONF}

    def prepare(self, app: SparkApp) -> ConnectJob:  # type: ignore[override]  # as ConnectLauncher's
        return super().prepare(self.submission.begin(app))

    def _effective_conf(self, app: SparkApp, dirs: command.JobDirs, pythonpath: str, home: Path,
                        java: str | None) -> dict[str, str]:
        return self.submission.conf(app, super()._effective_conf(app, dirs, pythonpath, home, java))

    def _server_job(self, submit: SparkJob) -> ServerJob:
        return self.submission.job(submit, self.site.executors)


class ConnectYarnSparkCluster(ExecutorKillVia, HostLinksVia, ConnectOn):
    """A YARN under Spark Connect through its ResourceManager's API (an attached one): an executor container's
    kill, and :class:`~..capabilities.ConnectServer`."""

    name = "connect-yarn"

    def __init__(self, inner: YarnSparkCluster, *, port: int) -> None:
        super().__init__(inner, port=port)
        self.yarn = inner

    def _launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None) -> ConnectLauncher:
        launcher = ConnectYarnLauncher(self.yarn, self.yarn.driver_site(), workdir, options, port=self.port)
        self.yarn.launchers.append(launcher)  # the YARN cluster finds the servers' executors among its jobs
        return launcher


class ConnectMiniYarnSparkCluster(MasterKillVia, ResourceManagerRestartVia, ConnectYarnSparkCluster):
    """YARN's mini cluster under Spark Connect: a NodeManager's loss, the ResourceManager's kill and restart, an
    executor container's kill, and :class:`~..capabilities.ConnectServer`."""


def session_cluster(stacks: Stacks, backend: str, ha: bool) -> SparkCluster:
    """The ``connect-yarn`` manager's factory: the session's YARN (the ``yarn`` manager's: the mini cluster, or
    the one ``--chaos-yarn-conf`` names) behind Connect's launcher."""
    inner = stacks.spark(backend, ha=ha, manager="yarn")
    port = session_port(stacks)
    if isinstance(inner, MiniYarnSparkCluster):
        return ConnectMiniYarnSparkCluster(inner, port=port)
    if not isinstance(inner, YarnSparkCluster):  # the yarn manager's factory makes nothing else
        raise TypeError(f"the yarn manager made {inner!r}")
    return ConnectYarnSparkCluster(inner, port=port)
