"""Each ad click numbered within its user's history, with ``transformWithStateInPandas`` (Spark 4's
state API: a ``StatefulProcessor`` with a value state per user). transformWithState needs the RocksDB
state store, which the job sets in its session builder. Kafka to Kafka; hard-coded broker, topics and
absolute checkpoint, nothing of the test plugin. The click id travels as the output record's key."""

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, from_json, struct, to_json
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

CHECKPOINT = "/tmp/streamchaos-test-clicks-numbered-tws-chk"
CLICK = StructType([StructField("clickId", StringType()), StructField("userId", StringType()),
                    StructField("url", StringType()), StructField("clickedAt", DoubleType())])
NUMBERED = StructType([StructField("clickId", StringType()), StructField("userId", StringType()),
                       StructField("clickNumber", LongType())])


class NumberClicks(StatefulProcessor):
    def init(self, handle: StatefulProcessorHandle) -> None:
        self.seen = handle.getValueState("seen", "count long")

    def handleInputRows(self, key, rows, timerValues):
        seen = self.seen.get()[0] if self.seen.exists() else 0
        for clicks in rows:
            clicks = clicks.sort_values("clickedAt")
            numbers = range(seen + 1, seen + len(clicks) + 1)
            seen += len(clicks)
            yield pd.DataFrame({"clickId": clicks["clickId"], "userId": clicks["userId"],
                                "clickNumber": list(numbers)})
        self.seen.update((seen,))

    def close(self) -> None:
        pass


if __name__ == "__main__":
    spark = (SparkSession.builder.appName("clicks-numbered-tws")
             .config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
             .getOrCreate())
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "localhost:9092")
              .option("subscribe", "clicks")
              .load()
              .select(from_json(col("value").cast("string"), CLICK).alias("c"))
              .select("c.*"))
    numbered = clicks.groupBy("userId").transformWithStateInPandas(
        statefulProcessor=NumberClicks(), outputStructType=NUMBERED, outputMode="Append", timeMode="None")
    (numbered.select(col("clickId").alias("key"), to_json(struct("clickId", "userId", "clickNumber")).alias("value"))
     .writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "clicks-numbered")
     .option("checkpointLocation", CHECKPOINT)
     .outputMode("append")
     .start()
     .awaitTermination())
