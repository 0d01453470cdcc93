"""Orders from Kafka into a Delta Lake table whose path and checkpoint come from the command line -- a job
packaged once and deployed per environment (``spark-submit orders.py --output-path ... --checkpoint-path ...``).

``argparse`` for the paths (relative ones resolve against the driver's working directory, as Spark resolves
any relative path), the broker and topic with defaults, Delta's jar pinned in ``spark.jars.packages`` as many
jobs pin it, Delta's streaming sink, Spark's defaults. Nothing of the test plugin.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

SCHEMA = "order_id LONG, customer STRING, sku STRING, qty INT, amount DOUBLE, created_at LONG"


def parse_args():
    parser = argparse.ArgumentParser(description="Kafka orders into a Delta table")
    parser.add_argument("--bootstrap-servers", default="localhost:9092")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--output-path", required=True, help="the Delta table's path")
    parser.add_argument("--checkpoint-path", required=True, help="the stream's checkpoint location")
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
    spark = (SparkSession.builder.appName("orders-to-delta")
             .config("spark.jars.packages", "io.delta:delta-spark_2.13:4.4.0,"
                                            "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0")
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
             .getOrCreate())

    orders = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", args.bootstrap_servers)
              .option("subscribe", args.topic)
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("o"))
              .select("o.*"))

    query = (orders.writeStream
             .format("delta")
             .option("checkpointLocation", args.checkpoint_path)
             .outputMode("append")
             .start(args.output_path))
    query.awaitTermination()
