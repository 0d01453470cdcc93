"""Ad clicks deduplicated by click id: a click the tracker sent twice within 10 minutes of event time is
counted once. Kafka to Kafka with Spark's Kafka sink; the dedupe is stateful (a state store per shuffle
partition), on whatever state store the deployment configures (Spark's default is the HDFS-backed one;
``--conf spark.sql.streaming.stateStore.providerClass=...RocksDBStateStoreProvider`` switches).

Written as such jobs are: the broker, topics and the checkpoint come from ``config`` beside it (the
checkpoint path is computed there at run time), Spark's defaults otherwise, nothing of the test plugin.
"""

import config
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, struct, to_json
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

CLICK = StructType([
    StructField("clickId", StringType()),
    StructField("userId", StringType()),
    StructField("url", StringType()),
    StructField("clickedAt", DoubleType()),
])


def unique_clicks(spark):
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", config.BOOTSTRAP_SERVERS)
              .option("subscribe", config.CLICKS_TOPIC)
              .load()
              .select(from_json(col("value").cast("string"), CLICK).alias("click"))
              .select("click.*")
              .withColumn("clickedAt", col("clickedAt").cast("timestamp")))
    return clicks.withWatermark("clickedAt", "10 minutes").dropDuplicatesWithinWatermark(["clickId"])


def write(unique, job_name):
    return (unique.select(col("clickId").alias("key"), to_json(struct(*unique.columns)).alias("value"))
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", config.BOOTSTRAP_SERVERS)
            .option("topic", config.UNIQUE_CLICKS_TOPIC)
            .option("checkpointLocation", config.checkpoint_path(job_name))
            .start())


if __name__ == "__main__":
    spark = SparkSession.builder.appName("dedupe-clicks").getOrCreate()
    write(unique_clicks(spark), "dedupe-clicks").awaitTermination()
