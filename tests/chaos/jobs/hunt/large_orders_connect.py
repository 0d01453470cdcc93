"""Large orders from Kafka to Kafka as a Spark Connect client (``builder.remote("sc://localhost:15002")``),
as Connect's docs show it: hard-coded server, broker and topics, Spark's defaults, a relative checkpoint (on
the server), nothing of the test plugin (``defects.py`` beside it plants the hunt's defects when asked)."""

from defects import planted
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object

if __name__ == "__main__":
    spark = SparkSession.builder.remote("sc://localhost:15002").getOrCreate()
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load()
              .select(get_json_object(col("value").cast("string"), "$.order_id").alias("key"),
                      get_json_object(col("value").cast("string"), "$.amount").cast("double").alias("amount"),
                      col("value")))
    large = planted(orders.where(col("amount") >= 100), "key").select("key", "value")
    (large.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "large_orders")
     .option("checkpointLocation", "chk-hunt-large-orders")
     .start()
     .awaitTermination())
