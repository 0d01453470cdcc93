"""Clicks per user per 2-second window of event time, appended to JSON files by ``foreachBatch`` with the
batch id that wrote each row (lineage) -- ``stateful/clicks_per_window_appended.py`` with its windowing in
a helper module beside it (``windows.py``), as jobs are split once they grow.

The count is right; the write is not idempotent: a batch Spark replays after a crash appends the same
windows again. Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, lit, timestamp_millis
from windows import per_window

OUT = "/tmp/streamchaos-test-refcache-clicks"
CHECKPOINT = "/tmp/streamchaos-test-refcache-clicks-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"


def append(windows, batch_id):
    windows.withColumn("batchId", lit(batch_id)).write.mode("append").json(OUT)


if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-per-window-refcache").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*")
              .withColumn("at", timestamp_millis(col("clickedAt"))))
    (per_window(clicks).writeStream.outputMode("append").foreachBatch(append)
     .option("checkpointLocation", CHECKPOINT)
     .trigger(processingTime="2 seconds")
     .start()
     .awaitTermination())
