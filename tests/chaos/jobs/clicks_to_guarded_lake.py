"""Clicks from Kafka into a JSON "lake" by ``foreachBatch``, with a guard against replays -- written the
wrong way round.

Its author knew that Spark replays a batch after a crash and that an append would then write it twice,
so each batch leaves a "done" marker named by its batch id beside the data, and a batch whose marker
exists is skipped. But the marker is written first and the data second: a driver that dies while the
batch's tasks write leaves the marker without the data, and the replay skips the batch -- its clicks are
lost. Killed at any other moment (before the batch, after its data, between batches) it loses and
duplicates nothing. Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

import os

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

LAKE = "/tmp/streamchaos-test-clicks-guarded-lake"
DONE = os.path.join(LAKE, "_batches")  # Spark's readers skip names that start with "_"
CHECKPOINT = "/tmp/streamchaos-test-clicks-guarded-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"


def save(clicks, batch_id):
    marker = os.path.join(DONE, str(batch_id))
    if os.path.exists(marker):
        return  # this batch was written before: a replay
    os.makedirs(DONE, exist_ok=True)
    with open(marker, "w"):
        pass
    clicks.write.mode("append").json(LAKE)


if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-to-guarded-lake").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*"))
    (clicks.writeStream.foreachBatch(save)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
