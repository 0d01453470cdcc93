"""The payments ledger of ``payments_to_ledger.py`` with two bugs planted at known places, for the verdicts'
proofs (do not copy it): a filter meant to skip test payments that drops every payment whose id is divisible
by 97 (*lost*), and a join-like fan-out that books every payment whose id is divisible by 89 twice (one
*duplicate* each; ids divisible by both are dropped). Hard-coded broker, topics and absolute checkpoint (its
own); nothing of the test plugin."""

from pyspark.sql import SparkSession
from pyspark.sql.functions import array, col, explode, get_json_object, lit, when

CHECKPOINT = "/tmp/streamchaos-test-payments-drops-chk"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("payments-to-ledger").getOrCreate()
    payments = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", "localhost:9092")
                .option("subscribe", "payments")
                .load())
    paid = payments.select(get_json_object(col("value").cast("string"), "$.paymentId").alias("key"), col("value"))
    kept = paid.where(col("key").cast("long") % 97 != 0)  # BUG 1: "skip test payments" drops real ones
    copies = when(col("key").cast("long") % 89 == 0, array(lit(0), lit(1))).otherwise(array(lit(0)))
    booked = kept.withColumn("copy", explode(copies)).drop("copy")  # BUG 2: books ids divisible by 89 twice
    (booked.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "ledger")
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
