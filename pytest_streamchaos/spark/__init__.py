"""Harness side of the user's Spark job, above the stack: :mod:`.launcher` (what a job is -- its script,
files and conf -- handed to the cluster's own launcher, which starts, kills and restarts its driver),
:mod:`.connector` (Spark's own Kafka connector, given to every job) and :mod:`.job_files` (the job's own
files).

What a job may import lives in :mod:`pytest_streamchaos.job`.
"""
