"""The output collector: reads the job's output topic(s) and records which inputs each output reports.

A background thread consumes every partition of the output topic(s) from the beginning with
``isolation.level=read_committed`` (no consumer group offsets: partitions are assigned, never
committed) and records, per output record, its arrival time (``time.time()``, the generator's clock),
the input id(s) it carries, and its key / event-time window when present. The result is an
:class:`~pytest_streamchaos.records.OutputRecords` in CSR layout.

Output JSON is read leniently: ids from ``id`` (int) or ``ids`` (list); the key from ``key`` (``"k<n>"``
or an int; else the Kafka message key); the window from ``window_start``/``window_end`` or
``window: {start, end}``, as epoch milliseconds/seconds or ISO-8601 strings. An output that cannot
be read is a *finding*, not a crash: it is counted and a few raw samples are kept.

Aggregate outputs (counts / sums per key and window, no ids): pass ``amount_field`` (and where
needed ``key_field`` / ``window_field``, e.g. ``AggregateOracle.collector_options()``); each
output's value then fills ``OutputRecords.values`` and an output need not carry ids.

Outputs the broker deleted before they were read (retention) are not silently skipped: partitions
start at offset 0 with ``auto.offset.reset=error``, and an out-of-range offset is recorded in
:attr:`Collector.retention_gaps` (and :attr:`Collector.lost_to_retention`) before reading resumes at
the log start.

Exactly-once output is verified by the broker, never by a sink's own bookkeeping: the collector reads
with ``isolation.level=read_committed``, so records of aborted transactions (a killed driver's open
batch, a fenced zombie's writes) are never seen, and those of committed ones are seen when their
transaction commits. Transactional output is detected without the job's help: a transaction's commit
or abort marker takes an offset in the partition but is never handed to a consumer, so a jump in the
offsets read from a partition (not explained by retention) is a marker
(:attr:`Collector.transaction_markers`).

The work is shared by collaborators: :mod:`~pytest_streamchaos.observe.output_consumer` (the consuming
thread), :mod:`~pytest_streamchaos.observe.output_reader` (what one output says),
:mod:`~pytest_streamchaos.observe.output_store` (the record of the outputs read) and
:mod:`~pytest_streamchaos.observe.partition_offsets` (transaction markers, retention gaps).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pytest_streamchaos.client_stats import ClientStats
from pytest_streamchaos.observe.output_consumer import OutputConsumer
from pytest_streamchaos.observe.output_reader import AmountReader, IdReader, OutputReader
from pytest_streamchaos.observe.output_store import MalformedOutput, OutputStore
from pytest_streamchaos.observe.partition_offsets import PartitionOffsets
from pytest_streamchaos.observe.seen_names import Sampled
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import OutputRecords
from pytest_streamchaos.usercode import UserCodeError


class Collector:
    """Consume ``topics`` in a background thread and record every output.

    Args:
        bootstrap_servers: Kafka bootstrap list.
        topics: the output topic, or several (e.g. a main and a late-events side output).
        id_reader: how to get the input ids of an output: ``None`` (JSON ``id`` or ``ids``), the name
            of a JSON field (dots for nesting, e.g. ``"meta.input_ids"``; int or list of ints), or a
            callable ``(value, key) -> list[int]``.
        batch_size: messages per ``consume()`` call.
        max_samples: malformed outputs kept as raw samples.
        topic_timeout_s: how long :meth:`start` waits for the topics to exist.
        consumer_config: extra librdkafka settings.
        key_field: JSON path (dots for nesting) of the output's key (``"k<n>"`` or ``n``); default
            ``key``, else the Kafka message key.
        window_field: JSON path of a ``{start, end}`` window object; default ``window``, else
            ``window_start`` / ``window_end``.
        amount_field: aggregate outputs: JSON path of the value (a count or a sum), or a callable
            ``(decoded JSON) -> number``; fills ``OutputRecords.values`` (None there otherwise).
            With it, outputs without ``id`` / ``ids`` are read as carrying no ids.
        what: how messages name a callable ``id_reader`` (``chaos.run`` passes ``outputs['<topic>'] id
            reader``); None: the reader is the harness's own, and what it raises makes the output
            malformed.

    A callable of the test (``id_reader``, ``amount_field``) that raises is not a malformed output but
    a bug in the test: the first such error is kept in :attr:`failure` (a
    :class:`~pytest_streamchaos.usercode.UserCodeError` naming it) for the run to stop on.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topics: str | Sequence[str],
        id_reader: str | IdReader | None = None,
        batch_size: int = 2000,
        max_samples: int = 100,
        topic_timeout_s: float = 30.0,
        consumer_config: dict[str, Any] | None = None,
        key_field: str | None = None,
        window_field: str | None = None,
        amount_field: str | AmountReader | None = None,
        what: str | None = "id_reader",
    ) -> None:
        if not bootstrap_servers:
            raise ValueError("bootstrap_servers is empty; pass kafka.bootstrap_servers")
        self.topics = [topics] if isinstance(topics, str) else list(topics)
        if not self.topics or not all(self.topics):
            raise ValueError(f"topics must name at least one output topic, got {topics!r}")
        self._reader = OutputReader(id_reader, key_field, window_field, amount_field, what)
        self.bootstrap_servers = bootstrap_servers
        self.batch_size = batch_size
        self.max_samples = max_samples
        self.topic_timeout_s = topic_timeout_s
        self.client_stats = ClientStats("collector")
        self._store = OutputStore(self.topics, self._reader, max_samples)
        self._offsets = PartitionOffsets()
        self._consumer = OutputConsumer(
            bootstrap_servers, self.topics, self._store.record, self._offsets, batch_size=batch_size,
            topic_timeout_s=topic_timeout_s,
            # the observer checks the collector is not disturbed by the faults
            extra_conf={**self.client_stats.conf(), **(consumer_config or {})})

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Collector:
        """Assign every partition of the topics from offset 0 and start consuming. Returns ``self``."""
        self._consumer.start()
        return self

    def stop(self, drain_timeout: float = 30.0) -> bool:
        """Stop, but first read everything the topics held when ``stop`` was called.

        The end offsets (last stable offsets) of all partitions are taken now; consuming goes on
        until every partition reached them or ``drain_timeout`` passed. Returns True if fully
        drained (False is logged with the partitions that were behind). Idempotent.
        """
        return self._consumer.stop(drain_timeout)

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ quick accessors
    @property
    def count(self) -> int:
        """Outputs collected so far (malformed ones excluded)."""
        return self._store.count

    @property
    def last_arrival(self) -> float | None:
        """Arrival time of the latest output, None before the first."""
        return self._store.last_arrival

    @property
    def last_written(self) -> float | None:
        """When the broker appended the latest output (its ``LogAppendTime`` stamp), None before the
        first or when the output topics keep producer timestamps. Unlike the arrival time it does not
        lag by the collector's own read latency, so it tells which micro-batch wrote an output."""
        return self._store.last_written

    @property
    def ids_seen(self) -> int:
        """Distinct input ids seen so far in any output."""
        return self._store.seen.count

    def has_seen(self, ids: int | Sequence[int] | np.ndarray) -> bool:
        """True if every id in ``ids`` has appeared in some output."""
        return self._store.seen.has_seen(ids)

    @property
    def malformed(self) -> int:
        """Outputs that could not be read."""
        return self._store.malformed

    @property
    def first_records(self) -> list[Sampled]:
        """The first records read (readable or not), with how many input ids each gave."""
        return list(self._store.first)

    @property
    def malformed_samples(self) -> list[MalformedOutput]:
        """The first ``max_samples`` unreadable outputs."""
        return list(self._store.samples)

    @property
    def lost_to_retention(self) -> int:
        """Offsets (outputs) the broker deleted before the collector read them."""
        return self._offsets.lost

    @property
    def retention_gaps(self) -> list[dict[str, Any]]:
        """One dict per skipped range: topic, partition, from/to offset, skipped count, time."""
        return self._offsets.gaps

    @property
    def transaction_markers(self) -> dict[str, int]:
        """Per output partition (``"topic[p]"``), the offsets skipped between the records read:
        transaction markers, and records of aborted transactions (read_committed hides both); empty
        when the output was not written transactionally."""
        return self._offsets.markers

    @property
    def errors(self) -> list[str]:
        """Consumer errors seen while running (broker down...)."""
        return list(self._consumer.errors)

    @property
    def failure(self) -> UserCodeError | None:
        """The first error a callable of the test raised reading an output (None: none did)."""
        return self._store.failure

    @property
    def running(self) -> bool:
        """True while the consuming thread is alive."""
        return self._consumer.running

    def wait_until(self, condition: int | Callable[[Collector], bool], timeout: float,
                   what: str | None = None) -> None:
        """Block until ``condition`` holds: an int means "at least that many outputs", a callable
        gets this collector. Raise ``TimeoutError`` saying what was awaited and what was seen."""
        pred = (lambda c: c.count >= condition) if isinstance(condition, int) else condition
        what = what or (f"at least {condition} outputs" if isinstance(condition, int) else
                        getattr(condition, "__name__", "the condition"))

        def holds() -> bool:
            if pred(self):
                return True
            if self._consumer.ended:
                raise RuntimeError(f"collector stopped while waiting for {what}: {self._consumer.thread_error!r}")
            return False

        def timed_out(_: bool) -> TimeoutError:
            return TimeoutError(
                f"collector on {self.topics}: waited {timeout:.1f}s for {what}; seen {self.count} outputs, "
                f"{self.ids_seen} distinct ids, {self.malformed} malformed, {self.lost_to_retention} deleted "
                f"before read, last arrival "
                f"{_ago(self.last_arrival)}; recent errors: {self._consumer.errors[-3:]}")

        poll(holds, timeout, timed_out, interval=0.01)

    def outputs(self) -> OutputRecords:
        """The outputs collected so far, in arrival order (a snapshot).

        ``keys`` are key numbers as floats (NaN: no key); windows are epoch seconds (NaN: none);
        ``topic`` names the topic each output came from."""
        return self._store.snapshot()


def _ago(t: float | None) -> str:
    return "never" if t is None else f"{time.time() - t:.1f}s ago"
