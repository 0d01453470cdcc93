"""Each ad click numbered within its user's history (the user's 1st, 2nd, ... click), with
``applyInPandasWithState``: the count per user is kept in Spark's state between micro-batches. Kafka to
Kafka; hard-coded broker, topics and absolute checkpoint, Spark's defaults, nothing of the test plugin.
The click id travels as the output record's key."""

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, struct, to_json
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

CHECKPOINT = "/tmp/streamchaos-test-clicks-numbered-pandas-chk"
CLICK = StructType([StructField("clickId", StringType()), StructField("userId", StringType()),
                    StructField("url", StringType()), StructField("clickedAt", DoubleType())])
NUMBERED = StructType([StructField("clickId", StringType()), StructField("userId", StringType()),
                       StructField("clickNumber", LongType())])


def number_clicks(key, batches, state):
    seen = state.get[0] if state.exists else 0
    for clicks in batches:
        clicks = clicks.sort_values("clickedAt")
        numbers = range(seen + 1, seen + len(clicks) + 1)
        seen += len(clicks)
        yield pd.DataFrame({"clickId": clicks["clickId"], "userId": clicks["userId"], "clickNumber": list(numbers)})
    state.update((seen,))


if __name__ == "__main__":
    spark = SparkSession.builder.appName("clicks-numbered").getOrCreate()
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), CLICK).alias("c"))
              .select("c.*"))
    numbered = clicks.groupBy("userId").applyInPandasWithState(
        number_clicks, outputStructType=NUMBERED, stateStructType="seen long", outputMode="append",
        timeoutConf=GroupStateTimeout.NoTimeout)
    (numbered.select(col("clickId").alias("key"), to_json(struct("clickId", "userId", "clickNumber")).alias("value"))
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "clicks-numbered")
     .option("checkpointLocation", CHECKPOINT)
     .outputMode("append")
     .start()
     .awaitTermination())
