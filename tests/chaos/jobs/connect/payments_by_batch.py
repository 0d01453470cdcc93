"""Payments from Kafka to a ledger topic, one ``foreachBatch`` write per micro-batch.

Written as a classic PySpark script (``SparkSession.builder.getOrCreate()``): under Spark Connect it is a
client unchanged (``SPARK_REMOTE`` names the server), and its ``foreachBatch`` function runs in a Python worker
on the server. Hard-coded broker and topics, Spark's defaults, a relative checkpoint, nothing of the test
plugin. Each batch is written with the batch writer of the Kafka source (``df.write.format("kafka")``).
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object


def write_ledger(batch, batch_id):
    (batch.select(get_json_object(col("value").cast("string"), "$.payment_id").alias("key"), col("value"))
     .write.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "ledger")
     .save())


if __name__ == "__main__":
    spark = SparkSession.builder.appName("payments-by-batch").getOrCreate()
    payments = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", "localhost:9092")
                .option("subscribe", "payments")
                .load())
    (payments.writeStream
     .foreachBatch(write_ledger)
     .option("checkpointLocation", "chk-ledger")
     .trigger(processingTime="1 second")
     .start()
     .awaitTermination())
