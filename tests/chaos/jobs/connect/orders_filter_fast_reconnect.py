"""The large-orders filter (``orders_filter.py``, imported from beside this file) with the client-side settings
docs/connect.md gives for a server's loss: gRPC's reconnect backoff capped at 2 s and the client's retries at most
5 s apart, so the client finds a restarted server within seconds instead of at its next default retry (17 s, 68 s,
then every 60 s after the break). Hard-coded address, nothing of the test plugin.

A custom channel needs the Connect builder, which (unlike ``SparkSession.builder.remote``) does not mark the process
as a Connect client: without ``SPARK_CONNECT_MODE_ENABLED`` every ``pyspark.sql.functions`` call fails with
``assert SparkContext._active_spark_context is not None`` (found by this job's first chaos run).
"""

import os

from orders_filter import run
from pyspark.sql.connect.client import DefaultChannelBuilder
from pyspark.sql.connect.client.retries import DefaultPolicy
from pyspark.sql.connect.session import SparkSession  # the classic builder has no channelBuilder

if __name__ == "__main__":
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # what SparkSession.builder.remote(...) sets
    channel = DefaultChannelBuilder("sc://localhost:15002",
                                    channelOptions=[("grpc.max_reconnect_backoff_ms", 2000)])
    spark = SparkSession.builder.channelBuilder(channel).getOrCreate()
    spark.client.set_retry_policies([DefaultPolicy(max_backoff=5000)])
    run(spark)
