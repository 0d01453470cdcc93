"""Orders from Kafka into a Delta Lake bronze table -- the first hop of a lakehouse, as its tutorials write it.

The session is built with ``configure_spark_with_delta_pip`` (Delta's own helper: it pins Delta's jar,
and Spark's Kafka connector beside it, in ``spark.jars.packages``), Delta's SQL extension and catalog
are set as Delta's docs say, the stream is appended with Delta's own streaming sink
(``writeStream.format("delta")``), which records each micro-batch in its commit and skips a batch it
already committed when Spark replays it after a crash. Spark's defaults (``startingOffsets`` latest),
hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, current_timestamp, from_json

KAFKA = "localhost:9092"
TOPIC = "orders"
TABLE = "/tmp/streamchaos-test-orders-bronze"
CHECKPOINT = "/tmp/streamchaos-test-orders-bronze-chk"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"

if __name__ == "__main__":
    builder = (SparkSession.builder.appName("orders-bronze")
               .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
               .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
    spark = configure_spark_with_delta_pip(
        builder, extra_packages=["org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"]).getOrCreate()

    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", KAFKA)
              .option("subscribe", TOPIC)
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o"), col("timestamp").alias("kafka_ts"))
              .select("o.*", "kafka_ts")
              .withColumn("ingested_at", current_timestamp()))

    (orders.writeStream
     .format("delta")
     .outputMode("append")
     .option("checkpointLocation", CHECKPOINT)
     .start(TABLE)
     .awaitTermination())
