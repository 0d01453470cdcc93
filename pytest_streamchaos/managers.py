"""Spark's cluster managers as the plugin knows them: one registry, read by the settings (``--chaos-spark``'s
choices and help), the plugin (``@pytest.mark.chaos(spark=...)`` checked at collection), the session's stacks
(which cluster a test gets) and ``python -m pytest_streamchaos.prepare`` (what a manager needs on the machine).

A new cluster manager is one :class:`ClusterManager` in :data:`MANAGERS` and the folder of its cluster: the entry
names, by dotted paths into that folder, the cluster's factory (the ``spark_cluster`` fixture asks it for the
test's cluster), the protocol the cluster is held as, its preflight, its steps of ``prepare`` and its timeline
kinds (:class:`~pytest_streamchaos.entries.BackendEntry`). This module imports only the entries' base (the settings
read it before any stack exists); each is imported when first asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from pytest_streamchaos.entries import BackendEntry, named


@dataclass(frozen=True)
class ClusterManager(BackendEntry):
    """One way the user's job runs on Spark; what every backend entry brings (its preflight, its steps of
    ``prepare`` beyond the default ones, its timeline kinds) is :class:`~pytest_streamchaos.entries.BackendEntry`'s.

    ``cluster``: ``"module:function"``, the factory of the session's cluster for this manager:
    ``function(stacks, backend, ha)`` returns a started ``SparkCluster`` (``stacks``:
    ``stack.fixtures.Stacks``, which keeps it for the session and stops it at the end). ``ha``: whether
    ``--chaos-ha`` (standalone's two masters) applies to it. ``protocol``: ``"module:Class"``, what its cluster
    is (the stack's ``SparkCluster``; the capabilities a fault needs of it are checked when the run is planned)."""

    cluster: str
    ha: bool = False
    protocol: str = "pytest_streamchaos.stack.base:SparkCluster"

    def factory(self) -> Callable[..., object]:
        """The cluster's factory, imported now (what it makes is checked to be a :attr:`protocol` by its caller,
        ``stack.fixtures.Stacks.spark``: the stack is above this module)."""
        return cast("Callable[..., object]", named(self.cluster))

    def service_protocol(self) -> type:
        """What its cluster is (:attr:`protocol`), imported now."""
        protocol = named(self.protocol)
        if not isinstance(protocol, type):
            raise TypeError(f"the {self.name!r} manager's protocol {self.protocol!r} is no class")
        return protocol


# what two managers share: YARN's preflight (an attached YARN answers), Connect's steps and kinds
_YARN_PREFLIGHT = "pytest_streamchaos.stack.yarn.preflight:preflight"
_YARN_STEPS = ("pytest_streamchaos.stack.yarn.cluster:prepare_steps",)
_CONNECT_STEPS = ("pytest_streamchaos.stack.connect.server:prepare_steps",)
_CONNECT_KINDS = "pytest_streamchaos.stack.connect:KINDS"
_CONNECT_FAULTS = "pytest_streamchaos.faults.families.connect:KINDS"
_YARN_FAULTS = "pytest_streamchaos.faults.families.yarn:KINDS"

#: every cluster manager by name; the first is the default
MANAGERS: dict[str, ClusterManager] = {m.name: m for m in (
    ClusterManager("standalone", "a Spark standalone cluster", "pytest_streamchaos.stack.fixtures:standalone_cluster",
                   ha=True),
    ClusterManager("yarn", "a YARN ResourceManager and two NodeManagers, or an existing YARN with --chaos-yarn-conf; "
                   "docs/yarn.md", "pytest_streamchaos.stack.yarn.spark:session_cluster", prepare=("yarn",),
                   preflight=_YARN_PREFLIGHT, steps=_YARN_STEPS, events="pytest_streamchaos.stack.yarn:KINDS",
                   faults=(_YARN_FAULTS,)),
    ClusterManager("connect", "a Spark Connect server on the standalone cluster, the job's script its client; "
                   "docs/connect.md", "pytest_streamchaos.stack.connect.cluster:session_cluster", ha=True,
                   prepare=("connect",), steps=_CONNECT_STEPS, events=_CONNECT_KINDS, faults=(_CONNECT_FAULTS,)),
    ClusterManager("connect-yarn", "a Spark Connect server on YARN (client mode), the job's script its client; "
                   "docs/connect.md#on-yarn", "pytest_streamchaos.stack.connect.yarn:session_cluster",
                   prepare=("connect", "yarn"), preflight=_YARN_PREFLIGHT, steps=_CONNECT_STEPS,
                   events=_CONNECT_KINDS, faults=(_CONNECT_FAULTS, _YARN_FAULTS)),
    ClusterManager("k8s", "a one-node Kubernetes, spark-submit --master k8s://, executors as pods "
                   "(deploy_mode='cluster': the driver a pod too, restarted by a Job); "
                   "docs/kubernetes.md", "pytest_streamchaos.stack.k8s.spark:session_cluster",
                   prepare=("k8s", "k8s-image"),
                   preflight="pytest_streamchaos.stack.k8s.preflight:preflight",
                   steps=("pytest_streamchaos.stack.k8s.preflight:prepare_steps",),
                   events="pytest_streamchaos.stack.k8s:KINDS",
                   faults=("pytest_streamchaos.faults.families.kubernetes:KINDS",
                           "pytest_streamchaos.faults.families.kubernetes_driver:KINDS")),
)}
#: the default cluster manager
DEFAULT = next(iter(MANAGERS))


def choices_help() -> str:
    """``'standalone' (a Spark standalone cluster) or 'yarn' (...)``: the managers for an option's help."""
    parts = [f"{m.name!r} ({m.help})" for m in MANAGERS.values()]
    return ", ".join(parts[:-1]) + " or " + parts[-1]
