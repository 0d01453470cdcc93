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
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from pytest_streamchaos.client_stats import ClientStats
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import OutputRecords
from pytest_streamchaos.usercode import UserCodeError, name_of

try:  # orjson is several times faster; optional ("fast" extra)
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
    _JSONError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    import json

    _loads = json.loads
    _JSONError = (ValueError, UnicodeDecodeError)

log = logging.getLogger(__name__)

#: A custom id reader: ``(value_bytes, key_bytes) -> list of input ids``.
IdReader = Callable[[bytes, "bytes | None"], Sequence[int]]
#: A custom amount reader: ``(decoded JSON output) -> number``.
AmountReader = Callable[[Any], float]

_NO_KEY = -1


@dataclass
class MalformedOutput:
    """One output record the collector could not read (kept as a sample)."""

    topic: str
    partition: int
    offset: int
    value: bytes | None
    error: str


class _Columns:
    """Growable CSR columns."""

    def __init__(self, capacity: int = 65536) -> None:
        self.n = 0  # outputs
        self.m = 0  # flat ids
        self.arrival = np.empty(capacity, np.float64)
        self.lengths = np.empty(capacity, np.int64)
        self.keys = np.empty(capacity, np.int64)
        self.wstart = np.empty(capacity, np.float64)
        self.wend = np.empty(capacity, np.float64)
        self.topic = np.empty(capacity, np.int16)
        self.values = np.empty(capacity, np.float64)  #: aggregate value (NaN: none)
        self.ids = np.empty(capacity, np.int64)

    def append(self, arrival: float, keys: list[int], ws: list[float], we: list[float],
               lengths: list[int], flat: list[int], topic: list[int], values: list[float]) -> None:
        k, f = len(lengths), len(flat)
        if self.n + k > self.arrival.shape[0]:
            cap = max(self.n + k, 2 * self.arrival.shape[0])
            for name in ("arrival", "lengths", "keys", "wstart", "wend", "topic", "values"):
                old = getattr(self, name)
                new = np.empty(cap, old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        if self.m + f > self.ids.shape[0]:
            new = np.empty(max(self.m + f, 2 * self.ids.shape[0]), np.int64)
            new[: self.m] = self.ids[: self.m]
            self.ids = new
        s = slice(self.n, self.n + k)
        self.arrival[s] = arrival
        self.lengths[s] = lengths
        self.keys[s] = keys
        self.wstart[s] = ws
        self.wend[s] = we
        self.values[s] = values
        self.topic[s] = topic
        self.ids[self.m:self.m + f] = flat
        self.n += k
        self.m += f


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
        if id_reader is not None and not (callable(id_reader) or isinstance(id_reader, str)):
            raise ValueError(f"id_reader must be None, a JSON field name or a callable, got {id_reader!r}")
        self.bootstrap_servers = bootstrap_servers
        self.batch_size = batch_size
        self.max_samples = max_samples
        self.topic_timeout_s = topic_timeout_s
        self._id_reader = id_reader
        self._what = what
        self._failure: UserCodeError | None = None
        self._id_path = id_reader.split(".") if isinstance(id_reader, str) else None
        self._key_path = key_field.split(".") if key_field else None
        self._window_path = window_field.split(".") if window_field else None
        self._amount: list[str] | AmountReader | None = (
            amount_field.split(".") if isinstance(amount_field, str) else amount_field)
        self.client_stats = ClientStats("collector")
        self._conf = {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"streamchaos-collector-{uuid.uuid4().hex[:12]}",  # never committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "error",  # deleted outputs are a finding, see retention_gaps
            "fetch.wait.max.ms": 50,  # arrival times should not wait on fetch batching
            "logger": logging.getLogger("pytest_streamchaos.observe.librdkafka"),
            "error_cb": self._on_error,
            **self.client_stats.conf(),  # the observer checks it is not disturbed by the faults
            **(consumer_config or {}),
        }
        self._cols = _Columns()
        self._lock = threading.Lock()
        self._consumer: Consumer | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._drain_timeout = 30.0
        self._drained: bool | None = None
        self._assigned: set[tuple[str, int]] = set()
        self._seen = np.zeros(1 << 16, np.bool_)  # bitmap of ids seen (dense ids from 0)
        self._seen_other: set[int] = set()  # ids outside the bitmap's range
        self._ids_seen = 0
        self._last_arrival: float | None = None
        self._last_written: float | None = None
        self._malformed = 0
        self._samples: list[MalformedOutput] = []
        self._errors: list[str] = []
        self._gaps: list[dict[str, Any]] = []
        self._thread_error: BaseException | None = None
        self._last_offset: dict[tuple[str, int], int] = {}  #: last offset read per output partition
        self._markers: dict[str, int] = {}  #: "topic[partition]" -> control records (offset jumps) seen

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Collector:
        """Assign every partition of the topics from offset 0 and start consuming. Returns ``self``."""
        if self._thread is not None:
            raise RuntimeError("Collector.start() called twice; create a new Collector for a new run")
        consumer = Consumer(self._conf)
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
        return self

    def stop(self, drain_timeout: float = 30.0) -> bool:
        """Stop, but first read everything the topics held when ``stop`` was called.

        The end offsets (last stable offsets) of all partitions are taken now; consuming goes on
        until every partition reached them or ``drain_timeout`` passed. Returns True if fully
        drained (False is logged with the partitions that were behind). Idempotent.
        """
        if self._thread is None:
            return bool(self._drained)
        if self._drained is None:
            self._drain_timeout = drain_timeout
            self._stop.set()
            self._thread.join()
        if self._thread_error is not None:
            err, self._thread_error = self._thread_error, None
            raise RuntimeError(f"collector thread failed: {err!r}") from err
        return bool(self._drained)

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ quick accessors
    @property
    def count(self) -> int:
        """Outputs collected so far (malformed ones excluded)."""
        return self._cols.n

    @property
    def last_arrival(self) -> float | None:
        """Arrival time of the latest output, None before the first."""
        return self._last_arrival

    @property
    def last_written(self) -> float | None:
        """When the broker appended the latest output (its ``LogAppendTime`` stamp), None before the
        first or when the output topics keep producer timestamps. Unlike the arrival time it does not
        lag by the collector's own read latency, so it tells which micro-batch wrote an output."""
        return self._last_written

    @property
    def ids_seen(self) -> int:
        """Distinct input ids seen so far in any output."""
        return self._ids_seen

    def has_seen(self, ids: int | Sequence[int] | np.ndarray) -> bool:
        """True if every id in ``ids`` has appeared in some output."""
        arr = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        seen = self._seen
        inside = (arr >= 0) & (arr < seen.shape[0])
        if not seen[arr[inside]].all():
            return False
        return all(int(i) in self._seen_other for i in arr[~inside])

    @property
    def malformed(self) -> int:
        """Outputs that could not be read."""
        return self._malformed

    @property
    def malformed_samples(self) -> list[MalformedOutput]:
        """The first ``max_samples`` unreadable outputs."""
        return list(self._samples)

    @property
    def lost_to_retention(self) -> int:
        """Offsets (outputs) the broker deleted before the collector read them."""
        return sum(g["skipped"] for g in self._gaps)

    @property
    def retention_gaps(self) -> list[dict[str, Any]]:
        """One dict per skipped range: topic, partition, from/to offset, skipped count, time."""
        return list(self._gaps)

    @property
    def errors(self) -> list[str]:
        """Consumer errors seen while running (broker down...)."""
        return list(self._errors)

    @property
    def running(self) -> bool:
        """True while the consuming thread is alive."""
        return self._thread is not None and self._thread.is_alive()

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
            if self._thread_error is not None or (self._thread is not None and not self.running):
                raise RuntimeError(f"collector stopped while waiting for {what}: {self._thread_error!r}")
            return False

        def timed_out(_: bool) -> TimeoutError:
            return TimeoutError(
                f"collector on {self.topics}: waited {timeout:.1f}s for {what}; seen {self.count} outputs, "
                f"{self.ids_seen} distinct ids, {self.malformed} malformed, {self.lost_to_retention} deleted "
                f"before read, last arrival "
                f"{_ago(self._last_arrival)}; recent errors: {self._errors[-3:]}")

        poll(holds, timeout, timed_out, interval=0.01)

    def outputs(self) -> OutputRecords:
        """The outputs collected so far, in arrival order (a snapshot).

        ``keys`` are key numbers as floats (NaN: no key); windows are epoch seconds (NaN: none);
        ``topic`` names the topic each output came from."""
        with self._lock:
            c = self._cols
            n = c.n
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(c.lengths[:n], out=offsets[1:])
            keys = c.keys[:n].astype(np.float64)
            keys[keys == _NO_KEY] = np.nan
            out = OutputRecords(
                arrival_ts=c.arrival[:n].copy(),
                offsets=offsets,
                ids=c.ids[: c.m].copy(),
                keys=keys,
                window_start=c.wstart[:n].copy(),
                window_end=c.wend[:n].copy(),
                topic=np.asarray(self.topics, dtype=object)[c.topic[:n]],
                values=c.values[:n].copy() if self._amount is not None else None,
            )
        return out

    # ------------------------------------------------------------------ internals
    def _wait_for_partitions(self, consumer: Consumer) -> list[TopicPartition]:
        deadline = time.monotonic() + self.topic_timeout_s
        missing = list(self.topics)
        last = ""
        while True:
            try:
                md = consumer.list_topics(timeout=min(5.0, max(0.5, deadline - time.monotonic())))
                wanted = self.topics
                missing = [t for t in wanted if t not in md.topics or md.topics[t].error is not None
                           or not md.topics[t].partitions]
                if not missing:
                    return [TopicPartition(t, p, 0) for t in wanted for p in sorted(md.topics[t].partitions)]
            except KafkaException as e:
                last = str(e)
            if time.monotonic() >= deadline:
                why = f"cannot reach Kafka at {self.bootstrap_servers} ({last})" if last else \
                    f"output topic(s) {missing} do not exist on {self.bootstrap_servers}"
                raise RuntimeError(f"collector: {why} after {self.topic_timeout_s:.0f}s; create the output "
                                   "topic with kafka.create_topic(...) before starting the collector")
            time.sleep(0.1)

    def _on_error(self, err: KafkaError) -> None:
        self._errors.append(str(err))  # broker down etc.: expected under faults, kept for messages
        if len(self._errors) > 1000:
            del self._errors[:500]

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
            self._thread_error = e
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
        topic_index = {t: i for i, t in enumerate(self.topics)}
        lengths: list[int] = []
        flat: list[int] = []
        keys: list[int] = []
        ws: list[float] = []
        we: list[float] = []
        tix: list[int] = []
        vals: list[float] = []
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._AUTO_OFFSET_RESET:
                    self._skip_deleted(consumer, m.topic(), m.partition(), m.offset())
                elif err.code() != KafkaError._PARTITION_EOF:
                    self._errors.append(str(err))
                    if len(self._errors) > 1000:
                        del self._errors[:500]
                continue
            value, mkey = m.value(), m.key()
            self._note_offset(m.topic(), m.partition(), m.offset())
            ts_type, ts_ms = m.timestamp()
            if ts_type == TIMESTAMP_LOG_APPEND_TIME:
                self._last_written = max(self._last_written or 0.0, ts_ms / 1000.0)
            try:
                ids, key, w0, w1, amount = self._read(value, mkey)
            except UserCodeError as e:  # the test's reader failed: the run stops on the first
                self._failure = self._failure or e
                continue
            except Exception as e:  # an unreadable output is a finding
                self._malformed += 1
                if len(self._samples) < self.max_samples:
                    self._samples.append(MalformedOutput(m.topic(), m.partition(), m.offset(), value,
                                                         f"{type(e).__name__}: {e}"))
                continue
            lengths.append(len(ids))
            flat.extend(ids)
            keys.append(key)
            ws.append(w0)
            we.append(w1)
            vals.append(amount)
            tix.append(topic_index[m.topic()])
        if not lengths:
            return
        with self._lock:
            self._cols.append(now, keys, ws, we, lengths, flat, tix, vals)
        self._mark_seen(flat)
        self._last_arrival = now

    def _note_offset(self, topic: str, partition: int, offset: int) -> None:
        """An offset jump between two records read from a partition is control records: the markers
        of transactions (consumers never receive them)."""
        prev = self._last_offset.get((topic, partition))
        if prev is not None and offset > prev + 1:
            where = f"{topic}[{partition}]"
            with self._lock:  # read from other threads; rare (once per transaction)
                self._markers[where] = self._markers.get(where, 0) + offset - prev - 1
        self._last_offset[(topic, partition)] = offset

    @property
    def transaction_markers(self) -> dict[str, int]:
        """Per output partition (``"topic[p]"``), the offsets skipped between the records read:
        transaction markers, and records of aborted transactions (read_committed hides both); empty
        when the output was not written transactionally."""
        with self._lock:
            return dict(self._markers)

    def _skip_deleted(self, consumer: Consumer, topic: str, partition: int, wanted: int) -> None:
        """The offset we need is gone (retention): record the gap and go on from the log start."""
        tp = TopicPartition(topic, partition)
        wanted = max(wanted, 0)
        try:
            low = consumer.get_watermark_offsets(tp, timeout=5.0)[0]
        except KafkaException as e:  # broker unreachable right now: resume at the log start anyway
            self._gaps.append({"topic": topic, "partition": partition, "from": wanted, "to": None,
                               "skipped": 0, "t": time.time()})
            log.warning("collector: %s[%d] offset %d was deleted before it was read; the log start is "
                        "unknown (%s), so the number of missing outputs is not known", topic, partition,
                        wanted, e)
            self._last_offset.pop((topic, partition), None)
            consumer.incremental_unassign([tp])
            consumer.incremental_assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
            return
        gap = {"topic": topic, "partition": partition, "from": wanted, "to": low,
               "skipped": max(low - wanted, 0), "t": time.time()}
        self._gaps.append(gap)
        log.warning("collector: outputs %s[%d] offsets %d..%d were deleted by the broker before they were "
                    "read (retention); %d outputs are missing from the record", topic, partition, wanted,
                    low - 1, gap["skipped"])
        # A partition in the reset-error state cannot be seek()ed; re-assign it at the log start.
        self._last_offset.pop((topic, partition), None)  # the skip is retention, not transaction markers
        consumer.incremental_unassign([tp])
        consumer.incremental_assign([TopicPartition(topic, partition, low)])

    def _mark_seen(self, flat: list[int]) -> None:
        if not flat:
            return
        arr = np.asarray(flat, dtype=np.int64)
        hi = int(arr.max())
        if hi >= self._seen.shape[0] and hi < (1 << 28):  # grow the bitmap for dense ids
            new = np.zeros(max(hi + 1, 2 * self._seen.shape[0]), np.bool_)
            new[: self._seen.shape[0]] = self._seen
            self._seen = new
        seen = self._seen
        inside = (arr >= 0) & (arr < seen.shape[0])
        a = arr[inside]
        uniq = np.unique(a)
        fresh = uniq[~seen[uniq]]
        seen[fresh] = True
        n_new = int(fresh.shape[0])
        for i in arr[~inside].tolist():
            if i not in self._seen_other:
                self._seen_other.add(i)
                n_new += 1
        self._ids_seen += n_new

    def _read(self, value: bytes | None, mkey: bytes | None) -> tuple[list[int], int, float, float, float]:
        """(ids, key number, window start, window end, aggregate value) of one output."""
        if value is None:
            raise ValueError("tombstone (null value)")
        reader = self._id_reader
        obj: Any = None
        if callable(reader):
            ids = [int(i) for i in self._call_reader(reader, value, mkey)]
            try:
                obj = _loads(value)
            except _JSONError:
                obj = None  # custom formats need not be JSON; no key/window then
        else:
            obj = _loads(value)
            if not isinstance(obj, dict):
                raise ValueError(f"output is JSON but not an object: {type(obj).__name__}")
            aggregate_only = self._amount is not None and self._id_path is None and not ("id" in obj or "ids" in obj)
            ids = [] if aggregate_only else _ids_from(obj, self._id_path)
        if not isinstance(obj, dict):
            if self._amount is not None:
                raise ValueError("aggregate output is not a JSON object")
            return ids, _key_number(mkey), np.nan, np.nan, np.nan
        return (ids, self._read_key(obj, mkey), *self._read_window(obj), self._read_amount(obj))

    def _call_reader(self, reader: IdReader, value: bytes, mkey: bytes | None) -> Sequence[int]:
        if self._what is None:  # the harness's own reader: an error is the output's
            return reader(value, mkey)
        try:
            return reader(value, mkey)
        except Exception as e:
            raise UserCodeError(f"{self._what} {name_of(reader)}", e,
                                f"output value {value[:80]!r}, key {mkey!r}") from e

    @property
    def failure(self) -> UserCodeError | None:
        """The first error a callable of the test raised reading an output (None: none did)."""
        return self._failure

    def _read_key(self, obj: dict, mkey: bytes | None) -> int:
        if self._key_path is not None:
            return _key_number(_field(obj, self._key_path, None))
        key = _key_number(obj.get("key", mkey))
        if key == _NO_KEY and "key" in obj:
            key = _key_number(mkey)
        return key

    def _read_window(self, obj: dict) -> tuple[float, float]:
        if self._window_path is None:
            return _window(obj)
        w = _field(obj, self._window_path, None)
        return (_time_s(w.get("start")), _time_s(w.get("end"))) if isinstance(w, dict) else (np.nan, np.nan)

    def _read_amount(self, obj: dict) -> float:
        amount = self._amount
        if amount is None:
            return np.nan
        if callable(amount):
            try:
                v = amount(obj)
            except Exception as e:
                raise UserCodeError(f"amount_field {name_of(amount)}", e, _output_detail(obj)) from e
        else:
            v = _field(obj, amount, KeyError)
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ValueError(f"aggregate value is not a number: {v!r}")
        return float(v)


def _output_detail(obj: Any) -> str:
    return f"output {str(obj)[:80]}"


def _field(obj: Any, path: list[str], missing: Any) -> Any:
    """``obj[path[0]][path[1]]...``; a missing step returns ``missing`` (or raises it, if an exception type)."""
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            if isinstance(missing, type) and issubclass(missing, Exception):
                raise ValueError(f"no field {'.'.join(path)!r}")
            return missing
        obj = obj[part]
    return obj


def _ids_from(obj: dict, path: list[str] | None) -> list[int]:
    if path is None:
        if "ids" in obj:
            v = obj["ids"]
        elif "id" in obj:
            v = obj["id"]
        else:
            raise ValueError("no `id` or `ids` field")
    else:
        v = obj
        for part in path:
            if not isinstance(v, dict) or part not in v:
                raise ValueError(f"no field {'.'.join(path)!r}")
            v = v[part]
    if isinstance(v, list):
        return [_as_id(i) for i in v]
    return [_as_id(v)]


def _as_id(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError(f"id is a boolean: {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise ValueError(f"id is not an integer: {v!r}")


def _key_number(k: Any) -> int:
    """``"k17"`` / ``b"k17"`` / ``17`` -> 17; anything else -> -1 (no key)."""
    if isinstance(k, bytes):
        try:
            k = k.decode()
        except UnicodeDecodeError:
            return _NO_KEY
    if isinstance(k, bool):
        return _NO_KEY
    if isinstance(k, int):
        return k
    if isinstance(k, str):
        s = k[1:] if k.startswith("k") else k
        if s.isdigit():
            return int(s)
    return _NO_KEY


def _window(obj: dict) -> tuple[float, float]:
    w = obj.get("window")
    if isinstance(w, dict):
        return _time_s(w.get("start")), _time_s(w.get("end"))
    if "window_start" in obj or "window_end" in obj:
        return _time_s(obj.get("window_start")), _time_s(obj.get("window_end"))
    return np.nan, np.nan


def _time_s(v: Any) -> float:
    """Epoch seconds from epoch ms (> 1e11), epoch seconds, or an ISO-8601 string (naive = UTC)."""
    if v is None or isinstance(v, bool):
        return np.nan
    if isinstance(v, (int, float)):
        return v / 1000.0 if abs(v) > 1e11 else float(v)
    if isinstance(v, str):
        try:
            return float(v) / 1000.0 if abs(float(v)) > 1e11 else float(v)
        except ValueError:
            pass
        iso = v.replace(" ", "T", 1)
        if iso.endswith("Z"):  # Spark's JSON stamps UTC as "Z", which fromisoformat reads only from Python 3.11
            iso = iso[:-1] + "+00:00"
        try:
            d = _dt.datetime.fromisoformat(iso)
        except ValueError:
            raise ValueError(f"unreadable window time {v!r}") from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=_dt.timezone.utc)
        return d.timestamp()
    raise ValueError(f"unreadable window time {v!r}")


def _ago(t: float | None) -> str:
    return "never" if t is None else f"{time.time() - t:.1f}s ago"

