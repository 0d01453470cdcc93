"""The click dedupe on RocksDB, as the Spark docs recommend for large state: the RocksDB state store
with changelog checkpointing, set in the job's own session builder. Same query as ``dedupe_clicks.py``;
its checkpoint path is computed in ``config`` beside it."""

from dedupe_clicks import unique_clicks, write
from pyspark.sql import SparkSession

if __name__ == "__main__":
    spark = (SparkSession.builder.appName("dedupe-clicks-rocksdb")
             .config("spark.sql.streaming.stateStore.providerClass",
                     "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
             .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
             .getOrCreate())
    write(unique_clicks(spark), "dedupe-clicks-rocksdb").awaitTermination()
