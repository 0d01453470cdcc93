"""A Kafka streaming source written with PySpark's Python Data Source API.

Spark's own Kafka connector jar (``spark-sql-kafka-0-10``) is not shipped with pyspark and cannot be
downloaded everywhere; this source needs only ``confluent-kafka``. Register and use it with::

    spark.dataSource.register(KafkaDataSource)
    df = (spark.readStream.format("streamchaos_kafka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events")            # comma-separated for several topics
          .option("startingOffsets", "earliest")    # earliest | latest | {"t": {"0": 42}}
          .option("maxOffsetsPerTrigger", 10000)    # optional rate limit
          .load())

It behaves like Spark's source where it matters for fault tolerance:

- Offsets are ``{topic: {partition: next_offset}}``; a micro-batch is a fixed offset range per
  topic-partition, written to the checkpoint's offset log before it runs, so a replayed batch reads
  exactly the same records.
- ``read()`` assigns the partition at the start offset (no consumer group, no offset commits) with
  ``isolation.level=read_committed`` and stops at the end offset by *position*, not by count:
  transaction markers occupy offsets, so a range can hold fewer records than offsets.
- The end of a batch is the last stable offset (ListOffsets with READ_COMMITTED), so an open
  transaction never makes a task wait.
- Admission control (Spark >= 4.2): ``maxOffsetsPerTrigger`` is the default read limit
  (``ReadMaxRows``); ``Trigger.AvailableNow`` is supported.

Columns are those of Spark's Kafka source: key, value (binary), topic (string), partition (int),
offset (long), timestamp (timestamp), timestampType (int).

Caveat for the embedded broker: librdkafka's mock cluster does not implement read_committed (its
last stable offset is the high watermark and it returns no aborted-transaction index), so there
records of aborted or open transactions *are* read. Against a real broker they are not.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pytest_streamchaos.job import kafka_clients
from pytest_streamchaos.job.kafka_options import KafkaOptionError, parse_source_options

SOURCE_NAME = "streamchaos_kafka"
SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)

Offsets = dict[str, dict[str, int]]  #: {topic: {str(partition): next offset to read}}


class KafkaSourceError(RuntimeError):
    """Bad options or an unusable topic; the message names the problem and the fix."""


class KafkaOffsetRange(InputPartition):
    """One topic-partition's records in ``[start, end)``: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end

    def __repr__(self) -> str:
        return f"KafkaOffsetRange({self.topic}[{self.partition}] {self.start}..{self.end})"


def parse_options(options: dict[str, str]) -> dict[str, Any]:
    """Validate the ``streamchaos_kafka`` options; raise :class:`KafkaSourceError` naming the bad one.

    Lenient about unknown options (as this source always was); ``format("kafka")`` is strict
    (:func:`pytest_streamchaos.job.kafka_options.parse_source_options`)."""
    try:
        return parse_source_options(options, streaming=True, strict=False)
    except KafkaOptionError as e:
        raise KafkaSourceError(str(e)) from None


HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def source_schema(include_headers: bool) -> str:
    """The columns of Spark's Kafka source, plus ``headers`` with ``includeHeaders=true``."""
    return f"{SCHEMA}, headers {HEADERS_TYPE}" if include_headers else SCHEMA


