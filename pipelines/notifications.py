"""Invoices -> loyalty notifications, Kafka to Kafka, written the way such jobs are usually written.

No import of the test plugin, Spark's defaults (``startingOffsets`` latest), the broker and the topic
names hard-coded, a relative checkpoint directory, Spark's own Kafka sink. The chaos test in
``tests/chaos/test_chaos_user_jobs.py`` runs it unchanged (with ``--chaos-kafka-port 9092``, the
embedded cluster answers on localhost:9092).
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, expr, from_json
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

schema = StructType([
    StructField("InvoiceNumber", StringType()),
    StructField("CreatedTime", LongType()),
    StructField("StoreID", StringType()),
    StructField("CustomerCardNo", StringType()),
    StructField("TotalAmount", DoubleType()),
])

if __name__ == "__main__":
    spark = SparkSession.builder.appName("Notifications").getOrCreate()

    kafka_df = (spark.readStream
                .format("kafka")
                .option("kafka.bootstrap.servers", "localhost:9092")
                .option("subscribe", "invoices")
                .load())

    value_df = kafka_df.select(from_json(col("value").cast("string"), schema).alias("value"))

    notification_df = (value_df.select("value.InvoiceNumber", "value.CustomerCardNo", "value.TotalAmount")
                       .withColumn("EarnedLoyaltyPoints", expr("TotalAmount * 0.2")))

    kafka_target_df = notification_df.selectExpr(
        "InvoiceNumber as key",
        "to_json(named_struct('CustomerCardNo', CustomerCardNo, 'TotalAmount', TotalAmount, "
        "'EarnedLoyaltyPoints', EarnedLoyaltyPoints, 'InvoiceNumber', InvoiceNumber)) as value")

    notification_writer_query = (kafka_target_df.writeStream
                                 .queryName("Notification Writer")
                                 .format("kafka")
                                 .option("kafka.bootstrap.servers", "localhost:9092")
                                 .option("topic", "notifications")
                                 .outputMode("append")
                                 .option("checkpointLocation", "chk-point-dir")
                                 .start())

    notification_writer_query.awaitTermination()
