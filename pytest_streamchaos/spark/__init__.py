"""The job-facing API under its public import path, and the harness's launcher.

What a job imports (``job_config``, ``read_kafka``, the sinks, ...) lives in the job-side package
:mod:`pytest_streamchaos.job`; this package re-exports it, so ``from pytest_streamchaos.spark import
job_config, read_kafka, ExactlyOnceKafkaSink`` keeps working, and so do the old module paths
(``pytest_streamchaos.spark.kafka_sink`` is the module ``pytest_streamchaos.job.kafka_sink``).
The module docstring of :mod:`pytest_streamchaos.job` shows a typical job.

Harness side (never imported by a job): :mod:`.launcher` (``spark-submit``, kill / restart of the
driver) and :mod:`.kafka_shim` (the ``kafka.DefaultSource`` shim jar the launcher puts on the class
path). Imports of the Spark-facing modules are lazy so that ``job_config`` works without pyspark.
"""

from __future__ import annotations

from typing import Any

from pytest_streamchaos.job import _LAZY, JobConfig, JobConfigError, job_config

__all__ = ["JobConfig", "JobConfigError", "job_config", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