class KafkaDataSource(DataSource):
    """The ``streamchaos_kafka`` streaming source (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(parse_options(dict(self.options)), schema)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans offset ranges on the driver and reads them in tasks."""

    def __init__(self, opts: dict[str, Any], schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self._available_now: Offsets | None = None

    # -- driver side --------------------------------------------------------------------------

    def _admin(self):
        return kafka_clients.admin(self.opts["client"])

    def _partitions(self) -> dict[str, list[int]]:
        return resolve_partitions(self._admin(), self.opts)

    def _list_offsets(self, parts: dict[str, list[int]], spec: str, fallback: Offsets | None = None) -> Offsets:
        """Offsets of every partition. A partition whose leader is unavailable (a broker down) is
        retried until ``pollTimeoutMs``; with ``fallback`` (the previous end), it keeps that offset
        meanwhile, so the query goes on with the partitions that are available instead of failing
        -- what Spark's connector achieves by blocking in the consumer for a while."""
        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not any(parts.values()):
            return {t: {} for t in parts}  # a pattern that matches no topic yet
        deadline = time.monotonic() + self.opts["poll_timeout_s"]
        since = getattr(self, "_unavailable_since", None)
        while True:
            want = {TopicPartition(t, p): (OffsetSpec.earliest() if spec == "earliest" else OffsetSpec.latest())
                    for t, ps in parts.items() for p in ps}
            futures = self._admin().list_offsets(
                want, isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=10)
            out: Offsets = {t: {} for t in parts}
            failed: dict[tuple[str, str], str] = {}
            for tp, fut in futures.items():
                try:
                    out[tp.topic][str(tp.partition)] = int(fut.result().offset)
                except KafkaException as e:
                    failed[(tp.topic, str(tp.partition))] = str(e.args[0] if e.args else e)
            if not failed:
                self._unavailable_since = None
                return out
            now = time.monotonic()
            since = since if since is not None else now
            self._unavailable_since = since
            gone_for = now - since
            if gone_for >= self.opts["poll_timeout_s"]:
                raise KafkaSourceError(
                    f"offsets of {sorted(failed)} unavailable for {gone_for:.0f}s (pollTimeoutMs): "
                    f"{next(iter(failed.values()))}")
            if fallback is not None and all(p in fallback.get(t, {}) for t, p in failed):
                for t, p in failed:
                    out[t][p] = int(fallback[t][p])
                return out
            if now >= deadline:
                raise KafkaSourceError(f"offsets of {sorted(failed)} unavailable: {next(iter(failed.values()))}")
            time.sleep(0.5)

    def initialOffset(self) -> Offsets:
        parts = self._partitions()
        starting = self.opts["starting"]
        if starting in ("earliest", "latest"):
            return self._list_offsets(parts, starting)
        given = json.loads(starting)
        earliest = self._list_offsets(parts, "earliest")
        latest = self._list_offsets(parts, "latest")
        out: Offsets = {}
        for t, ps in parts.items():
            out[t] = {}
            for p in ps:
                v = int(given.get(t, {}).get(str(p), -1))
                out[t][str(p)] = earliest[t][str(p)] if v == -2 else latest[t][str(p)] if v == -1 else v
        return out

    def _latest(self, fallback: Offsets | None = None) -> Offsets:
        return self._list_offsets(self._partitions(), "latest", fallback)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.opts["max_rows"]) if self.opts["max_rows"] else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._latest()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        latest = self._available_now or self._latest(fallback=start)
        # Partitions that appeared after the query started are read from their beginning.
        begin = {t: {p: start.get(t, {}).get(p, 0) for p in ps} for t, ps in latest.items()}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return cap_offsets(begin, latest, max_rows)

    def reportLatestOffset(self) -> Offsets | None:
        return None  # one more ListOffsets per trigger is not worth it for the progress report

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        ranges = []
        for topic in sorted(end):
            for p in sorted(end[topic], key=int):
                lo = int(start.get(topic, {}).get(p, 0))
                hi = int(end[topic][p])
                if hi > lo:
                    ranges.append(KafkaOffsetRange(topic, int(p), lo, hi))
        return ranges

    def commit(self, end: Offsets) -> None:
        pass  # the checkpoint is the only record of progress; nothing to commit to Kafka

    def stop(self) -> None:
        kafka_clients.forget_admin(self.opts["client"])

    # -- task side ----------------------------------------------------------------------------

    def read(self, partition: KafkaOffsetRange) -> Iterator[Any]:
        yield from read_range(self.opts["client"], partition, self.schema, self.opts["poll_timeout_s"],
                              self.opts.get("fail_on_data_loss", True), self.opts.get("include_headers", False))


def resolve_partitions(admin: Any, opts: dict[str, Any]) -> dict[str, list[int]]:
    """``{topic: [partitions]}`` of the subscription (``subscribe``, ``subscribePattern`` or ``assign``)
    from the broker's current metadata. A pattern matches whole topic names (as Java's
    ``Pattern.matches``) and never internal topics; it may match none yet (the query waits)."""
    import re

    md = admin.list_topics(timeout=30)
    kind, spec = opts.get("subscription") or ("subscribe", opts["topics"])
    if kind == "pattern":
        rx = re.compile(spec)
        return {t: sorted(m.partitions) for t, m in sorted(md.topics.items())
                if rx.fullmatch(t) and not t.startswith("__") and m.error is None and m.partitions}
    wanted = spec if kind == "assign" else dict.fromkeys(spec)
    out: dict[str, list[int]] = {}
    for topic in wanted:
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            raise KafkaSourceError(
                f"topic {topic!r} does not exist on {opts['client']['bootstrap.servers']} "
                f"({t.error if t is not None else 'not in metadata'}); create it before starting the "
                "query (with the embedded broker: kafka.create_topic(name, partitions))")
        out[topic] = sorted(t.partitions) if kind == "subscribe" else _assigned(topic, wanted[topic], t)
    return out


def _assigned(topic: str, parts: list[int], meta: Any) -> list[int]:
    missing = sorted(set(parts) - set(meta.partitions))
    if missing:
        raise KafkaSourceError(f"assign: partitions {missing} of topic {topic!r} do not exist "
                               f"(it has {sorted(meta.partitions)})")
    return list(parts)


