"""Stateless enrichment, exactly-once: the job of ``enrich_at_least_once.py`` with a transactional sink.

Same input, same output records. The sink (:class:`ExactlyOnceKafkaSink`) writes each micro-batch
as one Kafka transaction together with a commit marker on ``<output topic>.streamchaos-commits``
(one partition; it must exist before the query starts). After a crash, a replayed batch that was
already committed is skipped, and a restarted driver fences the old one. Read the output with
``CommittedOutputReader`` (it only yields records of committed attempts).

STREAMCHAOS_TRANSACTIONAL_ID, if set, is the sink's transactional id (keep it stable across restarts
of one query; the default is derived from the output topic).
"""

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pytest_streamchaos.spark.config import job_config
from pytest_streamchaos.spark.kafka import read_kafka
from pytest_streamchaos.spark.kafka_sink import ExactlyOnceKafkaSink

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


def main() -> None:
    cfg = job_config()
    spark = SparkSession.builder.appName("enrich_exactly_once").getOrCreate()
    options = {"startingOffsets": "earliest"}
    if cfg.max_rows_per_trigger:
        options["maxOffsetsPerTrigger"] = cfg.max_rows_per_trigger
    raw = read_kafka(spark, cfg.bootstrap_servers, cfg.input_topic, **options)
    sink = ExactlyOnceKafkaSink(cfg.bootstrap_servers, cfg.output_topic, transactional_id=cfg.transactional_id)
    query = (enrich(parse(raw)).writeStream
             .foreachBatch(sink)
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("enrich_exactly_once")
             .start())
    try:
        query.awaitTermination()
    finally:
        sink.close()


if __name__ == "__main__":
    main()
