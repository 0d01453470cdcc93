"""The Spark standalone cluster, on any placement (:mod:`..placement`): :class:`~.cluster.StandaloneCluster`
composed of its plan (:mod:`.plan`), readiness (:mod:`.readiness`), daemon control (:mod:`.control`) and
executors (:mod:`.executors`); the daemons' handles are :mod:`.daemons`'."""
