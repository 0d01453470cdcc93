"""``read_kafka``: a job's Kafka stream in one call, on Spark's own connector (``format("kafka")``)."""

from __future__ import annotations

from typing import Any


def read_kafka(spark: Any, bootstrap_servers: str, topic: str, **options: object) -> Any:
    """A streaming DataFrame of ``topic`` (comma-separated for several) with Spark's Kafka columns
    (key, value, topic, partition, offset, timestamp, timestampType): ``spark.readStream.format("kafka")``
    with ``kafka.bootstrap.servers`` and ``subscribe`` set. ``options`` are the connector's options,
    e.g. ``startingOffsets="earliest"``, ``maxOffsetsPerTrigger=1000``, ``**{"kafka.client.id": "job"}``.
    """
    reader = spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
    reader = reader.option("subscribe", topic)
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()
