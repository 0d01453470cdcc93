"""Sign-ups from Kafka, forwarded to another topic and shown on the console: two streaming queries of one job,
the Kafka query started first.

The first query writes the records as JSON to topic ``output00`` with Spark's own Kafka sink, the second prints
every micro-batch (``format("console")``, no checkpoint: Spark gives it a temporary one); the driver waits on
either (``awaitAnyTermination``). Spark's defaults (``startingOffsets`` latest), the broker
``localhost:9092`` and the topics hard-coded, a relative checkpoint for the Kafka query, nothing of the test
plugin.
"""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, struct, to_json

BROKERS = "localhost:9092"
SCHEMA = "name STRING, email STRING, country STRING, signed_up_at LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("signups").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    signups = (spark.readStream
               .format("kafka")
               .option("kafka.bootstrap.servers", BROKERS)
               .option("subscribe", "input00")
               .load()
               .select(from_json(col("value").cast("string"), SCHEMA).alias("s"))
               .select("s.*"))

    forwarded = (signups.select(to_json(struct("*")).alias("value"))
                 .writeStream
                 .queryName("kafka-output")
                 .format("kafka")
                 .option("kafka.bootstrap.servers", BROKERS)
                 .option("topic", "output00")
                 .option("checkpointLocation", "checkpoints/output00")
                 .start())

    console = (signups.writeStream
               .queryName("console-output")
               .format("console")
               .option("truncate", "false")
               .start())

    spark.streams.awaitAnyTermination()
