"""Payments -> ledger, Kafka to Kafka, a job that tunes its Kafka clients to notice a slow broker fast.

Latency-sensitive jobs lower ``request.timeout.ms`` (and the admin calls' overall timeout) so that a
broker that stops answering fails the query within seconds instead of the clients' default 30 s; the
plugin reads these literals from the code to judge a network delay's class (PD<TO / PD>TO). Wiring as
users write it: bootstrap servers and topics from argv, Spark's defaults otherwise.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, get_json_object

if __name__ == "__main__":
    bootstrap, source, sink, checkpoint = sys.argv[1:5]
    spark = SparkSession.builder.appName("payments-fast-timeouts").getOrCreate()
    payments = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", source)
                .option("kafka.request.timeout.ms", "1500")
                .option("kafka.default.api.timeout.ms", "3000")
                .load())
    ledger = payments.select(col("key"), col("value"),
                             get_json_object(col("value").cast("string"), "$.id").alias("id"))
    (ledger.select("key", "value").writeStream.format("kafka")
     .option("kafka.bootstrap.servers", bootstrap)
     .option("topic", sink)
     .option("kafka.request.timeout.ms", "1500")
     .option("checkpointLocation", checkpoint)
     .start().awaitTermination())
