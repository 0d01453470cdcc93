"""Kafka sinks for ``foreachBatch``: at-least-once (:func:`write_kafka_batch`) and exactly-once
(:class:`ExactlyOnceKafkaSink`, one Kafka transaction per micro-batch). Spark's own Kafka sink
(``writeStream.format("kafka")``) is at-least-once; these are what a job writes when it needs more.

Input DataFrames need a ``value`` column (string or binary) and may have ``key`` (string or binary)
and ``partition`` (int) columns, like Spark's Kafka sink.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypedDict

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from pytest_streamchaos.job import kafka_clients
from pytest_streamchaos.job.compat import to_arrow
from pytest_streamchaos.job.eos import (
    ATTEMPT_HEADER,
    CommitLog,
    commit_marker,
    control_topic_for,
    open_marker,
)

if TYPE_CHECKING:  # the job side imports pyspark and pyarrow where it runs, not at import
    import pyarrow as pa
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


class KafkaSinkError(RuntimeError):
    """A sink cannot write (missing topic, delivery failure); the message names the fix."""


class SinkFencedError(KafkaSinkError):
    """A newer instance of the same exactly-once sink has started: this one is a zombie and must stop."""


def _columns(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    names = set(df.columns)
    if "value" not in names:
        raise KafkaSinkError(f"the DataFrame to write has no 'value' column (columns: {df.columns}); "
                             "select or alias one, e.g. to_json(struct(*)) AS value")
    cols = [F.col("value").cast("binary").alias("value")]
    cols.append(F.col("key").cast("binary").alias("key") if "key" in names
                else F.lit(None).cast("binary").alias("key"))
    cols.append(F.col("partition").cast("int").alias("partition") if "partition" in names
                else F.lit(None).cast("int").alias("partition"))
    return df.select(*cols)


#: what a delivery report is handed: the error (None when delivered) and the message
OnDelivery = Callable[[KafkaError | None, Message], None]
#: a record's headers, as ``Producer.produce`` takes them
Headers = list[tuple[str, str | bytes | None]]


class _Record(TypedDict, total=False):
    """``Producer.produce``'s keyword arguments (a partition and headers only when given)."""

    value: bytes | None
    key: bytes | None
    on_delivery: OnDelivery
    partition: int
    headers: Headers


def _produce(p: Producer, topic: str, value: bytes | None, key: bytes | None, partition: int | None,
             on_delivery: OnDelivery, headers: Headers | None = None) -> None:
    kwargs: _Record = {"value": value, "key": key, "on_delivery": on_delivery}
    if partition is not None:
        kwargs["partition"] = partition
    if headers:
        kwargs["headers"] = headers
    while True:
        try:
            p.produce(topic, **kwargs)
            return
        except BufferError:  # local queue full: let deliveries drain, then retry
            p.poll(0.05)


# -- at-least-once --------------------------------------------------------------------------------


def _produce_partition_fn(conf: Mapping[str, object], topic: str, flush_timeout_s: float,
                          ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def produce_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        p = kafka_clients.producer(conf)
        errors: list[KafkaError] = []

        def on_delivery(err, _msg) -> None:
            if err is not None:
                errors.append(err)

        n = 0
        for b in batches:
            values, keys, parts = (b.column(i).to_pylist() for i in range(3))
            for v, k, part in zip(values, keys, parts, strict=True):
                _produce(p, topic, v, k, part, on_delivery)
            n += b.num_rows
            p.poll(0)
        left = p.flush(flush_timeout_s)
        if left:
            raise KafkaSinkError(f"{left} record(s) to {topic!r} not acknowledged within {flush_timeout_s}s "
                                 "(broker down?); the batch fails and Spark retries it")
        if errors:
            raise KafkaException(errors[0])
        yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["produced"])

    return produce_partition


def write_kafka_batch(df: DataFrame, bootstrap_servers: str, topic: str, *, flush_timeout_s: float = 60.0,
                      producer_conf: Mapping[str, object] | None = None) -> int:
    """Write a (micro-batch) DataFrame to ``topic`` from the executors; return the number of records.

    At-least-once: an idempotent producer (one per Python worker, reused) writes each partition,
    flushes, and raises on any delivery error, so the batch fails rather than loses records. A batch
    that is retried or replayed after a crash is written again (duplicates). Use as::

        q = df.writeStream.foreachBatch(lambda b, i: write_kafka_batch(b, servers, "out")).start()
    """
    conf = {"bootstrap.servers": bootstrap_servers, "acks": "all", "enable.idempotence": True,
            **(producer_conf or {})}
    out = _columns(df).mapInArrow(_produce_partition_fn(conf, topic, flush_timeout_s), "produced long")
    return int(sum(r[0] for r in out.collect()))


