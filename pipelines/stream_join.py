"""Stream-stream inner join of two input topics on ``id`` (and ``key``), with watermarks.

Inputs: ``STREAMCHAOS_INPUT_TOPICS="<left>,<right>"`` (exactly two; STREAMCHAOS_INPUT_TOPIC is the
left one). Both carry ``{"id": int, "key": "k<n>", "ts": event_ms, ...}``; think orders (left) and
payments (right) of the same order id.

Output (STREAMCHAOS_OUTPUT_TOPIC): one record per id present on both sides, emitted as soon as
both have arrived::

    {"id": 17, "key": "k3", "left_ts": 1700000000123, "right_ts": 1700000000456}

Join condition: same id and key, and the right event within ``STREAMCHAOS_JOIN_SECONDS`` (default 10)
of the left one in event time. Both sides have a watermark of ``STREAMCHAOS_WATERMARK_SECONDS``
(default 5), which bounds the join state: rows older than watermark + join window are dropped and
can no longer match. Poison records are filtered on both sides. Sink: at-least-once.
"""

import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pytest_streamchaos.job import job_config, read_kafka

SCHEMA = "id long, key string, ts long"


def parse(raw):
    """Good input records as columns id, key, ts; poison records filtered out."""
    r = F.from_json(F.col("value").cast("string"), SCHEMA).alias("r")
    return (raw.select(r).select("r.id", "r.key", "r.ts")
            .where(F.col("id").isNotNull() & F.col("key").isNotNull() & F.col("ts").isNotNull()))


def side(records, prefix: str, watermark_s: float):
    """One join side with prefixed columns, event time and watermark."""
    return (records.select(F.col("id").alias(f"{prefix}_id"), F.col("key").alias(f"{prefix}_key"),
                           F.col("ts").alias(f"{prefix}_ts"),
                           F.timestamp_millis("ts").alias(f"{prefix}_time"))
            .withWatermark(f"{prefix}_time", f"{int(watermark_s * 1000)} milliseconds"))


def join(left, right, join_s: float, watermark_s: float):
    """The inner join, serialised as JSON."""
    lhs, rhs = side(left, "l", watermark_s), side(right, "r", watermark_s)
    within = F.expr(f"INTERVAL {int(join_s * 1000)} MILLISECONDS")
    cond = ((F.col("l_id") == F.col("r_id")) & (F.col("l_key") == F.col("r_key"))
            & (F.col("r_time") >= F.col("l_time") - within) & (F.col("r_time") <= F.col("l_time") + within))
    joined = lhs.join(rhs, cond, "inner").select(
        F.col("l_id").alias("id"), F.col("l_key").alias("key"),
        F.col("l_ts").alias("left_ts"), F.col("r_ts").alias("right_ts"))
    return joined.select(F.col("key"), F.to_json(F.struct(*joined.columns)).alias("value"))


def main() -> None:
    cfg = job_config()
    if len(cfg.input_topics) != 2:
        raise SystemExit(f"stream_join.py needs exactly two input topics in STREAMCHAOS_INPUT_TOPICS "
                         f"(left,right); got {list(cfg.input_topics)}")
    join_s = float(os.environ.get("STREAMCHAOS_JOIN_SECONDS", "10"))
    watermark_s = float(os.environ.get("STREAMCHAOS_WATERMARK_SECONDS", "5"))
    spark = SparkSession.builder.appName("stream_join").getOrCreate()
    options = {"startingOffsets": "earliest"}
    left_topic, right_topic = cfg.input_topics
    left = parse(read_kafka(spark, cfg.bootstrap_servers, left_topic, **options))
    right = parse(read_kafka(spark, cfg.bootstrap_servers, right_topic, **options))
    servers, topic = cfg.bootstrap_servers, cfg.output_topic
    query = (join(left, right, join_s, watermark_s).writeStream
             .outputMode("append")
             .format("kafka")
             .option("kafka.bootstrap.servers", servers)
             .option("topic", topic)
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("stream_join")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
