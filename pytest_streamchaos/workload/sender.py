"""The generator's Kafka producer: idempotent, ``acks=all``, with room to retry through a broker outage.

Hands batches to librdkafka (stopping when its queue is full: the rest stays due), serves delivery
reports into the :class:`~pytest_streamchaos.workload.send_log.SendLog`, and at the end waits for
the records in flight, purging (failing) what is still unacknowledged after the timeout.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from pytest_streamchaos.workload.record_batches import Batch
from pytest_streamchaos.workload.send_log import SendLog

log = logging.getLogger(__name__)


def producer_conf(bootstrap_servers: str, rate: float, message_timeout_s: float, on_error: Callable[..., Any],
                  producer_config: dict[str, Any] | None) -> dict[str, Any]:
    """The generator's librdkafka producer configuration (``producer_config`` overrides)."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "partitioner": "murmur2_random",
        "message.timeout.ms": int(message_timeout_s * 1000),
        # Room for the whole retry window at the target rate (a broker may be down that long).
        "queue.buffering.max.messages": int(min(max(100_000, 1.5 * rate * message_timeout_s), 10_000_000)),
        "queue.buffering.max.kbytes": 2_097_151,
        "error_cb": on_error,
        "logger": logging.getLogger("pytest_streamchaos.workload.librdkafka"),
        **(producer_config or {}),
    }


def _unknown_topic(exc: KafkaException) -> bool:
    """Whether ``produce`` refused a record because its topic is not in the cluster's metadata now."""
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and err.code() in (KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART)


class Sender:
    """Produces to ``topic`` (key ``k`` to partition ``k % partitions`` when ``partitions`` is set,
    else by the producer's partitioner); ``extra_conf`` overrides :func:`producer_conf`."""

    def __init__(self, bootstrap_servers: str, topic: str, partitions: int | None, sent: SendLog, *,
                 rate: float, message_timeout_s: float, extra_conf: dict[str, Any]) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.partitions = partitions
        self.conf = {**producer_conf(bootstrap_servers, rate, message_timeout_s, self._on_error, None),
                     **extra_conf}
        self.fatal: KafkaError | None = None  #: a fatal producer error: the generator stops
        self.queue_full = 0  #: times the producer's queue was full
        self.unknown_topic = 0  #: times the topic was missing from the producer's metadata (deleted for a moment)
        self._sent = sent
        self._producer: Producer | None = None

    def connect(self) -> None:
        """Create the producer and check the topic exists (``RuntimeError`` saying what is wrong)."""
        producer = Producer(self.conf)
        try:
            md = producer.list_topics(timeout=10)
        except KafkaException as e:
            raise RuntimeError(
                f"cannot reach Kafka at {self.bootstrap_servers} ({e}); is the cluster up "
                "(use the `kafka` fixture's bootstrap_servers)?") from e
        if self.topic not in md.topics or md.topics[self.topic].error is not None:
            raise RuntimeError(f"input topic {self.topic!r} does not exist on {self.bootstrap_servers}; "
                               "create it first with kafka.create_topic(name, partitions)")
        n_part = len(md.topics[self.topic].partitions)
        if self.partitions is not None and self.partitions > n_part:
            raise RuntimeError(f"partitions={self.partitions} but topic {self.topic!r} has only {n_part}")
        self._producer = producer

    def _on_error(self, err: KafkaError) -> None:
        # Broker-down and transport errors land here; they are expected under faults.
        errors = self._sent.errors
        errors.append(str(err))
        if len(errors) > 1000:
            del errors[:500]
        if err.fatal():
            self.fatal = err

    def send(self, start: int, batch: Batch) -> int:
        """Hand the records to the producer; returns how many it took (it stops when its queue is full)."""
        p = self._producer
        assert p is not None
        produce, topic, cb = p.produce, self.topic, self._sent.on_delivery
        partial = functools.partial
        values, msg_keys = batch.values, batch.msg_keys
        done = 0
        try:
            if self.partitions is None:
                for j in range(len(values)):
                    produce(topic, values[j], msg_keys[j], on_delivery=partial(cb, start + j))
                    done += 1
            else:
                parts = self.partitions
                klist = batch.keys.tolist()
                for j in range(len(values)):
                    produce(topic, values[j], msg_keys[j], partition=klist[j] % parts,
                            on_delivery=partial(cb, start + j))
                    done += 1
        except BufferError:
            # Producer queue full (brokers unreachable): the rest stays due for the next tick.
            self.queue_full += 1
        except KafkaException as exc:
            if not _unknown_topic(exc):
                raise
            # the topic is gone for a moment (deleted and created again, a fault of the run): the rest stays
            # due, as a producing application retries it once the topic is back
            self.unknown_topic += 1
        return done

    def serve(self) -> None:
        """Serve the delivery reports that are ready, without waiting."""
        assert self._producer is not None
        self._producer.poll(0)

    def serve_until(self, until: float) -> None:
        """Serve delivery reports until ``until`` (monotonic): the wait for the next tick."""
        p = self._producer
        assert p is not None
        while True:
            left = until - time.monotonic()
            if left <= 0:
                break
            p.poll(left)

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the records in flight, then purge the rest (they fail)."""
        p = self._producer
        if p is None:
            return
        deadline = time.monotonic() + timeout
        sent = self._sent
        while sent.in_flight > 0 and time.monotonic() < deadline:
            p.poll(0.05)
        if sent.in_flight > 0:
            log.warning("generator: %d records still in flight at stop; purging them (counted failed)",
                        sent.in_flight)
            p.purge()
            end = time.monotonic() + 5.0
            while sent.in_flight > 0 and time.monotonic() < end:
                p.poll(0.05)
        p.flush(0)
        self._producer = None
