"""A real HDFS (Hadoop 3.5.0): :class:`~.cluster.LocalHdfsCluster` composed of its plan (:mod:`.plan`),
readiness (:mod:`.state`) and node control (:mod:`.control`); :mod:`.watcher` puts what HDFS does on a
run's timeline. The nodes bind 127.0.0.1: the local backend's only."""

from pytest_streamchaos.events import Kind

#: the timeline kinds HDFS records (:mod:`.watcher`, the HDFS faults): its storage entry's ``events``
KINDS = (Kind.NAMENODE_SAFEMODE_EXIT, Kind.DATANODE_REGISTERED, Kind.DATANODE_DEAD)
