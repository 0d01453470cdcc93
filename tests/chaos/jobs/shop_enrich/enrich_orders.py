"""Orders enriched with the customer's region, Kafka to Kafka, written to be run from its own folder
(``cd shop_enrich && spark-submit enrich_orders.py``) the way many public jobs are:

* ``regions`` -- the helper module beside it -- imported by bare name, and used in a UDF, so the
  executors import it too;
* ``regions.csv`` opened by a relative path and joined with the stream (an inner join: an order whose
  customer has no region is dropped);
* a hard-coded ``localhost:9092``, hard-coded topics and a hard-coded absolute checkpoint under /tmp.

It imports nothing of the test plugin. ``tests/chaos/test_chaos_job_files.py`` runs it.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, struct, to_json, udf
from pyspark.sql.types import DoubleType, StringType, StructField, StructType
from regions import customer_code, load_regions

CHECKPOINT = "/tmp/streamchaos-test-shop-enrich-chk"

order_schema = StructType([
    StructField("order_id", StringType()),
    StructField("customer", StringType()),
    StructField("amount", DoubleType()),
])

if __name__ == "__main__":
    spark = SparkSession.builder.appName("EnrichOrders").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    regions = spark.createDataFrame(load_regions("regions.csv"), ["customer", "region"])

    code = udf(customer_code, StringType())
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load()
              .select(from_json(col("value").cast("string"), order_schema).alias("o"))
              .select("o.order_id", code(col("o.customer")).alias("customer"), "o.amount"))
    enriched = orders.join(regions, "customer")

    (enriched.select(col("order_id").alias("key"),
                     to_json(struct("order_id", "customer", "region", "amount")).alias("value"))
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "orders-enriched")
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
