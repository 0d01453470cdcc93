"""Stateless enrichment, at-least-once: parse each JSON input record, add fields, write it to Kafka.

Input (STREAMCHAOS_INPUT_TOPIC): ``{"id": int, "key": "k<n>", "ts": event_ms, ...}``.
Output (STREAMCHAOS_OUTPUT_TOPIC), one record per good input, Kafka key = the record's key::

    {"id": 17, "key": "k3", "ts": 1700000000123, "key_num": 3, "bucket": 3, "processed_ms": 1700000000456}

Poison records (not JSON, truncated, or without ``id``/``key``/``ts``) are dropped: ``from_json``
yields nulls for them and the filter removes them, so they never crash the query.

Guarantee: at-least-once. Spark's Kafka sink writes each micro-batch from the executors (its producer
retries, ``acks=all``) and fails the batch on a delivery error; a batch replayed after a crash (its
output written, its commit not) is written again, so duplicates are possible, losses are not.

Configured only through the environment (see ``pytest_streamchaos.job.config``).
"""

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pytest_streamchaos.job import job_config, read_kafka

SCHEMA = "id long, key string, ts long"


def parse(raw):
    """Good input records as columns id, key, ts; poison records filtered out."""
    r = F.from_json(F.col("value").cast("string"), SCHEMA).alias("r")
    return (raw.select(r).select("r.id", "r.key", "r.ts")
            .where(F.col("id").isNotNull() & F.col("key").isNotNull() & F.col("ts").isNotNull()))


def enrich(records):
    """Add the key number, a bucket and the processing time; serialise as JSON."""
    key_num = F.regexp_extract("key", r"^k(\d+)$", 1).cast("int")
    enriched = records.select(
        "id", "key", "ts",
        key_num.alias("key_num"),
        (key_num % 10).alias("bucket"),
        F.unix_millis(F.current_timestamp()).alias("processed_ms"),
    )
    return enriched.select(F.col("key"), F.to_json(F.struct(*enriched.columns)).alias("value"))


def read_input(spark, cfg):
    """The input topic as a stream, from the beginning, with the optional rows-per-trigger limit."""
    options = {"startingOffsets": "earliest"}
    if cfg.max_rows_per_trigger:
        options["maxOffsetsPerTrigger"] = cfg.max_rows_per_trigger
    return read_kafka(spark, cfg.bootstrap_servers, cfg.input_topic, **options)


def main() -> None:
    cfg = job_config()
    spark = SparkSession.builder.appName("enrich_at_least_once").getOrCreate()
    out = enrich(parse(read_input(spark, cfg)))
    servers, topic = cfg.bootstrap_servers, cfg.output_topic
    query = (out.writeStream
             .format("kafka")
             .option("kafka.bootstrap.servers", servers)
             .option("topic", topic)
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("enrich_at_least_once")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
