"""Orders from Kafka into a Delta Lake bronze table on object storage -- the first hop of a lakehouse whose
tables and checkpoints live in a bucket, as its tutorials write it.

The paths are hard-coded ``s3a://`` URLs; the endpoint and credentials are the cluster's business (its
``core-site.xml``, here the launcher), so the code names none. Delta's SQL extension and catalog are set in the
builder, the stream is appended with Delta's own streaming sink, Spark's defaults (``startingOffsets`` latest),
a hard-coded broker and topic; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, current_timestamp, from_json

KAFKA = "localhost:9092"
TABLE = "s3a://lake/bronze/orders"
CHECKPOINT = "s3a://lake/checkpoints/orders-bronze"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"

if __name__ == "__main__":
    spark = (SparkSession.builder.appName("orders-bronze-s3")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", KAFKA)
              .option("subscribe", "orders")
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
