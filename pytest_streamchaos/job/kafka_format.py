"""``format("kafka")`` without Spark's connector: a Python data source named "kafka".

PySpark registers it by itself (it is ``pyspark_streamchaos.DefaultSource``), and the shim jar
(:mod:`pytest_streamchaos.spark.kafka_shim`) on the driver's class path routes ``format("kafka")`` to
it, so a job written for Spark's connector runs unchanged::

    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers)
          .option("subscribe", "invoices").load())
    q = (df.writeStream.format("kafka").option("kafka.bootstrap.servers", servers)
         .option("topic", "out").option("checkpointLocation", ckpt).start())

Reading: streaming and batch, with Spark's options and columns (see
:mod:`pytest_streamchaos.job.kafka_options`); the planning and the reads are those of
:mod:`pytest_streamchaos.job.kafka_source`. The streaming source keeps its initial offsets in
``$STREAMCHAOS_SOURCE_STATE_DIR`` (:mod:`pytest_streamchaos.job.source_state`), as Spark's
connector keeps them in the checkpoint. Writing: streaming and batch, at-least-once, Spark's sink
columns (``topic``, ``key``, ``value``, ``partition``, ``headers``); every task flushes and fails on a
delivery error, so Spark retries it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from pytest_streamchaos.job import kafka_clients, source_state
from pytest_streamchaos.job.kafka_options import parse_sink_options, parse_source_options
from pytest_streamchaos.job.kafka_sink import KafkaSinkError, _produce
from pytest_streamchaos.job.kafka_source import (
    KafkaOffsetRange,
    KafkaSourceError,
    KafkaStreamReader,
    Offsets,
    read_range,
    source_schema,
)

FORMAT_NAME = "kafka"


class KafkaFormatDataSource(DataSource):
    """The Python data source ``kafka``: Spark's Kafka source and sink options and columns."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        headers = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return source_schema(headers)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaFormatStreamReader(parse_source_options(dict(self.options), streaming=True), schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(parse_source_options(dict(self.options), streaming=False), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        return KafkaStreamWriter(sink_plan(schema, parse_sink_options(dict(self.options))))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        return KafkaBatchWriter(sink_plan(schema, parse_sink_options(dict(self.options))))


# -- reading ----------------------------------------------------------------------------------------


class KafkaFormatStreamReader(KafkaStreamReader):
    """The streaming reader; its initial offsets survive a driver restart before the first commit."""

    def initialOffset(self) -> Offsets:
        directory = source_state.state_dir()
        if directory is None:
            return super().initialOffset()
        key = source_state.state_key(self.opts["client"]["bootstrap.servers"], self.opts["subscription"],
                                     self.opts["starting"])
        saved = source_state.load_initial(directory, key)
        if saved is not None:
            return saved
        offsets = super().initialOffset()
        source_state.save_initial(directory, key, offsets)
        return offsets


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format("kafka")``: the records between startingOffsets and endingOffsets."""

    def __init__(self, opts: dict[str, Any], schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        planner = KafkaStreamReader(self.opts, self.schema)  # same offset resolution as streaming
        try:
            start = planner.initialOffset()
            end = self._ending(planner)
            return planner.partitions(start, end)
        finally:
            planner.stop()

    def _ending(self, planner: KafkaStreamReader) -> Offsets:
        latest = planner._latest()
        if self.opts["ending"] == "latest":
            return latest
        given = json.loads(self.opts["ending"])
        return {t: {p: (off if int(given.get(t, {}).get(p, -1)) == -1 else int(given[t][p]))
                    for p, off in ps.items()} for t, ps in latest.items()}

    def read(self, partition: KafkaOffsetRange) -> Iterator[Any]:
        yield from read_range(self.opts["client"], partition, self.schema, self.opts["poll_timeout_s"],
                              self.opts["fail_on_data_loss"], self.opts["include_headers"])


# -- writing ----------------------------------------------------------------------------------------

_SINK_TYPES = {
    "topic": ("string",),
    "key": ("string", "binary"),
    "value": ("string", "binary"),
    "partition": ("int",),
    "headers": ("array<struct<key:string,value:binary>>",),
}


def sink_plan(schema: StructType, opts: dict[str, Any]) -> dict[str, Any]:
    """Check the data to write against Spark's Kafka sink rules (on the driver, at start) and return
    what the tasks need. Raises :class:`KafkaSinkError` with Spark's wording."""
    types = {f.name.lower(): f.dataType.simpleString() for f in schema.fields}
    if "value" not in types:
        raise KafkaSinkError(f"Required attribute 'value' not found (columns: {[f.name for f in schema.fields]}); "
                             "select or alias one, e.g. to_json(struct(*)) AS value")
    if opts["topic"] is None and "topic" not in types:
        raise KafkaSinkError("topic option required when no 'topic' attribute is present. Use the topic "
                             "option for setting a topic.")
    for col, allowed in _SINK_TYPES.items():
        if col in types and types[col] not in allowed:
            raise KafkaSinkError(f"{col} attribute type must be {' or '.join(allowed)} (got {types[col]})")
    conf = {"acks": "all", "message.timeout.ms": "60000", **opts["client"]}
    return {"conf": conf, "topic": opts["topic"], "columns": sorted(c for c in types if c in _SINK_TYPES)}


class _CountMessage(WriterCommitMessage):
    def __init__(self, count: int) -> None:
        self.count = count


def write_batches(plan: dict[str, Any], batches: Iterator[Any]) -> int:
    """Produce every row of ``batches`` (Arrow record batches), flush, and raise on any delivery
    error so the task fails and Spark retries it (at-least-once). Returns the number of records."""
    p = kafka_clients.producer(plan["conf"])
    errors: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    n = 0
    for b in batches:
        cols = {name.lower(): b.column(i).to_pylist() for i, name in enumerate(b.schema.names)}
        for i in range(b.num_rows):
            _produce(p, plan["topic"] or cols["topic"][i], cols["value"][i], _get(cols, "key", i),
                     _get(cols, "partition", i), on_delivery, _headers(_get(cols, "headers", i)))
        n += b.num_rows
        p.poll(0)
    timeout_s = int(plan["conf"]["message.timeout.ms"]) / 1000.0 + 5.0
    left = p.flush(timeout_s)
    if left or errors:
        reason = f"{left} record(s) not acknowledged within {timeout_s:.0f}s" if left else str(errors[0])
        raise KafkaSinkError(f"writing to Kafka failed: {reason}; the task fails and Spark retries it")
    return n


def _get(cols: dict[str, list], name: str, i: int) -> Any:
    col = cols.get(name)
    return None if col is None else col[i]


def _headers(value: list[dict] | None) -> list[tuple[str, bytes]] | None:
    return [(h["key"], h["value"]) for h in value] if value else None


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("kafka")``: each task writes its rows; nothing to do at commit."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _CountMessage(write_batches(self.plan, iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # records are acknowledged by the broker when the task ends (at-least-once)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass  # written records cannot be taken back; the replay writes them again


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("kafka")``: each task writes its rows."""

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _CountMessage(write_batches(self.plan, iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        pass


__all__ = ["FORMAT_NAME", "KafkaBatchReader", "KafkaFormatDataSource", "KafkaFormatStreamReader",
           "KafkaSourceError", "KafkaStreamWriter", "KafkaBatchWriter", "sink_plan", "write_batches"]
