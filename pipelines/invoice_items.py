"""Invoices -> one JSON line per line item (``explode``), Kafka to the file sink.

Written the way people write it: ``format("kafka")`` with Spark's defaults, the broker address from
argv, a relative output path and checkpoint, the JSON file sink (exactly-once through its
``_spark_metadata`` log). Usage: ``invoice_items.py <bootstrap servers> <topic>``.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, explode, from_json
from pyspark.sql.types import ArrayType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

line_item = StructType([
    StructField("ItemCode", StringType()),
    StructField("ItemDescription", StringType()),
    StructField("ItemPrice", DoubleType()),
    StructField("ItemQty", IntegerType()),
    StructField("TotalValue", DoubleType()),
])
schema = StructType([
    StructField("InvoiceNumber", StringType()),
    StructField("CreatedTime", LongType()),
    StructField("StoreID", StringType()),
    StructField("InvoiceLineItems", ArrayType(line_item)),
])

if __name__ == "__main__":
    bootstrap, topic = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.appName("Invoice Items").getOrCreate()

    raw = (spark.readStream.format("kafka")
           .option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", topic)
           .load())
    invoices = raw.select(from_json(col("value").cast("string"), schema).alias("v")).select("v.*")
    items = (invoices.withColumn("LineItem", explode("InvoiceLineItems"))
             .select("InvoiceNumber", "CreatedTime", "StoreID",
                     col("LineItem.ItemCode").alias("ItemCode"),
                     col("LineItem.ItemQty").alias("ItemQty"),
                     col("LineItem.TotalValue").alias("TotalValue")))

    query = (items.writeStream
             .format("json")
             .queryName("Flattened Invoice Writer")
             .outputMode("append")
             .option("path", "output")
             .option("checkpointLocation", "chk-point-dir")
             .trigger(processingTime="1 second")
             .start())
    query.awaitTermination()
