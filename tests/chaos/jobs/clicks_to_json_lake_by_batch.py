"""Clicks from Kafka into a JSON "lake", one directory per micro-batch, overwritten by ``foreachBatch``.

The idempotent way to write files from ``foreachBatch``: the batch id names the directory and the
write overwrites it, so a batch Spark replays after a crash replaces its first files instead of adding
to them (Spark's guide: "use the batchId to deduplicate"). Exactly-once as the lake's readers see it.
Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

LAKE = "/tmp/streamchaos-test-clicks-by-batch-lake"
CHECKPOINT = "/tmp/streamchaos-test-clicks-by-batch-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"


def save(clicks, batch_id):
    clicks.write.mode("overwrite").json(f"{LAKE}/batch_id={batch_id}")


if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-to-json-lake-by-batch").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*"))
    (clicks.writeStream.foreachBatch(save)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
