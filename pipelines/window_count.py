"""Event-time tumbling-window count per key, with a watermark; only finalized windows are emitted.

Input (STREAMCHAOS_INPUT_TOPIC): ``{"id": int, "key": "k<n>", "ts": event_ms, ...}``.
Output (STREAMCHAOS_OUTPUT_TOPIC), one record per (key, window) once the watermark has passed the
window's end (``outputMode("append")``)::

    {"key": "k3", "window_start": 1700000000000, "window_end": 1700000005000, "count": 4,
     "ids": [17, 21, 40, 52]}

``ids`` is ``collect_list(id)`` -- a list, not a set, so an input counted twice stays visible.

Settings (environment, besides the STREAMCHAOS_* contract):

* ``STREAMCHAOS_WINDOW_SECONDS`` -- window length (default 5);
* ``STREAMCHAOS_WATERMARK_SECONDS`` -- allowed lateness (default 2). An input whose event time is
  older than the watermark when it arrives is dropped by Spark (counted in the progress report's
  ``stateOperators[].numRowsDroppedByWatermark``), and a window is emitted only after input with a
  later event time moved the watermark past its end -- so the last windows of a run are emitted only
  if input keeps coming.

Late events are **not** sent to STREAMCHAOS_SIDE_TOPIC: Spark drops them inside the aggregation and
exposes neither the rows nor the watermark to the query, so routing them would need a second query
with its own copy of the watermark logic -- not worth it for an example.

Poison records are filtered (``from_json`` yields nulls). Sink: Spark's Kafka sink, at-least-once.
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


def window_counts(records, window_s: float, watermark_s: float):
    """Count and list the ids per key and tumbling event-time window."""
    events = records.withColumn("event_time", F.timestamp_millis("ts"))
    windows = (events.withWatermark("event_time", f"{int(watermark_s * 1000)} milliseconds")
               .groupBy(F.window("event_time", f"{int(window_s * 1000)} milliseconds"), "key")
               .agg(F.count("*").alias("count"), F.collect_list("id").alias("ids")))
    out = windows.select(
        "key",
        F.unix_millis("window.start").alias("window_start"),
        F.unix_millis("window.end").alias("window_end"),
        "count",
        "ids",
    )
    return out.select(F.col("key"), F.to_json(F.struct(*out.columns)).alias("value"))


def main() -> None:
    cfg = job_config()
    window_s = float(os.environ.get("STREAMCHAOS_WINDOW_SECONDS", "5"))
    watermark_s = float(os.environ.get("STREAMCHAOS_WATERMARK_SECONDS", "2"))
    spark = SparkSession.builder.appName("window_count").getOrCreate()
    options = {"startingOffsets": "earliest"}
    if cfg.max_rows_per_trigger:
        options["maxOffsetsPerTrigger"] = cfg.max_rows_per_trigger
    raw = read_kafka(spark, cfg.bootstrap_servers, cfg.input_topic, **options)
    servers, topic = cfg.bootstrap_servers, cfg.output_topic
    query = (window_counts(parse(raw), window_s, watermark_s).writeStream
             .outputMode("append")
             .format("kafka")
             .option("kafka.bootstrap.servers", servers)
             .option("topic", topic)
             .option("checkpointLocation", cfg.checkpoint_dir)
             .trigger(processingTime=cfg.trigger_interval)
             .queryName("window_count")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main()
