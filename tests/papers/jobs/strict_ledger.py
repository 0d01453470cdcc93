"""Orders -> ledger, Kafka to Kafka, a job that insists every order has a timestamp: ``assert_true``
raises in the task for an order without one -- the "uncaught exception due to data quality" of seed
paper 000, §VII. Wiring from argv, Spark's defaults otherwise; the output's Kafka key is the input id."""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import assert_true, col, get_json_object

if __name__ == "__main__":
    bootstrap, source, sink, checkpoint = sys.argv[1:5]
    spark = SparkSession.builder.appName("strict-ledger").getOrCreate()
    orders = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).load())
    value = col("value").cast("string")
    # in the filter, not as a column: an unused column would be pruned and never checked
    checked = (orders.select(get_json_object(value, "$.id").alias("key"), col("value"))
               .where(assert_true(get_json_object(col("value").cast("string"), "$.ts").isNotNull(),
                                  "order without ts").isNull()))
    (checked.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", bootstrap)
     .option("topic", sink)
     .option("checkpointLocation", checkpoint)
     .start().awaitTermination())
