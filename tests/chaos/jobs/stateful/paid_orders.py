"""Orders joined with their payments, stream to stream, within 10 seconds of event time -- the join of
Spark's guide (watermarks on both sides, a time-range condition), from Kafka into a JSON table.

Spark's file sink (exactly-once: its ``_spark_metadata`` log). Hard-coded broker, topics and absolute paths;
nothing of the test plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, expr, from_json, timestamp_millis

OUT = "/tmp/streamchaos-test-paid-orders"
CHECKPOINT = "/tmp/streamchaos-test-paid-orders-chk"


def read(spark, topic, schema, prefix):
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", "localhost:9092")
            .option("subscribe", topic)
            .load()
            .select(from_json(col("value").cast("string"), schema).alias("v")).select("v.*")
            .withColumn(f"{prefix}At", timestamp_millis(col(f"{prefix}Time"))))


if __name__ == "__main__":
    spark = SparkSession.builder.appName("paid-orders").getOrCreate()
    orders = read(spark, "orders", "orderId STRING, customer STRING, total DOUBLE, orderTime LONG", "order")
    payments = read(spark, "payments", "paymentId STRING, forOrder STRING, amount DOUBLE, payTime LONG", "pay")
    paid = (orders.withWatermark("orderAt", "5 seconds")
            .join(payments.withWatermark("payAt", "5 seconds"),
                  expr("forOrder = orderId AND payAt >= orderAt AND payAt <= orderAt + interval 10 seconds"))
            .select("orderId", "customer", "total", "paymentId", "amount"))
    (paid.writeStream.format("json")
     .option("path", OUT)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
