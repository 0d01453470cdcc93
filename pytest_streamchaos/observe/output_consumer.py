"""The collector's consuming thread: one ``read_committed`` consumer over every output partition.

Partitions are assigned from offset 0 (no consumer group offsets: nothing is ever committed), with
``auto.offset.reset=error`` so that outputs deleted before they were read are noticed
(:class:`~pytest_streamchaos.observe.partition_offsets.PartitionOffsets`). Each fetched batch is
handed on with one arrival time; stopping first drains the partitions to the end offsets they had
when the stop was asked for.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from pytest_streamchaos.observe.partition_offsets import PartitionOffsets
from pytest_streamchaos.poll import poll

log = logging.getLogger(__name__)

#: Receives the readable messages of one fetched batch and their arrival time.
BatchSink = Callable[[list[Any], float], None]


def consumer_conf(bootstrap_servers: str, on_error: Callable[[KafkaError], None],
                  extra: dict[str, Any]) -> dict[str, Any]:
    """The collector's librdkafka consumer configuration (``extra`` overrides)."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": f"streamchaos-collector-{uuid.uuid4().hex[:12]}",  # never committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "error",  # deleted outputs are a finding, see retention_gaps
        "fetch.wait.max.ms": 50,  # arrival times should not wait on fetch batching
        "logger": logging.getLogger("pytest_streamchaos.observe.librdkafka"),
        "error_cb": on_error,
        **extra,
    }


