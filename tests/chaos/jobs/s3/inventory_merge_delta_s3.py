"""Stock on hand per SKU in a Delta Lake table on object storage, kept by an additive MERGE from ``foreachBatch``
-- the "upsert into a silver table" pattern, with its classic flaw, in a bucket.

Each micro-batch sums the quantity received per SKU and MERGEs it into the table: ``on_hand = t.on_hand +
s.qty``. Nothing ties the MERGE to the micro-batch (no ``txnAppId`` / ``txnVersion``): a batch Spark replays
after a crash (its MERGE committed, ``commits/N`` not yet) is added a second time. No row carries the input ids:
only a comparison with a fault-free run of the same input finds it. Hard-coded broker, topic and ``s3a://``
paths; no endpoint in the code; nothing of the test plugin.
"""

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json
from pyspark.sql.functions import sum as sum_

KAFKA = "localhost:9092"
TABLE = "s3a://lake/silver/inventory"
CHECKPOINT = "s3a://lake/checkpoints/inventory"
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
    spark = (SparkSession.builder.appName("inventory-merge-s3")
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
