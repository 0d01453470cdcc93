"""A real YARN for the job: a ResourceManager and NodeManagers of Hadoop 3.5.0 on this machine, or an
existing YARN the plugin attaches to by its Hadoop conf dir (issue 31, docs/architecture.md §4a of
DESIGN.md: "Cluster managers and existing clusters").

- :mod:`.conf`: the generated Hadoop conf dirs (``yarn-site.xml``, ``core-site.xml``,
  ``capacity-scheduler.xml``) and the reading of one the plugin did not write;
- :mod:`.rest`: the ResourceManager's REST API (``/ws/v1/cluster/...``): cluster info, nodes,
  applications, attempts, containers, and what YARN lets a client do to them (signal a container,
  kill an application), parsed into small frozen records;
- :mod:`.nodes`: the ResourceManager and NodeManager JVMs as restartable daemons, each NodeManager
  with its containers in a cgroup of its own (so "the loss of a node" takes its containers too);
- :mod:`.cluster`: :class:`~.cluster.LocalYarnCluster`, the mini cluster's start, readiness, faults
  on its nodes and teardown;
- :mod:`.faults`: faults through YARN's own API (an executor's container, the ApplicationMaster's),
  which work the same on a cluster the plugin did not start;
- :mod:`.watcher`: YARN's own events on a run's timeline (containers completed with their exit
  status, attempts started, nodes lost);
- :mod:`.attach`: an existing cluster, by its conf dir;
- :mod:`.cli`: ``python -m pytest_streamchaos.stack up yarn --conf-out DIR`` / ``down``.

The Spark side (``spark-submit --master yarn``) is :mod:`pytest_streamchaos.spark.yarn`.
"""

from __future__ import annotations

from pytest_streamchaos.events import StrEnum, add_kinds


class YarnKind(StrEnum):
    """The timeline kinds YARN's watcher records (:mod:`.watcher`): its managers' ``events``, added to the
    timeline when the session starts (``pytest_streamchaos.events.add_kinds``). ``yarn_node_<state>`` /
    ``yarn_app_<state>`` for every value of YARN's NodeState and YarnApplicationState (closed sets in its REST
    API)."""

    YARN_RM_STARTED = "yarn_rm_started"
    YARN_ATTEMPT_STARTED = "yarn_attempt_started"
    YARN_ATTEMPT_ENDED = "yarn_attempt_ended"
    YARN_CONTAINER_STARTED = "yarn_container_started"
    YARN_CONTAINER_COMPLETED = "yarn_container_completed"
    YARN_NODE_RUNNING = "yarn_node_running"
    YARN_NODE_UNHEALTHY = "yarn_node_unhealthy"
    YARN_NODE_DECOMMISSIONING = "yarn_node_decommissioning"
    YARN_NODE_DECOMMISSIONED = "yarn_node_decommissioned"
    YARN_NODE_LOST = "yarn_node_lost"
    YARN_NODE_REBOOTED = "yarn_node_rebooted"
    YARN_NODE_SHUTDOWN = "yarn_node_shutdown"
    YARN_NODE_NEW = "yarn_node_new"
    YARN_APP_NEW = "yarn_app_new"
    YARN_APP_NEW_SAVING = "yarn_app_new_saving"
    YARN_APP_SUBMITTED = "yarn_app_submitted"
    YARN_APP_ACCEPTED = "yarn_app_accepted"
    YARN_APP_RUNNING = "yarn_app_running"
    YARN_APP_FINISHED = "yarn_app_finished"
    YARN_APP_FAILED = "yarn_app_failed"
    YARN_APP_KILLED = "yarn_app_killed"
    #: a restarted ResourceManager answers again (``restart_resourcemanager``'s heal)
    RESOURCEMANAGER_BACK = "resourcemanager_back"

    @classmethod
    def node(cls, state: str) -> YarnKind:
        """The kind of a YARN node reaching ``state`` (a ``NodeState``: ``LOST``, ``RUNNING``, ...)."""
        return cls(f"yarn_node_{state.lower()}")

    @classmethod
    def app(cls, state: str) -> YarnKind:
        """The kind of a YARN application reaching ``state`` (a ``YarnApplicationState``: ``FINISHED``, ...)."""
        return cls(f"yarn_app_{state.lower()}")


#: YARN's timeline kinds, as its managers' entries name them
KINDS = tuple(YarnKind)
add_kinds(KINDS)  # held whenever YARN is in use, a session of the plugin or not

