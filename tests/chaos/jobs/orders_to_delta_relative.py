"""Orders from Kafka into a Delta Lake bronze table under a relative path -- a lakehouse quick start's first
hop, run from the project's folder (``spark-submit jobs/bronze.py`` writes ``./data/bronze``).

``configure_spark_with_delta_pip`` builds the session, Delta's SQL extension and catalog as Delta's docs set
them, Delta's own streaming sink, Spark's defaults (``startingOffsets`` latest), hard-coded broker and topic,
and the table and its checkpoint at relative paths: Spark resolves them against the driver's working
directory. Nothing of the test plugin.
"""

from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, current_timestamp, from_json

KAFKA = "localhost:9092"
TOPIC = "orders"
TABLE = "data/bronze"
CHECKPOINT = "data/_checkpoints/bronze"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"

if __name__ == "__main__":
    builder = (SparkSession.builder.appName("orders-bronze-relative")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    spark = configure_spark_with_delta_pip(
        builder, extra_packages=["org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"]).getOrCreate()

    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", KAFKA)
              .option("subscribe", TOPIC)
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o"))
              .select("o.*")
              .withColumn("ingested_at", current_timestamp()))

    (orders.writeStream
     .format("delta")
     .outputMode("append")
     .option("checkpointLocation", CHECKPOINT)
     .start(TABLE)
     .awaitTermination())
