"""Clicks from Kafka into a JSON "lake", appended by ``foreachBatch`` -- as tutorials write it.

Each micro-batch's rows are appended with the batch ``DataFrameWriter``; every call writes part files
with fresh names. A batch Spark replays after a crash (its files written, ``commits/N`` not yet) is
appended a second time: the lake holds those clicks twice. Its test declares it exactly-once, which
is what its author believed. Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

LAKE = "/tmp/streamchaos-test-clicks-lake"
CHECKPOINT = "/tmp/streamchaos-test-clicks-chk"
SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"


def save(clicks, batch_id):
    clicks.write.mode("append").json(LAKE)


if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-to-json-lake").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*"))
    (clicks.writeStream.foreachBatch(save)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
