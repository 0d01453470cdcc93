"""Orders -> shipment requests, Kafka to Kafka, written the way Spark 3.5 tutorials and public repos write it.

It pins Spark 3.5's Kafka connector in its own code (``spark.jars.packages`` =
``spark-sql-kafka-0-10_2.12:3.5.0``, the coordinate most public jobs carry), hard-codes
``localhost:9092`` and its topics, keeps a relative checkpoint and imports nothing of the test plugin.
``tests/chaos/test_chaos_spark_lines.py`` runs it unchanged on either Spark line.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, round, struct, to_json
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

KAFKA_BOOTSTRAP_SERVERS = "localhost:9092"

order_schema = StructType([
    StructField("order_id", StringType()),
    StructField("customer", StringType()),
    StructField("amount", DoubleType()),
    StructField("created_at", LongType()),
])

if __name__ == "__main__":
    spark = (SparkSession.builder
             .appName("OrdersToShipments")
             .config("spark.jars.packages", "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")

    orders = (spark.readStream
              .format("kafka")
              .option("kafka.bootstrap.servers", KAFKA_BOOTSTRAP_SERVERS)
              .option("subscribe", "orders")
              .option("startingOffsets", "latest")
              .load()
              .select(from_json(col("value").cast("string"), order_schema).alias("order"))
              .select("order.*"))

    shipments = orders.withColumn("amount_with_vat", round(col("amount") * 1.2, 2))

    query = (shipments
             .select(col("order_id").alias("key"), to_json(struct("*")).alias("value"))
             .writeStream
             .format("kafka")
             .option("kafka.bootstrap.servers", KAFKA_BOOTSTRAP_SERVERS)
             .option("topic", "shipments")
             .option("checkpointLocation", "checkpoints/shipments")
             .outputMode("append")
             .start())

    query.awaitTermination()
