"""The ``foreachBatch`` Delta writer done as Delta's docs say ("Idempotent table writes in foreachBatch"):
each write carries ``txnAppId`` (one id per query, constant across restarts) and ``txnVersion`` (the batch
id), so Delta skips a batch it already committed for that application when Spark replays it.
Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, lit

KAFKA = "localhost:9092"
TABLE = "/tmp/streamchaos-test-orders-idem-bronze"
CHECKPOINT = "/tmp/streamchaos-test-orders-idem-chk"
APP_ID = "orders-bronze-ingest"  # one per query: the table remembers the last batch it committed for it
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"


def append_batch(orders, batch_id):
    (orders.withColumn("batch_id", lit(batch_id))
     .write.format("delta").mode("append")
     .option("txnAppId", APP_ID).option("txnVersion", batch_id)
     .save(TABLE))


if __name__ == "__main__":
    spark = (SparkSession.builder.appName("orders-bronze-idempotent")
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
