"""Job side: what runs inside the user's Spark job (driver and executors), apart from the harness.

The launcher's environment contract (``job_config``), the Kafka source (``read_kafka``, the Python
data source behind ``format("kafka")``), the ``foreachBatch`` sinks and the exactly-once commit
log. Nothing here imports the harness (stack, faults, observe, runner, plugin, pytest); the parent
package ``pytest_streamchaos`` is a lazy facade, so ``pytest_streamchaos/__init__.py`` plus this
directory is all a Spark Python worker needs (``tests/unit/test_import_graph.py`` checks both).
Users import it through :mod:`pytest_streamchaos.spark`, which re-exports it.

A job typically does::

    from pytest_streamchaos.spark import job_config, read_kafka, ExactlyOnceKafkaSink

    cfg = job_config()
    df = read_kafka(spark, cfg.bootstrap_servers, cfg.input_topic, startingOffsets="earliest")
    sink = ExactlyOnceKafkaSink(cfg.bootstrap_servers, cfg.output_topic)
    (df.writeStream.foreachBatch(sink).option("checkpointLocation", cfg.checkpoint_dir)
       .trigger(processingTime=cfg.trigger_interval).start().awaitTermination())

Imports of the Spark-facing modules are lazy so that ``job_config`` works without pyspark loaded.
"""

from __future__ import annotations

from typing import Any

from pytest_streamchaos.job.config import JobConfig, JobConfigError, job_config

_LAZY = {
    "read_kafka": "pytest_streamchaos.job.kafka",
    "register_kafka_source": "pytest_streamchaos.job.kafka",
    "has_kafka_connector": "pytest_streamchaos.job.kafka",
    "KafkaDataSource": "pytest_streamchaos.job.kafka_source",
    "write_kafka_batch": "pytest_streamchaos.job.kafka_sink",
    "ExactlyOnceKafkaSink": "pytest_streamchaos.job.kafka_sink",
    "CommittedOutputReader": "pytest_streamchaos.job.kafka_sink",
    "KafkaSinkError": "pytest_streamchaos.job.kafka_sink",
    "SinkFencedError": "pytest_streamchaos.job.kafka_sink",
}

__all__ = ["JobConfig", "JobConfigError", "job_config", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
