"""Harness side of the user's Spark job, above the stack: :mod:`.launcher` (what a job is -- its script,
files and conf -- handed to the cluster's own launcher, which starts, kills and restarts its driver),
:mod:`.connector` (Spark's own Kafka connector, given to every job) and :mod:`.job_files` (the job's own
files).

What a job may import lives in :mod:`pytest_streamchaos.job`.
"""

from typing import Any

#: what a job imported from here until 0.2.0 (``from pytest_streamchaos.spark import job_config``): it lives
#: in the job-side package now, and keeps working from here with a deprecation warning until 0.3.0
_JOB_NAMES = ("JobConfig", "JobConfigError", "job_config", "read_kafka", "write_kafka_batch", "ExactlyOnceKafkaSink",
              "KafkaSinkError", "SinkFencedError")


def __getattr__(name: str) -> Any:
    if name in _JOB_NAMES:
        import pytest_streamchaos.job
        from pytest_streamchaos import deprecation

        deprecation.use("from pytest_streamchaos.spark import <job helper>", error=ImportError)
        return getattr(pytest_streamchaos.job, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
