"""Test job for the checkpoint gate: Spark's rate source -> counts per key (a stateful aggregation,
so executors commit state store versions) -> one JSON directory per micro-batch under $RATE_OUT_DIR,
written by ``foreachBatch`` (``batch=<N>/`` with Hadoop's ``_SUCCESS`` once the batch's files are
visible). Checkpointed in $STREAMCHAOS_CHECKPOINT_DIR so a restarted driver resumes."""

import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out_dir = os.environ["RATE_OUT_DIR"]
checkpoint = os.environ["STREAMCHAOS_CHECKPOINT_DIR"]

spark = SparkSession.builder.getOrCreate()
counts = (spark.readStream.format("rate").option("rowsPerSecond", 20).load()
          .groupBy((F.col("value") % 4).alias("k")).count())


def write(batch, batch_id: int) -> None:
    batch.write.mode("overwrite").json(os.path.join(out_dir, f"batch={batch_id}"))


(counts.writeStream.outputMode("update").foreachBatch(write).option("checkpointLocation", checkpoint)
 .trigger(processingTime="1 second").start().awaitTermination())
