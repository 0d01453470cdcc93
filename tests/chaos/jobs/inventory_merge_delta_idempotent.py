"""Stock on hand per SKU, kept in a Delta Lake table by an additive MERGE from ``foreachBatch`` -- made
idempotent the way Delta documents it for MERGE: the session confs ``spark.databricks.delta.write.txnAppId``
/ ``txnVersion`` set to the job's name and the micro-batch id before the MERGE, so a batch Spark replays
after a crash (its MERGE committed, ``commits/N`` not yet) finds its (txnAppId, txnVersion) in the table's
log and is skipped. The twin of ``inventory_merge_delta.py`` (the same MERGE without the confs).
Hard-coded broker, topic and absolute paths; nothing of the test plugin.
"""

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json
from pyspark.sql.functions import sum as sum_

KAFKA = "localhost:9092"
TABLE = "/tmp/streamchaos-test-inventory-idem"
CHECKPOINT = "/tmp/streamchaos-test-inventory-idem-chk"
SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"


def add_to_stock(receipts, batch_id):
    totals = receipts.groupBy("sku").agg(sum_("qty").alias("qty"))
    spark = receipts.sparkSession
    spark.conf.set("spark.databricks.delta.write.txnAppId", "inventory-merge")
    spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
    stock = DeltaTable.forPath(spark, TABLE)
    (stock.alias("t")
     .merge(totals.alias("s"), "t.sku = s.sku")
     .whenMatchedUpdate(set={"on_hand": "t.on_hand + s.qty"})
     .whenNotMatchedInsert(values={"sku": "s.sku", "on_hand": "s.qty"})
     .execute())


if __name__ == "__main__":
    spark = (SparkSession.builder.appName("inventory-merge-idempotent")
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
