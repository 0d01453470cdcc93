"""Large orders from Kafka to Kafka, written for Spark Connect the way its docs show it.

A Connect client: ``SparkSession.builder.remote("sc://localhost:15002")`` with the server's address
hard-coded, the broker's too (``localhost:9092``), hard-coded topics, Spark's defaults (``startingOffsets``
latest), ``format("kafka")`` both ways, a relative checkpoint (on the server: its working directory), nothing
of the test plugin. A filter keeps the orders of 100 or more.
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, get_json_object


def large_orders(spark: SparkSession) -> DataFrame:
    """The orders of 100 or more, as Kafka records (key: the order's id)."""
    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "orders")
              .load())
    return (orders.select(get_json_object(col("value").cast("string"), "$.order_id").alias("key"),
                          get_json_object(col("value").cast("string"), "$.amount").cast("double").alias("amount"),
                          col("value"))
            .where(col("amount") >= 100)
            .select("key", "value"))


def run(spark: SparkSession) -> None:
    query = (large_orders(spark).writeStream.format("kafka")
             .option("kafka.bootstrap.servers", "localhost:9092")
             .option("topic", "large_orders")
             .option("checkpointLocation", "chk-large-orders")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    run(SparkSession.builder.remote("sc://localhost:15002").getOrCreate())
