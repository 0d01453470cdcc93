"""Test job for the launcher: a tiny batch job on the cluster that prints a known result and exits 0."""

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
total = spark.range(0, 1000, numPartitions=2).selectExpr("sum(id) AS s").first()["s"]
print(f"STREAMCHAOS-RESULT sum={total}", flush=True)
spark.stop()
