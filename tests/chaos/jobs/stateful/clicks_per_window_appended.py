"""Clicks per user per 2-second window, as ``clicks_per_window.py`` counts them, appended to JSON files by
``foreachBatch`` -- the way a job is written once its output must go somewhere the file sink does not.

The count is right; the write is not idempotent: a batch Spark replays after a crash (its windows
written, ``commits/N`` not yet) appends the same windows again, and a reader of the directory counts
those clicks twice. Each row carries the batch id that wrote it (lineage). Hard-coded broker, topic
and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, lit, timestamp_millis, window

OUT = "/tmp/streamchaos-test-clicks-per-window-appended"
CHECKPOINT = "/tmp/streamchaos-test-clicks-per-window-appended-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"


def append(windows, batch_id):
    windows.withColumn("batchId", lit(batch_id)).write.mode("append").json(OUT)  # lineage: which batch wrote it


if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-per-window-appended").getOrCreate()
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
    (counts.writeStream.outputMode("append").foreachBatch(append)
     .option("checkpointLocation", CHECKPOINT)
     .trigger(processingTime="2 seconds")
     .start()
     .awaitTermination())
