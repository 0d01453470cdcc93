"""Clicks per user per 2-second window, as ``clicks_per_window.py`` counts them, published to Kafka as an
update stream: each micro-batch sends the windows it changed, keyed by user and window, for a downstream
table that keeps the latest count per key (update mode, Spark's Kafka sink: at-least-once).

A batch Spark replays after a crash sends its updates again -- the same counts under the same keys --
which a keyed consumer absorbs. Hard-coded broker, topics and absolute checkpoint; nothing of the test
plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, concat_ws, from_json, struct, timestamp_millis, to_json, window

CHECKPOINT = "/tmp/streamchaos-test-clicks-per-window-updates-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-per-window-updates").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*")
              .withColumn("at", timestamp_millis(col("clickedAt"))))
    counts = (clicks.withWatermark("at", "1 second")
              .groupBy(window("at", "2 seconds").alias("w"), "userId")
              .count()
              .select(col("w.start").cast("string").alias("windowStart"), "userId", "count"))
    (counts.select(concat_ws("|", "userId", "windowStart").alias("key"),
                   to_json(struct("windowStart", "userId", "count")).alias("value"))
     .writeStream.format("kafka").outputMode("update")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "click-counts")
     .option("checkpointLocation", CHECKPOINT)
     .trigger(processingTime="2 seconds")
     .start()
     .awaitTermination())
