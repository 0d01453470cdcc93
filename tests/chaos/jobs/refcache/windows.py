"""The job's windowing: clicks per user per 2-second window of their own event time, a 1-second watermark."""

from pyspark.sql.functions import col, window

SIZE = "2 seconds"


def per_window(clicks):
    return (clicks.withWatermark("at", "1 second")
            .groupBy(window("at", SIZE).alias("w"), "userId")
            .count()
            .select(col("w.start").cast("string").alias("windowStart"), "userId", "count"))
