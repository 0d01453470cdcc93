"""A deliberately BROKEN enrichment job, for testing the plugin's verdicts. Do not copy it.

It is ``enrich_at_least_once.py`` with two bugs planted at known places:

* it **drops** every input whose id is divisible by 97 (as a buggy filter would): these ids are
  *lost*;
* it **repeats** every input whose id is divisible by 89 (as a bad explode/join would): each such id
  appears twice in the output, i.e. one *duplicate* each.

Ids divisible by both (multiples of 8633) are dropped, not repeated. Everything else is correct, so a
validator must report exactly: lost = {id : id % 97 == 0}, duplicates = {id : id % 89 == 0 and
id % 97 != 0} (once each), and the delivered guarantee "none" (neither at-least-once nor at-most-once).
"""

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pytest_streamchaos.spark.config import job_config
from pytest_streamchaos.spark.kafka import read_kafka
from pytest_streamchaos.spark.kafka_sink import write_kafka_batch

SCHEMA = "id long, key string, ts long"
DROP_DIVISOR = 97
REPEAT_DIVISOR = 89


def parse(raw):
    """Good input records as columns id, key, ts; poison records filtered out."""
    r = F.from_json(F.col("value").cast("string"), SCHEMA).alias("r")
    return (raw.select(r).select("r.id", "r.key", "r.ts")
            .where(F.col("id").isNotNull() & F.col("key").isNotNull() & F.col("ts").isNotNull()))


def broken_enrich(records):
    """The enrichment with the two planted bugs."""
    kept = records.where(F.col("id") % DROP_DIVISOR != 0)  # BUG 1: loses ids divisible by 97
    copies = F.when(F.col("id") % REPEAT_DIVISOR == 0, F.array(F.lit(0), F.lit(1))).otherwise(F.array(F.lit(0)))
    repeated = kept.withColumn("copy", F.explode(copies)).drop("copy")  # BUG 2: ids divisible by 89 twice
    key_num = F.regexp_extract("key", r"^k(\d+)$", 1).cast("int")
    enriched = repeated.select(
        "id", "key", "ts",
        key_num.alias("key_num"),
        (key_num % 10).alias("bucket"),
        F.unix_millis(F.current_timestamp()).alias("processed_ms"),
    )
    return enriched.select(F.col("key"), F.to_json(F.struct(*enriched.columns)).alias("value"))


def main() -> None:
    cfg = job_config()
    spark = SparkSession.builder.appName("enrich_drops_and_repeats").getOrCreate()
    options = {"startingOffsets": "earliest"}
    if cfg.max_rows_per_trigger:
        options["maxOffsetsPerTrigger"] = cfg.max_rows_per_trigger
    raw = read_kafka(spark, cfg.bootstrap_servers, cfg.input_topic, **options)
    servers, topic = cfg.bootstrap_servers, cfg.output_topic
    query = (broken_enrich(parse(raw)).writeStream
             .foreachBatch(lambda batch, _batch_id: write_kafka_batch(batch, servers, topic))
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("enrich_drops_and_repeats")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
