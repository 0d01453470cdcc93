"""Sales per store per 10-second window: a windowed count that emits counts only (no input ids).

As people write it: ``format("kafka")`` with Spark's defaults, hard-coded topics, the broker from
argv, an event-time watermark, update output mode, Spark's Kafka sink. Output records look like
``{"StoreID": "k3", "window": {"start": "...", "end": "..."}, "count": 17}``.
Usage: ``store_sales_window.py <bootstrap>``.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, count, from_json, struct, to_json, window
from pyspark.sql.types import LongType, StringType, StructField, StructType

schema = StructType([StructField("StoreID", StringType()), StructField("CreatedTime", LongType())])

if __name__ == "__main__":
    bootstrap = sys.argv[1]
    spark = SparkSession.builder.appName("Store Sales").getOrCreate()
    spark.conf.set("spark.sql.shuffle.partitions", 2)

    sales = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", "sales")
             .load()
             .select(from_json(col("value").cast("string"), schema).alias("v")).select("v.*")
             .withColumn("CreatedTs", (col("CreatedTime") / 1000).cast("timestamp")))

    counts = (sales.withWatermark("CreatedTs", "5 seconds")
              .groupBy(col("StoreID"), window(col("CreatedTs"), "10 seconds"))
              .agg(count("*").alias("count")))

    query = (counts.select(col("StoreID").alias("key"), to_json(struct("StoreID", "window", "count")).alias("value"))
             .writeStream.format("kafka")
             .outputMode("update")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("topic", "store-sales")
             .option("checkpointLocation", "checkpoint")
             .trigger(processingTime="1 second")
             .start())
    query.awaitTermination()