class OutputConsumer:
    """Consumes ``topics`` in a background thread, handing each fetched batch to ``sink``.

    ``extra_conf`` overrides the consumer configuration; ``offsets`` follows the offsets read.
    Kafka errors (broker down...) are kept in :attr:`errors`, expected under faults.
    """

    def __init__(self, bootstrap_servers: str, topics: list[str], sink: BatchSink, offsets: PartitionOffsets,
                 *, batch_size: int, topic_timeout_s: float, extra_conf: dict[str, Any]) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topics = topics
        self.batch_size = batch_size
        self.topic_timeout_s = topic_timeout_s
        self.conf = consumer_conf(bootstrap_servers, self._on_error, extra_conf)
        self.errors: list[str] = []
        self.thread_error: BaseException | None = None
        self._sink = sink
        self._offsets = offsets
        self._consumer: Consumer | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._drain_timeout = 30.0
        self._drained: bool | None = None
        self._assigned: set[tuple[str, int]] = set()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Assign every partition of the topics from offset 0 and start the consuming thread."""
        if self._thread is not None:
            raise RuntimeError("Collector.start() called twice; create a new Collector for a new run")
        consumer = Consumer(self.conf)
        try:
            tps = self._wait_for_partitions(consumer)
            consumer.assign(tps)
        except BaseException:
            consumer.close()
            raise
        self._assigned = {(tp.topic, tp.partition) for tp in tps}
        self._consumer = consumer
        self._thread = threading.Thread(target=self._run, name=f"streamchaos-collector-{self.topics[0]}",
                                        daemon=True)
        self._thread.start()

    def stop(self, drain_timeout: float) -> bool:
        """``Collector.stop``: drain, stop, raise what failed the thread; True if fully drained."""
        if self._thread is None:
            return bool(self._drained)
        if self._drained is None:
            self._drain_timeout = drain_timeout
            self._stop.set()
            self._thread.join()
        if self.thread_error is not None:
            err, self.thread_error = self.thread_error, None
            raise RuntimeError(f"collector thread failed: {err!r}") from err
        return bool(self._drained)

    @property
    def running(self) -> bool:
        """True while the consuming thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def ended(self) -> bool:
        """True once the thread failed or ended (it was started)."""
        return self.thread_error is not None or (self._thread is not None and not self.running)

    # ------------------------------------------------------------------ internals
    def _wait_for_partitions(self, consumer: Consumer) -> list[TopicPartition]:
        deadline = time.monotonic() + self.topic_timeout_s
        missing = list(self.topics)
        last = ""

        def partitions() -> list[TopicPartition]:
            nonlocal missing, last
            try:
                md = consumer.list_topics(timeout=min(5.0, max(0.5, deadline - time.monotonic())))
            except KafkaException as e:
                last = str(e)
                return []
            missing = [t for t in self.topics if t not in md.topics or md.topics[t].error is not None
                       or not md.topics[t].partitions]
            if missing:
                return []
            return [TopicPartition(t, p, 0) for t in self.topics for p in sorted(md.topics[t].partitions)]

        def timed_out(_: list[TopicPartition]) -> RuntimeError:
            why = f"cannot reach Kafka at {self.bootstrap_servers} ({last})" if last else \
                f"output topic(s) {missing} do not exist on {self.bootstrap_servers}"
            return RuntimeError(f"collector: {why} after {self.topic_timeout_s:.0f}s; create the output "
                                "topic with kafka.create_topic(...) before starting the collector")

        return poll(partitions, self.topic_timeout_s, timed_out, interval=0.1)

    def _on_error(self, err: KafkaError) -> None:
        self._note_error(str(err))  # broker down etc.: expected under faults, kept for messages

    def _note_error(self, err: str) -> None:
        self.errors.append(err)
        if len(self.errors) > 1000:
            del self.errors[:500]

    def _run(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        try:
            next_refresh = time.monotonic() + 2.0
            while not self._stop.is_set():
                self._consume_once(consumer, 0.05)
                if time.monotonic() >= next_refresh:
                    self._refresh_partitions(consumer)
                    next_refresh = time.monotonic() + 2.0
            self._drained = self._drain(consumer)
        except BaseException as e:  # surfaced by stop() / wait_until()
            self.thread_error = e
            self._drained = False
            log.exception("collector thread failed")
        finally:
            consumer.close()

    def _drain(self, consumer: Consumer) -> bool:
        deadline = time.monotonic() + self._drain_timeout
        tps = [TopicPartition(t, p) for t, p in sorted(self._assigned)]
        ends: dict[tuple[str, int], int] = {}
        for tp in tps:  # with read_committed the end offset queried is the last stable offset
            while True:
                try:
                    ends[(tp.topic, tp.partition)] = consumer.get_watermark_offsets(
                        tp, timeout=max(0.1, min(5.0, deadline - time.monotonic())))[1]
                    break
                except KafkaException as e:
                    if time.monotonic() >= deadline:
                        log.warning("collector drain: no end offset for %s[%d]: %s", tp.topic, tp.partition, e)
                        return False
                    self._consume_once(consumer, 0.05)
        while True:
            behind = {}
            for p in consumer.position(tps):
                end = ends[(p.topic, p.partition)]
                pos = p.offset if p.offset >= 0 else 0
                if pos < end:
                    behind[(p.topic, p.partition)] = (pos, end)
            if not behind:
                return True
            if time.monotonic() >= deadline:
                log.warning("collector drain timed out after %.1fs; (position, end) behind: %s",
                            self._drain_timeout, behind)
                return False
            self._consume_once(consumer, 0.05)

    def _refresh_partitions(self, consumer: Consumer) -> None:
        """Pick up partitions added to the topics while running."""
        try:
            md = consumer.list_topics(timeout=1.0)
        except KafkaException:
            return  # broker down; try again later
        new = [TopicPartition(t, p, 0) for t in self.topics if t in md.topics
               for p in md.topics[t].partitions if (t, p) not in self._assigned]
        if new:
            consumer.incremental_assign(new)
            self._assigned.update((tp.topic, tp.partition) for tp in new)

    def _consume_once(self, consumer: Consumer, timeout: float) -> None:
        msgs = consumer.consume(self.batch_size, timeout)
        if not msgs:
            return
        now = time.time()  # one arrival time per fetched batch: they became visible together
        readable = []
        for m in msgs:
            err, topic, partition, offset = m.error(), m.topic(), m.partition(), m.offset()
            if err is not None:
                if err.code() == KafkaError._AUTO_OFFSET_RESET and topic is not None and partition is not None \
                        and offset is not None:
                    self._offsets.skip_deleted(consumer, topic, partition, offset)
                elif err.code() != KafkaError._PARTITION_EOF:
                    self._note_error(str(err))
                continue
            if topic is not None and partition is not None and offset is not None:  # a record always has them
                self._offsets.note(topic, partition, offset)
            readable.append(m)
        self._sink(readable, now)
