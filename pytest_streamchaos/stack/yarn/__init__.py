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

from pytest_streamchaos.events import Kind

#: the timeline kinds YARN records (:mod:`.watcher`, the YARN faults): its managers' ``events``
KINDS = tuple(k for k in Kind if k.value.startswith("yarn_"))
