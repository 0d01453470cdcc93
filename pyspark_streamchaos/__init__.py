"""PySpark's auto-registered data sources of pytest-streamchaos.

PySpark imports every top-level module named ``pyspark_*`` on the Python path when a session first
needs a Python data source, and registers its ``DefaultSource`` under ``DefaultSource.name()``
(``pyspark/sql/worker/lookup_data_sources.py``). Ours is the Python Kafka source/sink named
``kafka``; with the shim jar on the driver's class path ``format("kafka")`` reaches it (see
:mod:`pytest_streamchaos.job.kafka_format`). Kept import-light: it is imported in every session.
"""

from pytest_streamchaos.job.kafka_format import KafkaFormatDataSource as DefaultSource

__all__ = ["DefaultSource"]
