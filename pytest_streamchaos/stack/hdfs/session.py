"""The session's HDFS: the ``hdfs`` storage's factory (its entry in :data:`pytest_streamchaos.storages.STORAGES`
names it; :meth:`~pytest_streamchaos.stack.fixtures.Stacks.service` calls it on first use)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.steps import Step, jar_step

if TYPE_CHECKING:
    from pytest_streamchaos.stack.fixtures import Stacks
    from pytest_streamchaos.stack.hdfs.cluster import LocalHdfsCluster


def session_service(stacks: Stacks, backend: str) -> LocalHdfsCluster:
    """A NameNode and two DataNodes on 127.0.0.1, started; local backend only (the test skips on docker, saying
    so)."""
    import pytest

    from pytest_streamchaos.stack.hdfs.cluster import LocalHdfsCluster

    if backend == "docker":
        pytest.skip("HDFS runs on the local backend only (the docker backend has no HDFS nodes yet); "
                    "run this test with --chaos-backend local")
    return stacks.start(LocalHdfsCluster(stacks.tmp.mktemp(f"hdfs-{backend}"), java_home=stacks.settings.java_home,
                                         start_timeout=stacks.settings.start_timeout, host=stacks.host))


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The ``hdfs`` storage's steps of ``prepare``: Hadoop's HDFS jars (``line``: their progress)."""
    return {"hadoop": jar_step(artifacts.hadoop_jars, line)}
