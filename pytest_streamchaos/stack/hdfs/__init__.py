"""A real HDFS (Hadoop 3.5.0): :class:`~.cluster.LocalHdfsCluster` composed of its plan (:mod:`.plan`),
readiness (:mod:`.state`) and node control (:mod:`.control`); :mod:`.watcher` puts what HDFS does on a
run's timeline. The nodes bind 127.0.0.1: the local backend's only.

This package's face holds only HDFS's timeline kinds (what its storage entry's ``events`` names, and what the
HDFS faults record), held by the timeline as soon as it is imported: the faults may import it, as they import the
stack's interface."""

from pytest_streamchaos.events import Reaction, StrEnum, add_kinds


class HdfsKind(StrEnum):
    """What HDFS does, on a run's timeline (:mod:`.watcher`, the HDFS faults)."""

    NAMENODE_SAFEMODE_EXIT = "namenode_safemode_exit"
    DATANODE_REGISTERED = "datanode_registered"
    DATANODE_DEAD = "datanode_dead"


#: HDFS's timeline kinds and what each says of a fault: its storage entry's ``events``
KINDS = {HdfsKind.NAMENODE_SAFEMODE_EXIT: Reaction.HEALING, HdfsKind.DATANODE_REGISTERED: Reaction.HEALING,
         HdfsKind.DATANODE_DEAD: Reaction.DETECTED}
add_kinds(KINDS)  # held whenever HDFS is in use, a session of the plugin or not
