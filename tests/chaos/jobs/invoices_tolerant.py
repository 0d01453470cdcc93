"""Invoices -> loyalty notifications, as ``pipelines/notifications.py``, by an author who chose to keep the query
running when input offsets vanish: ``failOnDataLoss`` false (Spark's documented switch: "whether to fail the
query when it's possible that data is lost"). Nothing else differs; nothing of the test plugin."""

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
    invoices = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", "localhost:9092")
                .option("subscribe", "invoices")
                .option("failOnDataLoss", "false")
                .load()
                .select(from_json(col("value").cast("string"), schema).alias("value")))
    notifications = (invoices.select("value.InvoiceNumber", "value.CustomerCardNo", "value.TotalAmount")
                     .withColumn("EarnedLoyaltyPoints", expr("TotalAmount * 0.2")))
    (notifications.selectExpr("InvoiceNumber as key",
                              "to_json(named_struct('CustomerCardNo', CustomerCardNo, 'TotalAmount', TotalAmount, "
                              "'EarnedLoyaltyPoints', EarnedLoyaltyPoints, 'InvoiceNumber', InvoiceNumber)) as value")
     .writeStream.queryName("Notification Writer").format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "notifications")
     .option("checkpointLocation", "chk-point-dir")
     .start()
     .awaitTermination())