# -- exactly-once ---------------------------------------------------------------------------------


def _check_topic(admin: AdminClient, servers: str, topic: str, partitions: int | None = None) -> list[int]:
    md = admin.list_topics(timeout=30)  # all topics: a metadata request for one could auto-create it
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        raise KafkaSinkError(
            f"topic {topic!r} does not exist on {servers}; create it before the "
            f"query starts (embedded broker: kafka.create_topic({topic!r}, "
            f"{partitions or 1}))")
    if partitions is not None and len(t.partitions) != partitions:
        raise KafkaSinkError(f"topic {topic!r} has {len(t.partitions)} partitions; the exactly-once sink "
                             f"needs exactly {partitions} (its records must be totally ordered)")
    return sorted(t.partitions)


def _last_stable_offset(admin: AdminClient, tp: TopicPartition, timeout_s: float) -> int:
    # read_committed consumers cannot pass the LSO; waiting for the high watermark could hang on an
    # open transaction.
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec

    futures = admin.list_offsets({TopicPartition(tp.topic, tp.partition): OffsetSpec.latest()},
                                 isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=timeout_s)
    return int(next(iter(futures.values())).result().offset)


class ExactlyOnceKafkaSink:
    """Exactly-once writes to Kafka from ``foreachBatch``: ``query = df.writeStream.foreachBatch(sink)``.

    Each micro-batch is one Kafka transaction holding the batch's records (header
    ``streamchaos.attempt``) and a commit marker in ``<topic>.streamchaos-commits`` (one partition;
    it must exist: the harness creates it, otherwise :class:`KafkaSinkError` says how). On start the
    sink reads that control topic (read_committed), so a batch Spark replays after a crash that was
    already committed is skipped; the new instance's producer fences the old driver's (same
    ``transactional.id``: Kafka aborts the zombie's open transaction), and its ``open`` marker is a
    second line of defence (see :mod:`pytest_streamchaos.job.eos`). Consumers read the output with
    ``isolation.level=read_committed``, as the plugin's collector does.

    Rows are collected to the driver (one Arrow table: :func:`~pytest_streamchaos.job.compat.to_arrow`) and
    produced from there: fine for the modest rates of chaos tests (tens of thousands of records per
    batch), not for bulk traffic.

    ``transactional_id`` must be the same across restarts of one query and unique per query; the
    default is derived from the topic.
    """

    def __init__(self, bootstrap_servers: str, topic: str, transactional_id: str | None = None, *,
                 control_topic: str | None = None, timeout_s: float = 60.0,
                 producer_conf: Mapping[str, object] | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.transactional_id = transactional_id or f"streamchaos-eos-{topic}"
        self.control_topic = control_topic or control_topic_for(topic)
        self.timeout_s = timeout_s
        self.producer_conf = dict(producer_conf or {})
        self.gen: int | None = None
        self.log = CommitLog()
        self.committed_batches = 0
        self.skipped_batches: list[int] = []
        self._producer: Producer | None = None
        self._control: Consumer | None = None
        self._control_pos = 0  #: next control-topic offset to apply
        self._admin: AdminClient | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Check topics, fence older instances, and load the commit log. Called by the first batch."""
        if self._producer is not None:
            return
        base: dict[str, str | int | float | bool] = {"bootstrap.servers": self.bootstrap_servers}
        # Own clients, not the per-process cache: they must go away with the sink.
        self._admin = AdminClient(base)
        _check_topic(self._admin, self.bootstrap_servers, self.topic)
        _check_topic(self._admin, self.bootstrap_servers, self.control_topic, partitions=1)
        producer = Producer({**base, "transactional.id": self.transactional_id,
                             "transaction.timeout.ms": int(self.timeout_s * 1000), "linger.ms": 5,
                             **self.producer_conf})
        try:
            producer.init_transactions(self.timeout_s)  # fences the previous holder of this id
            self._control = Consumer({**base, "group.id": "streamchaos-unused", "enable.auto.commit": False,
                                      "isolation.level": "read_committed", "fetch.wait.max.ms": 10})
            self._control.assign([TopicPartition(self.control_topic, 0, 0)])
            self._catch_up()
            self.gen = max(self.log.gen.get(self.transactional_id, 0) + 1, time.time_ns() // 1000)
            producer.begin_transaction()
            delivered: list[tuple[KafkaError | None, Message]] = []
            producer.produce(self.control_topic, open_marker(self.transactional_id, self.gen),
                             key=self.transactional_id.encode(), partition=0,
                             on_delivery=lambda err, msg: delivered.append((err, msg)))
            producer.commit_transaction(self.timeout_s)
            err, msg = delivered[0]
            if err is not None:
                raise KafkaException(err)
            # Everything before our open marker is now final for older generations.
            offset = msg.offset()
            assert offset is not None  # a delivered message has its offset
            self._catch_up(until=offset + 1)
        except BaseException:
            self._producer = producer
            self.close()
            raise
        self._producer = producer
        log.info("exactly-once sink %s generation %d: last committed batch %d", self.transactional_id,
                 self.gen, self.log.last_batch(self.transactional_id))

    def close(self) -> None:
        """Release the clients. Idempotent. (An open transaction is left for the broker to abort.)"""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._producer is not None:
            self._producer.flush(1)
            self._producer = None
        self._admin = None

    # -- per batch ---------------------------------------------------------------------------

    def _catch_up(self, until: int | None = None) -> None:
        """Apply control records up to ``until`` (default: the current end of the control topic)."""
        assert self._control is not None
        tp = TopicPartition(self.control_topic, 0)
        if until is None:
            assert self._admin is not None  # made with the control consumer
            until = _last_stable_offset(self._admin, tp, self.timeout_s)
        deadline = time.monotonic() + self.timeout_s
        pos = self._control_pos
        while pos < until:
            msgs = kafka_clients.consume_some(self._control, 1000, 0.05)
            for m in msgs:
                if m.error() is not None:
                    raise KafkaException(m.error())
                self.log.apply(m.value())
                pos = m.offset() + 1
            if not msgs:
                pos = max(pos, self._control.position([tp])[0].offset)  # past trailing txn markers
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading control topic {self.control_topic!r}: at offset {pos}, "
                                       f"wanted {until} within {self.timeout_s}s")
        self._control_pos = pos

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.start()
        assert self._producer is not None and self.gen is not None
        self._catch_up()
        sink = self.transactional_id
        newest = self.log.gen.get(sink, self.gen)
        if newest > self.gen:
            raise SinkFencedError(f"sink {sink!r}: generation {newest} started after this one ({self.gen}); "
                                  "this driver has been replaced and must stop")
        if batch_id in self.log.committed.get(sink, {}):
            log.info("sink %s: batch %d already committed, skipping the replay", sink, batch_id)
            self.skipped_batches.append(batch_id)
            return
        table = to_arrow(_columns(df))
        attempt = f"{sink}/{self.gen}/{batch_id}/{uuid.uuid4().hex[:8]}"
        self._write_transaction(table, batch_id, attempt)
        self.committed_batches += 1

    def _write_transaction(self, table: pa.Table, batch_id: int, attempt: str) -> None:
        p = self._producer
        assert p is not None and self.gen is not None
        errors: list[KafkaError] = []

        def on_delivery(err, _msg) -> None:
            if err is not None:
                errors.append(err)

        headers: Headers = [(ATTEMPT_HEADER, attempt.encode())]
        try:
            p.begin_transaction()
            values, keys, parts = (table.column(i).to_pylist() for i in range(3))
            for v, k, part in zip(values, keys, parts, strict=True):
                _produce(p, self.topic, v, k, part, on_delivery, headers)
            _produce(p, self.control_topic,
                     commit_marker(self.transactional_id, self.gen, batch_id, attempt, table.num_rows),
                     self.transactional_id.encode(), 0, on_delivery)
            if p.flush(self.timeout_s) or errors:
                raise KafkaSinkError(f"batch {batch_id}: records not delivered to {self.topic!r} within "
                                     f"{self.timeout_s}s: {errors[:1]}")
            p.commit_transaction(self.timeout_s)
        except KafkaException as e:
            err = e.args[0]
            if err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                              KafkaError.INVALID_PRODUCER_EPOCH):
                self.close()
                raise SinkFencedError(f"sink {self.transactional_id!r}: producer fenced by a newer "
                                      f"instance ({err.name()}); this driver must stop") from e
            self._abort()
            raise
        except BaseException:
            self._abort()
            raise

    def _abort(self) -> None:
        try:
            if self._producer is not None:
                self._producer.abort_transaction(self.timeout_s)
        except KafkaException as e:  # nothing to abort, or fatal: the original error matters more
            log.warning("sink %s: abort_transaction failed: %s", self.transactional_id, e)
