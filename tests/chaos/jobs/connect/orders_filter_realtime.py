"""Large orders from Kafka to Kafka in Spark's real-time mode (``trigger(realTime=...)``, Spark 4.1+).

The same filter as ``orders_filter.py``, on a classic session: a long-running task per input partition writes
each order as it arrives; the offsets are committed at the end of every interval (its first argument, default
``5 seconds``: the checkpoint interval). Hard-coded broker and topics, Spark's defaults, ``outputMode("update")``
as real-time mode wants it, a relative checkpoint, nothing of the test plugin.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object

INTERVAL = sys.argv[1] if len(sys.argv) > 1 else "5 seconds"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("large-orders-realtime").getOrCreate()
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load())
    large = (orders.select(get_json_object(col("value").cast("string"), "$.order_id").alias("key"),
                           get_json_object(col("value").cast("string"), "$.amount").cast("double").alias("amount"),
                           col("value"))
             .where(col("amount") >= 100)
             .select("key", "value"))
    (large.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "large_orders")
     .option("checkpointLocation", "chk-large-orders-rt")
     .outputMode("update")
     .trigger(realTime=INTERVAL)
     .start()
     .awaitTermination())
