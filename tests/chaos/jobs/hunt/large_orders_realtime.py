"""Large orders from Kafka to Kafka in Spark's real-time mode (``trigger(realTime="5 seconds")``): hard-coded
broker and topics, Spark's defaults, update output mode as the mode wants, a relative checkpoint, nothing of
the test plugin (``defects.py`` beside it plants the hunt's defects when asked)."""

from defects import planted
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object

if __name__ == "__main__":
    spark = SparkSession.builder.appName("large-orders-realtime").getOrCreate()
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
     .option("checkpointLocation", "chk-hunt-large-orders-rt")
     .outputMode("update")
     .trigger(realTime="5 seconds")
     .start()
     .awaitTermination())
