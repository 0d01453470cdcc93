"""Sensor readings forwarded to the warehouse's topic in 30-second micro-batches: the trigger a team sets
to write fewer, larger batches downstream. Kafka to Kafka with Spark's Kafka sink, each reading tagged
with its site; hard-coded broker, topics and absolute checkpoint, nothing of the test plugin. The
reading id travels as the output record's key."""

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, concat, get_json_object, lit

CHECKPOINT = "/tmp/streamchaos-test-readings-30s-chk"

if __name__ == "__main__":
    spark = SparkSession.builder.appName("readings-every-30s").getOrCreate()
    readings = (spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", "localhost:9092")
                .option("subscribe", "readings")
                .load())
    tagged = readings.select(
        get_json_object(col("value").cast("string"), "$.readingId").alias("key"),
        concat(lit('{"site":"plant-1","reading":'), col("value").cast("string"), lit("}")).alias("value"))
    (tagged.writeStream.format("kafka")
     .option("kafka.bootstrap.servers", "localhost:9092")
     .option("topic", "readings-warehouse")
     .option("checkpointLocation", CHECKPOINT)
     .trigger(processingTime="30 seconds")
     .start()
     .awaitTermination())