def cap_offsets(start: Offsets, latest: Offsets, max_rows: int | None) -> Offsets:
    """The end offsets of the next batch: ``latest``, or at most ``max_rows`` offsets past ``start``
    shared fairly between partitions (deterministic: same inputs, same split)."""
    lags = {(t, p): max(0, latest[t][p] - start[t][p]) for t in latest for p in latest[t]}
    if max_rows is None or sum(lags.values()) <= max_rows:
        return {t: dict(ps) for t, ps in latest.items()}
    take = dict.fromkeys(lags, 0)
    budget = max_rows
    open_parts = sorted((k for k, v in lags.items() if v > 0), key=lambda k: (k[0], int(k[1])))
    while budget > 0 and open_parts:
        share = max(1, budget // len(open_parts))
        for k in list(open_parts):
            n = min(share, lags[k] - take[k], budget)
            take[k] += n
            budget -= n
            if take[k] >= lags[k]:
                open_parts.remove(k)
            if budget == 0:
                break
    return {t: {p: start[t][p] + take[(t, p)] for p in ps} for t, ps in latest.items()}


_CHUNK = 5000


def read_range(client_conf: dict[str, str], rng: KafkaOffsetRange, schema: StructType,
               timeout_s: float, fail_on_data_loss: bool = True, include_headers: bool = False) -> Iterator[Any]:
    """Yield the records of ``rng`` as Arrow record batches (fast path to the JVM).

    Offsets of the range that the broker deleted before they were read (retention) fail the task
    with :class:`KafkaSourceError` (``failOnDataLoss``, default true, as in Spark's source); with
    ``failOnDataLoss=false`` the read goes on from the log start. ``include_headers`` adds the
    ``headers`` column (null for a record without headers, as in Spark)."""
    import pyarrow as pa
    from confluent_kafka import KafkaError, KafkaException, TopicPartition
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    c = kafka_clients.consumer(client_conf)
    tp = TopicPartition(rng.topic, rng.partition, rng.start)
    c.assign([tp])
    try:
        deadline = time.monotonic() + timeout_s
        pos = rng.start
        ncols = 8 if include_headers else 7
        cols: list[list] = [[] for _ in range(ncols)]
        while pos < rng.end:
            msgs = kafka_clients.consume_some(c, _CHUNK, 0.05)
            if not msgs:
                # Trailing transaction markers occupy offsets but are never delivered: ask the
                # client where it is.
                pos = max(pos, c.position([TopicPartition(rng.topic, rng.partition)])[0].offset)
                if pos < rng.end and time.monotonic() > deadline:
                    raise TimeoutError(
                        f"reading {rng}: stuck at offset {pos} for {timeout_s:.0f}s (broker down or the "
                        "range holds an undecided transaction); raise option pollTimeoutMs to wait longer")
                continue
            deadline = time.monotonic() + timeout_s
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    if err.code() == KafkaError._AUTO_OFFSET_RESET:
                        low = c.get_watermark_offsets(TopicPartition(rng.topic, rng.partition), timeout=10)[0]
                        if fail_on_data_loss:
                            raise KafkaSourceError(
                                f"data loss reading {rng}: offsets {pos}..{low - 1} were deleted by the broker "
                                "before they were read (retention); lower the input rate or raise the broker's "
                                "retention, or set option failOnDataLoss=false to skip them")
                        pos = max(pos, low)
                        c.assign([TopicPartition(rng.topic, rng.partition, pos)])
                        continue
                    raise KafkaException(err)
                off = m.offset()
                if off >= rng.end:
                    pos = rng.end
                    break
                pos = off + 1
                ts_type, ts = m.timestamp()
                cols[0].append(m.key())
                cols[1].append(m.value())
                cols[2].append(rng.topic)
                cols[3].append(rng.partition)
                cols[4].append(off)
                cols[5].append(ts * 1000 if ts >= 0 else None)
                cols[6].append(ts_type - 1 if ts_type > 0 else -1)  # Spark: 0 = create, 1 = log append
                if include_headers:
                    hs = m.headers()
                    cols[7].append([{"key": k, "value": v} for k, v in hs] if hs else None)
            if len(cols[0]) >= _CHUNK:
                yield pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in
                                                  zip(cols, arrow_schema, strict=True)], schema=arrow_schema)
                cols = [[] for _ in range(ncols)]
        if cols[0]:
            yield pa.RecordBatch.from_arrays([pa.array(col, type=f.type) for col, f in
                                              zip(cols, arrow_schema, strict=True)], schema=arrow_schema)
    except BaseException:
        kafka_clients.drop_consumer(client_conf, c)  # unknown state: do not reuse
        raise
    else:
        c.unassign()
