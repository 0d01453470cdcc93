"""Sessions of user activity -- a session closes after 3 seconds without a click -- counted per user, from
Kafka into a JSON table: ``session_window`` over the click's own event time, a 2-second watermark, append
mode (a session is written once it closed). Spark's file sink (exactly-once). Hard-coded broker, topic
and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, count, from_json, session_window, timestamp_millis

OUT = "/tmp/streamchaos-test-user-sessions"
CHECKPOINT = "/tmp/streamchaos-test-user-sessions-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("user-sessions").getOrCreate()
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
    (sessions.writeStream.format("json").outputMode("append")
     .option("path", OUT)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
