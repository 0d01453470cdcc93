"""Sessions of user activity -- a session closes after 3 seconds without a click -- counted per user, from
Kafka into a JSON table: ``session_window`` over the click's own event time, a 2-second watermark, append
mode (a session is written once it closed). Spark's file sink (exactly-once). Hard-coded broker, topic
and absolute paths; nothing of the test plugin.

This twin appends the same rows by ``foreachBatch`` instead of the file sink (each row with the batch id
that wrote it): a batch Spark replays after a crash is appended a second time.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, count, from_json, lit, session_window, timestamp_millis

OUT = "/tmp/streamchaos-test-user-sessions-appended"
CHECKPOINT = "/tmp/streamchaos-test-user-sessions-appended-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"


def append(rows, batch_id):
    rows.withColumn("batchId", lit(batch_id)).write.mode("append").json(OUT)  # lineage: which batch wrote it


if __name__ == "__main__":
    spark = SparkSession.builder.appName("user-sessions-appended").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*")
              .withColumn("at", timestamp_millis(col("clickedAt"))))
    sessions = (clicks.withWatermark("at", "2 seconds")
                .groupBy(session_window("at", "3 seconds").alias("s"), "userId")
                .agg(count("*").alias("clicks"))
                .select(col("s.start").cast("string").alias("sessionStart"),
                        col("s.end").cast("string").alias("sessionEnd"), "userId", "clicks"))
    (sessions.writeStream.outputMode("append").foreachBatch(append)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
