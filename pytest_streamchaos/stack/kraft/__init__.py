"""A real Apache Kafka cluster of KRaft nodes, on any placement (:mod:`..placement`):
:class:`~.cluster.KRaftCluster` composed of its plan (:mod:`.plan`), readiness (:mod:`.readiness`),
broker control (:mod:`.control`), the harness's admin client (:mod:`.admin`) and the job's links
(:mod:`.links`)."""
