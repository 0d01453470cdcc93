"""Orders from Kafka into a Delta Lake bronze table, appended from ``foreachBatch`` -- as many jobs do to
add per-batch logic (here: stamping the batch id) before the write.

Each micro-batch's rows are appended with the batch writer, ``df.write.format("delta").mode("append")``.
Nothing ties the write to the micro-batch: a batch Spark replays after a crash (its Delta version
committed, ``commits/N`` not yet) is appended again, as a new version. Its author believed it
exactly-once. Spark's jars pinned as public jobs pin them (``spark.jars.packages``, Delta for Spark 3.5),
hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, lit

KAFKA = "localhost:9092"
TABLE = "/tmp/streamchaos-test-orders-fb-bronze"
CHECKPOINT = "/tmp/streamchaos-test-orders-fb-chk"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"


def append_batch(orders, batch_id):
    orders.withColumn("batch_id", lit(batch_id)).write.format("delta").mode("append").save(TABLE)


if __name__ == "__main__":
    spark = (SparkSession.builder.appName("orders-bronze-foreach-batch")
             .config("spark.jars.packages", "io.delta:delta-spark_2.12:3.2.0,"
                                            "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", KAFKA)
              .option("subscribe", "orders")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o")).select("o.*"))
    (orders.writeStream.foreachBatch(append_batch)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
