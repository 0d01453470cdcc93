"""Revenue per store per 5-minute window, from the point-of-sale feed on Kafka, into Parquet.

The tills retry a sale they got no acknowledgement for, so the feed holds duplicates: they are dropped
within the watermark (``dropDuplicatesWithinWatermark`` on the sale id), then summed per 5-minute window of
the sale's own time. Append mode writes a window once the 10-minute watermark has passed it, through the
file sink. Run from the project's directory: ``spark-submit jobs/store_sales/sales_5min.py``.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, to_timestamp, window
from pyspark.sql.functions import round as round_
from pyspark.sql.functions import sum as sum_
from schema import SALE

if __name__ == "__main__":
    spark = SparkSession.builder.appName("sales-5min").getOrCreate()
    sales = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", "localhost:9092")
             .option("subscribe", "sales")
             .load()
             .select(from_json(col("value").cast("string"), SALE).alias("s")).select("s.*")
             .withColumn("sold_at", to_timestamp("sold_at")))
    unique = sales.withWatermark("sold_at", "10 minutes").dropDuplicatesWithinWatermark(["sale_id"])
    revenue = (unique.groupBy(window("sold_at", "5 minutes"), "store")
               .agg(round_(sum_("amount"), 2).alias("revenue")))
    (revenue.writeStream.format("parquet").outputMode("append")
     .option("path", "output/sales_5min")
     .option("checkpointLocation", "checkpoint/sales_5min")
     .start()
     .awaitTermination())
