"""Ad impressions joined with their clicks: a stream-stream join of two Kafka topics.

As people write it: ``format("kafka")`` with Spark's defaults, topic names hard-coded, the broker
from argv, watermarks on both sides, Spark's Kafka sink. Usage: ``ad_clicks_join.py <bootstrap>``.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, expr, from_json, struct, to_json
from pyspark.sql.types import LongType, StringType, StructField, StructType

impression_schema = StructType([StructField("adId", StringType()), StructField("impressionTime", LongType())])
click_schema = StructType([StructField("adId", StringType()), StructField("clickTime", LongType())])


def read(spark, bootstrap, topic, schema):
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
            .select(from_json(col("value").cast("string"), schema).alias("v")).select("v.*"))


if __name__ == "__main__":
    bootstrap = sys.argv[1]
    spark = SparkSession.builder.appName("AdClicks").getOrCreate()

    impressions = (read(spark, bootstrap, "impressions", impression_schema)
                   .withColumn("impressionTs", (col("impressionTime") / 1000).cast("timestamp"))
                   .withWatermark("impressionTs", "10 seconds")
                   .withColumnRenamed("adId", "impressionAdId"))
    clicks = (read(spark, bootstrap, "clicks", click_schema)
              .withColumn("clickTs", (col("clickTime") / 1000).cast("timestamp"))
              .withWatermark("clickTs", "10 seconds")
              .withColumnRenamed("adId", "clickAdId"))

    joined = impressions.join(clicks, expr("""
        clickAdId = impressionAdId AND
        clickTs >= impressionTs AND
        clickTs <= impressionTs + interval 1 minute"""))

    query = (joined.select(col("clickAdId").alias("key"),
                           to_json(struct("impressionAdId", "impressionTime", "clickTime")).alias("value"))
             .writeStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("topic", "ad-clicks")
             .option("checkpointLocation", "checkpoint")
             .start())
    query.awaitTermination()
