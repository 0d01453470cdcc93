"""Orders joined with their payments, stream to stream, within 10 seconds of event time -- the join of
Spark's guide (watermarks on both sides, a time-range condition), from Kafka into a JSON table.

Spark's file sink (exactly-once: its ``_spark_metadata`` log). Hard-coded broker, topics and absolute paths;
nothing of the test plugin.

This twin appends the same rows by ``foreachBatch`` instead of the file sink (each row with the batch id
that wrote it): a batch Spark replays after a crash is appended a second time.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, expr, from_json, lit, timestamp_millis

OUT = "/tmp/streamchaos-test-paid-orders-appended"
CHECKPOINT = "/tmp/streamchaos-test-paid-orders-appended-chk"


def read(spark, topic, schema, prefix):
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", "localhost:9092")
            .option("subscribe", topic)
            .load()
            .select(from_json(col("value").cast("string"), schema).alias("v")).select("v.*")
            .withColumn(f"{prefix}At", timestamp_millis(col(f"{prefix}Time"))))



def append(rows, batch_id):
    rows.withColumn("batchId", lit(batch_id)).write.mode("append").json(OUT)  # lineage: which batch wrote it


if __name__ == "__main__":
    spark = SparkSession.builder.appName("paid-orders-appended").getOrCreate()
    orders = read(spark, "orders", "orderId STRING, customer STRING, total DOUBLE, orderTime LONG", "order")
    payments = read(spark, "payments", "paymentId STRING, forOrder STRING, amount DOUBLE, payTime LONG", "pay")
    paid = (orders.withWatermark("orderAt", "5 seconds")
            .join(payments.withWatermark("payAt", "5 seconds"),
                  expr("forOrder = orderId AND payAt >= orderAt AND payAt <= orderAt + interval 10 seconds"))
            .select("orderId", "customer", "total", "paymentId", "amount"))
    (paid.writeStream.foreachBatch(append)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
