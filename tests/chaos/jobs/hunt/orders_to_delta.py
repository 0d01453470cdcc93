"""Orders from Kafka into a Delta Lake bronze table on Delta's streaming sink (it records each batch in its
commit and skips a replayed one), relative paths as a job run from its project's directory writes them,
the session built with Delta's own ``configure_spark_with_delta_pip``. Nothing of the test plugin
(``defects.py`` beside it plants the hunt's defects when asked)."""

from defects import planted
from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"

if __name__ == "__main__":
    builder = (SparkSession.builder.appName("orders-to-delta")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o")).select("o.*"))
    (planted(orders, "order_id").writeStream.format("delta").outputMode("append")
     .option("checkpointLocation", "lake/_checkpoints/orders")
     .start("lake/orders")
     .awaitTermination())
