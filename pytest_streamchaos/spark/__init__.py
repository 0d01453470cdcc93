"""Job side: the launcher's environment contract and the Kafka source/sink helpers a PySpark job uses.

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

from pytest_streamchaos.spark.config import JobConfig, JobConfigError, job_config

_LAZY = {
    "read_kafka": "pytest_streamchaos.spark.kafka",
    "register_kafka_source": "pytest_streamchaos.spark.kafka",
    "has_kafka_connector": "pytest_streamchaos.spark.kafka",
    "KafkaDataSource": "pytest_streamchaos.spark.kafka_source",
    "write_kafka_batch": "pytest_streamchaos.spark.kafka_sink",
    "ExactlyOnceKafkaSink": "pytest_streamchaos.spark.kafka_sink",
    "CommittedOutputReader": "pytest_streamchaos.spark.kafka_sink",
    "KafkaSinkError": "pytest_streamchaos.spark.kafka_sink",
    "SinkFencedError": "pytest_streamchaos.spark.kafka_sink",
}

__all__ = ["JobConfig", "JobConfigError", "job_config", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
