"""Spark's cluster managers as the plugin knows them: one registry, read by the settings (``--chaos-spark``'s
choices and help), the plugin (``@pytest.mark.chaos(spark=...)`` checked at collection), the session's stacks
(which cluster a test gets) and ``python -m pytest_streamchaos.prepare`` (what a manager needs on the machine).

A new cluster manager is one :class:`ClusterManager` in :data:`MANAGERS` and the module its ``cluster``
names. This module imports nothing of the package (the settings read it before any stack exists); the
cluster's factory is named by its dotted path and imported only when a test first asks for that cluster.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ClusterManager:
    """One way the user's job runs on Spark.

    ``cluster``: ``"module:function"``, the factory of the session's cluster for this manager:
    ``function(stacks, backend, ha)`` returns a started ``SparkCluster`` (``stacks``:
    ``stack.fixtures.Stacks``, which keeps it for the session and stops it at the end). ``ha``: whether
    ``--chaos-ha`` (standalone's two masters) applies to it. ``prepare``: the steps of
    ``python -m pytest_streamchaos.prepare`` it needs beyond the default ones (``--for <name>`` runs them)."""

    name: str
    help: str
    cluster: str
    ha: bool = False
    prepare: tuple[str, ...] = ()

    def factory(self) -> Callable[..., Any]:
        """The cluster's factory, imported now."""
        module, _, function = self.cluster.partition(":")
        return getattr(importlib.import_module(module), function)


#: every cluster manager by name; the first is the default
MANAGERS: dict[str, ClusterManager] = {m.name: m for m in (
    ClusterManager("standalone", "a Spark standalone cluster", "pytest_streamchaos.stack.fixtures:standalone_cluster",
                   ha=True),
    ClusterManager("yarn", "a YARN ResourceManager and two NodeManagers, or an existing YARN with --chaos-yarn-conf; "
                   "docs/yarn.md", "pytest_streamchaos.stack.yarn.spark:session_cluster", prepare=("yarn",)),
    ClusterManager("connect", "a Spark Connect server on the standalone cluster, the job's script its client; "
                   "docs/connect.md", "pytest_streamchaos.stack.connect.cluster:session_cluster", ha=True,
                   prepare=("connect",)),
    ClusterManager("connect-yarn", "a Spark Connect server on YARN (client mode), the job's script its client; "
                   "docs/connect.md#on-yarn", "pytest_streamchaos.stack.connect.yarn:session_cluster",
                   prepare=("connect", "yarn")),
)}
#: the default cluster manager
DEFAULT = next(iter(MANAGERS))


def choices_help() -> str:
    """``'standalone' (a Spark standalone cluster) or 'yarn' (...)``: the managers for an option's help."""
    parts = [f"{m.name!r} ({m.help})" for m in MANAGERS.values()]
    return ", ".join(parts[:-1]) + " or " + parts[-1]
