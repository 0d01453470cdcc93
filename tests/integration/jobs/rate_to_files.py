"""Test job for the launcher: Spark's rate source -> one JSON line per micro-batch in $RATE_OUT_DIR.

Each line is ``{"batch_id": N, "rows": n, "min": v, "max": v}`` (rate ``value`` bounds), appended to
``batches.jsonl``. Checkpointed in $STREAMCHAOS_CHECKPOINT_DIR so a restarted driver resumes.
"""

import json
import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

out_dir = os.environ["RATE_OUT_DIR"]
checkpoint = os.environ["STREAMCHAOS_CHECKPOINT_DIR"]
trigger = float(os.environ.get("STREAMCHAOS_TRIGGER_SECONDS", "1"))

spark = SparkSession.builder.getOrCreate()
df = spark.readStream.format("rate").option("rowsPerSecond", 5).load()


def write(batch, batch_id: int) -> None:
    row = batch.agg(F.count("*").alias("n"), F.min("value").alias("lo"), F.max("value").alias("hi")).first()
    with open(os.path.join(out_dir, "batches.jsonl"), "a") as f:
        f.write(json.dumps({"batch_id": batch_id, "rows": row["n"], "min": row["lo"], "max": row["hi"]}) + "\n")


query = (df.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
         .trigger(processingTime=f"{int(trigger * 1000)} milliseconds").start())
query.awaitTermination()
