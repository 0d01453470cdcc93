"""Clicks per user per 2-second window of event time, from Kafka into a JSON table -- the windowed
count of every streaming tutorial.

Event time is the click's own ``clickedAt`` (epoch milliseconds); a 1-second watermark closes each
window, and append mode writes a window once, when the watermark has passed it, through Spark's file sink
(exactly-once: its ``_spark_metadata`` log). Hard-coded broker, topic and absolute paths; nothing of the
test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, timestamp_millis, window

OUT = "/tmp/streamchaos-test-clicks-per-window"
CHECKPOINT = "/tmp/streamchaos-test-clicks-per-window-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-per-window").getOrCreate()
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
    (counts.writeStream.format("json").outputMode("append")
     .option("path", OUT)
     .option("checkpointLocation", CHECKPOINT)
     .trigger(processingTime="2 seconds")
     .start()
     .awaitTermination())
