"""Orders from Kafka, enriched with their size class, back to Kafka keyed by the order id -- the stateless
Kafka-to-Kafka job of every tutorial. Hard-coded broker and topics, Spark's defaults, nothing of the test
plugin (``defects.py`` beside it plants the hunt's defects when asked)."""

from defects import planted
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, struct, to_json, when

SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("orders-enrich").getOrCreate()
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o")).select("o.*"))
    enriched = planted(orders, "order_id").withColumn(
        "size", when(col("amount") >= 250, "large").when(col("amount") >= 50, "medium").otherwise("small"))
    (enriched.select(col("order_id").cast("string").alias("key"), to_json(struct("*")).alias("value"))
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "orders_enriched")
     .option("checkpointLocation", "checkpoints/orders-enrich")
     .start()
     .awaitTermination())
