"""Test job: a user's unchanged Kafka-to-Kafka query written for Spark's own connector.

It imports nothing of pytest-streamchaos; the launcher's shim makes format("kafka") work.
"""

import os

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
servers = os.environ["STREAMCHAOS_BOOTSTRAP_SERVERS"]
events = (spark.readStream.format("kafka")
          .option("kafka.bootstrap.servers", servers)
          .option("subscribe", os.environ["STREAMCHAOS_INPUT_TOPIC"])
          .load())
query = (events.selectExpr("key", "value")
         .writeStream.format("kafka")
         .option("kafka.bootstrap.servers", servers)
         .option("topic", os.environ["STREAMCHAOS_OUTPUT_TOPIC"])
         .option("checkpointLocation", os.environ["STREAMCHAOS_CHECKPOINT_DIR"])
         .trigger(processingTime="1 second")
         .start())
query.awaitTermination()
