"""Orders -> ledger, Kafka to Kafka with Spark's Kafka sink, its producer's ``acks`` given on the command
line (production code would hard-code it: ``"1"`` where someone traded durability for latency, ``"all"``
otherwise). Input ids travel as the output's Kafka key."""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object

if __name__ == "__main__":
    bootstrap, source, sink, checkpoint, acks = sys.argv[1:6]
    spark = SparkSession.builder.appName(f"orders-to-ledger-acks-{acks}").getOrCreate()
    orders = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source).load())
    ledger = orders.select(get_json_object(col("value").cast("string"), "$.id").alias("key"), col("value"))
    (ledger.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", bootstrap)
     .option("topic", sink)
     .option("kafka.acks", acks)
     .option("checkpointLocation", checkpoint)
     .start().awaitTermination())
