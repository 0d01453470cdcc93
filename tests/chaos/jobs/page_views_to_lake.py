"""Page views from Kafka into a Parquet "lake", one directory per micro-batch.

Written the way tutorials write it: ``foreachBatch`` with the batch ``DataFrameWriter`` appending
Parquet (no streaming file sink, so no ``_spark_metadata``), the topic and the paths hard-coded,
relative to where the job runs. Replaying a batch after a crash appends its rows again: at-least-once.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json

TOPIC = "page-views"
LAKE = "lake/page_views"
CHECKPOINT = "checkpoints/page_views"
SCHEMA = "viewId STRING, url STRING, userId STRING, viewedAt LONG"


def write_batch(views, batch_id):
    views.write.mode("append").parquet(f"{LAKE}/batch={batch_id}")


if __name__ == "__main__":
    bootstrap = sys.argv[1]
    spark = SparkSession.builder.appName("page-views-to-lake").getOrCreate()
    raw = (spark.readStream.format("kafka")
           .option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", TOPIC)
           .load())
    views = raw.select(from_json(col("value").cast("string"), SCHEMA).alias("v")).select("v.*")
    (views.writeStream.foreachBatch(write_batch)
     .option("checkpointLocation", CHECKPOINT)
     .start()
     .awaitTermination())
