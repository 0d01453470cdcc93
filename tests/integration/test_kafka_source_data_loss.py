"""The Python Kafka source never skips deleted input silently (Spark's ``failOnDataLoss``).

The embedded broker keeps ~5 MB per partition; writing more makes it delete the oldest records, so a
range starting at offset 0 then asks for offsets that are gone -- the situation of a job that falls
too far behind its input. Reading needs no Spark session: ``read_range`` is what each task runs.
"""

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pytest_streamchaos.spark.kafka_source import KafkaOffsetRange, KafkaSourceError, read_range

# Spark's Kafka columns (kafka_source.SCHEMA), built without a SparkContext
KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType()), StructField("value", BinaryType()), StructField("topic", StringType()),
    StructField("partition", IntegerType()), StructField("offset", LongType()),
    StructField("timestamp", TimestampType()), StructField("timestampType", IntegerType()),
])

pytestmark = pytest.mark.integration


def _fill_past_retention(bootstrap: str, topic: str) -> tuple[int, int]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = b"x" * 1000
    for i in range(12_000):  # ~12 MB into one partition
        p.produce(topic, value, partition=0)
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def test_deleted_offsets_fail_the_read_unless_told_otherwise(kafka):
    topic = kafka.create_topic("retained", partitions=1)
    low, high = _fill_past_retention(kafka.bootstrap_servers, topic)
    assert low > 0, "the broker should have deleted the oldest records"
    schema = KAFKA_SCHEMA
    conf = {"bootstrap.servers": kafka.bootstrap_servers}
    rng = KafkaOffsetRange(topic, 0, 0, high)
    with pytest.raises(KafkaSourceError, match=rf"data loss reading .*offsets 0\.\.{low - 1} were deleted"):
        list(read_range(conf, rng, schema, timeout_s=20))
    batches = list(read_range(conf, rng, schema, timeout_s=20, fail_on_data_loss=False))
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets[0] >= low and offsets[-1] == high - 1 and len(offsets) == high - offsets[0]


@pytest.fixture(autouse=True)
def _close_cached_clients():
    """read_range caches its consumer per process (as in a Spark worker); close it with the test."""
    yield
    from pytest_streamchaos.spark import kafka_clients

    kafka_clients._close_all()
