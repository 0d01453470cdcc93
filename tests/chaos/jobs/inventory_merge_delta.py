"""Stock on hand per SKU, kept in a Delta Lake table by an additive MERGE from ``foreachBatch`` -- the
"upsert into a silver table" pattern, with its classic flaw.

Each micro-batch sums the quantity received per SKU and MERGEs it into the table:
``on_hand = t.on_hand + s.qty``. A MERGE is not idempotent and nothing ties it to the micro-batch (no
``spark.databricks.delta.write.txnAppId`` / ``txnVersion``): a batch Spark replays after a crash (its
MERGE committed, ``commits/N`` not yet) is added a second time, and those SKUs' totals are too high for
good. No row carries the input ids: only a comparison with a fault-free run of the same input finds it.
Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json
from pyspark.sql.functions import sum as sum_

KAFKA = "localhost:9092"
TABLE = "/tmp/streamchaos-test-inventory"
CHECKPOINT = "/tmp/streamchaos-test-inventory-chk"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"


def add_to_stock(receipts, batch_id):
    totals = receipts.groupBy("sku").agg(sum_("qty").alias("qty"))
    stock = DeltaTable.forPath(receipts.sparkSession, TABLE)
    (stock.alias("t")
     .merge(totals.alias("s"), "t.sku = s.sku")
     .whenMatchedUpdate(set={"on_hand": "t.on_hand + s.qty"})
     .whenNotMatchedInsert(values={"sku": "s.sku", "on_hand": "s.qty"})
     .execute())


if __name__ == "__main__":
    spark = (SparkSession.builder.appName("inventory-merge")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())
    (DeltaTable.createIfNotExists(spark).location(TABLE)
     .addColumn("sku", "STRING").addColumn("on_hand", "BIGINT")
     .execute())
    receipts = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", KAFKA)
                .option("subscribe", "receipts")
                .load()
                .select(from_json(col("value").cast("string"), SCHEMA).alias("r")).select("r.*"))
    (receipts.writeStream.foreachBatch(add_to_stock)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
