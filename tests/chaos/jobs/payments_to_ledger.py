"""Payments from Kafka to a ledger topic with Spark's own Kafka sink (``format("kafka")``).

The Kafka sink is at-least-once: its records are produced by the batch's tasks, before Spark writes
``commits/N``; a batch replayed after a driver crash is produced again. One test of it declares it
exactly-once (what its author believed: a planted bug), another at-least-once and asserts that nothing
is lost (what it does deliver). Hard-coded broker, topics and absolute checkpoint; nothing of the
test plugin. The payment id travels as the ledger record's key.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object

CHECKPOINT = "/tmp/streamchaos-test-payments-chk"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("payments-to-ledger").getOrCreate()
    payments = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", "localhost:9092")
                .option("subscribe", "payments")
                .load())
    ledger = payments.select(get_json_object(col("value").cast("string"), "$.paymentId").alias("key"),
                             col("value"))
    (ledger.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "ledger")
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
