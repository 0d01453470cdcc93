"""A job that ignores the cluster it is submitted to: ``.master("local[2]")`` in its code."""

import sys

from pyspark.sql import SparkSession

if __name__ == "__main__":
    bootstrap, topic = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.master("local[2]").appName("local master").getOrCreate()
    lines = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).load())
    lines.writeStream.format("noop").start().awaitTermination()
