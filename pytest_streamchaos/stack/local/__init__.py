"""The ``local`` backend: every daemon a process of this host on 127.0.0.1 (:mod:`.placement`).

Its clusters are the shared ones on the local placement: :class:`LocalSparkCluster` (Spark standalone,
:mod:`..standalone`) and :class:`LocalKafkaCluster` (KRaft, :mod:`..kraft`); HDFS runs here only
(``stack.hdfs.cluster.LocalHdfsCluster``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pytest_streamchaos.settings import Settings
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.kraft.cluster import KRaftCluster
from pytest_streamchaos.stack.local.placement import LocalPlacement
from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster


class LocalSparkCluster(StandaloneCluster):
    """A Spark standalone cluster of local JVMs: 1 master (2 with ``ha``) and ``workers`` workers, every
    daemon bound to 127.0.0.1 on a pinned port, in the job's group (ZooKeeper excepted)."""

    def __init__(self, workdir: str | os.PathLike, *, host: Host | None = None, **kwargs: Any) -> None:
        """``host``: the session's host resources (default: the current one); the rest:
        :class:`~..standalone.cluster.StandaloneCluster`."""
        super().__init__(workdir, placement=LocalPlacement(host), **kwargs)

    @classmethod
    def from_settings(cls, settings: Settings, workdir: str | os.PathLike, *, ha: bool | None = None,
                      host: Host | None = None) -> LocalSparkCluster:
        """Build from the plugin's :class:`~pytest_streamchaos.settings.Settings` (``ha`` overrides ``settings.ha``)."""
        return cls(workdir, host=host, **cls.settings_kwargs(settings, ha=ha))


class LocalKafkaCluster(KRaftCluster):
    """N KRaft nodes (ids 1..N) as local JVMs on 127.0.0.1, each in its own child group of the job's (a cut
    between brokers tells one node's connections from the others'), the job's links through Toxiproxy."""

    def __init__(self, workdir: str | os.PathLike, brokers: int = 3, *, java_home: str = "",
                 start_timeout: float = 90.0, progress: Callable[[str], None] | None = None,
                 host: Host | None = None, build_links: bool = True) -> None:
        super().__init__(workdir, brokers, placement=LocalPlacement(host), java_home=java_home,
                         start_timeout=start_timeout, progress=progress, build_links=build_links)


__all__ = ["LocalKafkaCluster", "LocalPlacement", "LocalSparkCluster"]
