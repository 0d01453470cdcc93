"""Harness side of the user's Spark job: :mod:`.launcher` (``spark-submit`` in client mode, kill and
restart of the driver) and :mod:`.connector` (Spark's own Kafka connector, given to every job).

What a job may import lives in :mod:`pytest_streamchaos.job`.
"""
