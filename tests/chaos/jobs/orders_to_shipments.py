"""Orders -> shipments, Kafka to Kafka, as such a job is written for a cluster: no import of the test plugin,
Spark's defaults (``startingOffsets`` latest, no master in the code: spark-submit's), the broker and the
topics hard-coded, and the checkpoint where the deployment says (its first argument: an absolute path,
because on YARN in cluster mode the driver's working directory is a container's, which a re-attempt
does not keep)."""

import sys

from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = SparkSession.builder.appName("OrdersToShipments").getOrCreate()
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load())
    query = (orders.selectExpr("key", "value")
             .writeStream.format("kafka")
             .option("kafka.bootstrap.servers", "localhost:9092")
             .option("topic", "shipments")
             .option("checkpointLocation", sys.argv[1])
             .start())
    query.awaitTermination()
