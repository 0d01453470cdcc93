"""Clicks without their duplicates: a click the app sent twice (a retry) kept once, by its id, within the
watermark -- ``dropDuplicatesWithinWatermark``'s documented use, from Kafka into a JSON table.

Event time is the click's own ``clickedAt``; a 2-second watermark bounds the state. Spark's file sink
(exactly-once: its ``_spark_metadata`` log). Hard-coded broker, topic and absolute paths; nothing of the
test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, timestamp_millis

OUT = "/tmp/streamchaos-test-unique-clicks"
CHECKPOINT = "/tmp/streamchaos-test-unique-clicks-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("unique-clicks").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*")
              .withColumn("at", timestamp_millis(col("clickedAt"))))
    unique = clicks.withWatermark("at", "2 seconds").dropDuplicatesWithinWatermark(["clickId"])
    (unique.drop("at").writeStream.format("json")
     .option("path", OUT)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
