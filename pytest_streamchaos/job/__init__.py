"""Job side: conveniences for a job written with this plugin in mind, apart from the harness.

Nothing here is required: a job that reads and writes with ``format("kafka")`` and hard-codes its topics
runs unchanged. What is here: the launcher's environment contract (``job_config``: the run's bootstrap
servers, topics and checkpoint), ``read_kafka`` (``format("kafka")`` with the usual options) and two
``foreachBatch`` sinks, at-least-once and exactly-once (one Kafka transaction per micro-batch). Nothing
here imports the harness (stack, faults, observe, runner, plugin, pytest); the parent package
``pytest_streamchaos`` is a lazy facade, so ``pytest_streamchaos/__init__.py`` plus this directory is
all a Spark Python worker needs (``tests/unit/test_import_graph.py`` checks both).

A job typically does::

    from pytest_streamchaos.job import job_config, read_kafka, ExactlyOnceKafkaSink

    cfg = job_config()
    df = read_kafka(spark, cfg.bootstrap_servers, cfg.input_topic, startingOffsets="earliest")
    sink = ExactlyOnceKafkaSink(cfg.bootstrap_servers, cfg.output_topic, transactional_id=cfg.transactional_id)
    (df.writeStream.foreachBatch(sink).option("checkpointLocation", cfg.checkpoint_dir)
       .trigger(processingTime=cfg.trigger_interval).start().awaitTermination())

Imports of the Spark-facing modules are lazy so that ``job_config`` works without pyspark loaded.
"""

from __future__ import annotations

from typing import Any

from pytest_streamchaos.job.config import JobConfig, JobConfigError, job_config

_LAZY = {
    "read_kafka": "pytest_streamchaos.job.kafka",
    "write_kafka_batch": "pytest_streamchaos.job.kafka_sink",
    "ExactlyOnceKafkaSink": "pytest_streamchaos.job.kafka_sink",
    "KafkaSinkError": "pytest_streamchaos.job.kafka_sink",
    "SinkFencedError": "pytest_streamchaos.job.kafka_sink",
}

__all__ = ["JobConfig", "JobConfigError", "job_config", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
