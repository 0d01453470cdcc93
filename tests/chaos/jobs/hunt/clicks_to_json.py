"""Clicks from Kafka into a JSON lake with Spark's file sink (exactly-once: its ``_spark_metadata`` log),
relative paths as a job run from its project's directory writes them. Nothing of the test plugin
(``defects.py`` beside it plants the hunt's defects when asked)."""

from defects import planted
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

SCHEMA = "clickId STRING, userId STRING, url STRING, clickedAt LONG"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-to-json").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), SCHEMA).alias("c")).select("c.*"))
    (planted(clicks, "clickId").writeStream.format("json")
     .option("path", "lake/clicks")
     .option("checkpointLocation", "checkpoints/clicks")
     .start()
     .awaitTermination())
