"""Orders deduplicated by id into a Delta Lake silver table on object storage: a stateful query whose state
store lives in the checkpoint's bucket -- every micro-batch writes each state partition's ``N.delta`` there
as a temporary object and "renames" it (on S3A: a COPY and a DELETE).

Kafka delivers an order again after a producer retry; the query keeps the ids it has seen for 30 seconds of
event time (``withWatermark`` + ``dropDuplicates``) and appends each order once with Delta's streaming sink.
Hard-coded broker, topic and ``s3a://`` paths; no endpoint in the code; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, timestamp_millis

KAFKA = "localhost:9092"
TABLE = "s3a://lake/silver/orders"
CHECKPOINT = "s3a://lake/checkpoints/orders-dedup"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"

if __name__ == "__main__":
    spark = (SparkSession.builder.appName("orders-dedup-s3")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", KAFKA)
              .option("subscribe", "orders")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o"))
              .select("o.*")
              .withColumn("created", timestamp_millis(col("created_at"))))
    unique = orders.withWatermark("created", "30 seconds").dropDuplicates(["order_id", "created"])
    (unique.writeStream
     .format("delta")
     .outputMode("append")
     .option("checkpointLocation", CHECKPOINT)
     .start(TABLE)
     .awaitTermination())
