"""The user's driver on this host: ``spark-submit`` in client mode against a cluster, and the handle the
runner and the faults drive it by (:class:`~.job.SparkJob`, a :class:`~..base.JobHandle`).

A cluster hands out a launcher for itself (``SparkCluster.launcher``): the Spark standalone cluster
(:mod:`..standalone`, on either placement) a :class:`~.launcher.SubmitLauncher` with its master URL, the
address its executors reach a driver at, and where a job's executors are found. What a job is -- its
script, files, conf and Spark's Kafka connector -- is decided above the stack
(:mod:`pytest_streamchaos.spark.launcher`) and handed over as a :class:`~..base.SparkApp`.

Modules: :mod:`.conf` (the Spark conf and JVM options every driver and executor gets), :mod:`.command`
(the job's directory, its staged files, spark-submit's environment and command line), :mod:`.job` (the
handle), :mod:`.launcher` (the launcher).
"""
