"""``read_kafka``: one call that gives a job a Kafka stream, with or without Spark's connector jar."""

from __future__ import annotations

import os
from typing import Any

from pytest_streamchaos.job.kafka_source import SOURCE_NAME, KafkaDataSource

_CONNECTOR_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"


def has_kafka_connector(spark: Any) -> bool:
    """True when Spark's own Kafka connector (``spark-sql-kafka-0-10``) is on the driver's classpath.

    Spark Connect sessions have no JVM gateway here; they report False (the Python source works there).
    """
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return False
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(_CONNECTOR_CLASS, False, loader)
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def register_kafka_source(spark: Any) -> None:
    """Register the Python Kafka source (format ``streamchaos_kafka``) with this session. Idempotent."""
    spark.dataSource.register(KafkaDataSource)


#: set by the harness: how long a read may stall on the broker before the task fails (ms)
ENV_KAFKA_TIMEOUT_MS = "STREAMCHAOS_KAFKA_TIMEOUT_MS"


def read_kafka(spark: Any, bootstrap_servers: str, topic: str, *, use_connector: bool | None = None,
               **options: Any):
    """A streaming DataFrame of ``topic`` (comma-separated for several) with Spark's Kafka columns:
    key, value (binary), topic, partition, offset, timestamp, timestampType.

    Uses Spark's connector when its jar is on the classpath, else the Python source
    (:mod:`pytest_streamchaos.job.kafka_source`); ``use_connector`` forces the choice. ``options``
    are source options with Spark's names, e.g. ``startingOffsets="earliest"``,
    ``maxOffsetsPerTrigger=1000``, ``**{"kafka.client.id": "job"}``.
    """
    if use_connector is None:
        use_connector = has_kafka_connector(spark)
    if use_connector:
        reader = spark.readStream.format("kafka")
    else:
        register_kafka_source(spark)
        reader = spark.readStream.format(SOURCE_NAME)
    reader = reader.option("kafka.bootstrap.servers", bootstrap_servers).option("subscribe", topic)
    timeout_ms = os.environ.get(ENV_KAFKA_TIMEOUT_MS)
    if timeout_ms and not use_connector and "pollTimeoutMs" not in options:
        # the harness's failure-detection timeout for the Kafka link (PD<TO / PD>TO is checked against it)
        options = {"pollTimeoutMs": timeout_ms, **options}
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()
