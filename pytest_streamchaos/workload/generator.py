"""The load generator: paced, keyed, optionally skewed/late/poisoned input into a Kafka topic.

It runs in a background thread of the pytest process and records the ground truth's raw material
(:class:`~pytest_streamchaos.records.SentRecords`) for every record the broker acknowledged.

Pacing is a token bucket on ``time.monotonic``: every tick (10 ms by default) the thread produces
the records that are due since the start, so the rate does not drift over long runs. A generator
that falls behind (queue full while a broker is down) catches up, but by at most ``max_lag_s`` of
records; older due records are *skipped* (never created, so never in the ground truth).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
from confluent_kafka import KafkaError, KafkaException, Producer

from pytest_streamchaos.client_stats import ClientStats
from pytest_streamchaos.records import SentRecords
from pytest_streamchaos.usercode import FACTORY, RECORD, UserCodeError, annotation_label, check_arity
from pytest_streamchaos.workload import records

log = logging.getLogger(__name__)

#: ``poison`` may be a fraction, a collection of ids, or a vectorised predicate over ids.
PoisonSpec = float | Collection[int] | Callable[[np.ndarray], np.ndarray]
#: ``annotate`` callables: ``(record) -> number`` (the record as the factory made it, see
#: :mod:`pytest_streamchaos.usercode`), recorded per record in the ground truth.
Annotation = Callable[[Any], float]

_IN_FLIGHT, _ACKED, _FAILED = 0, 1, 2
_MAX_BATCH = 10_000


class _Buffers:
    """Preallocated, growable per-record columns (index = sequence number = id - id_start)."""

    def __init__(self, capacity: int, extra: Collection[str] = ()) -> None:
        self.capacity = capacity
        #: ground-truth annotation columns (``Generator(annotate=...)``), NaN until set
        self.extra = {name: np.full(capacity, np.nan) for name in extra}
        self.keys = np.empty(capacity, np.int64)
        self.event_ts = np.empty(capacity, np.float64)
        self.send_ts = np.full(capacity, np.nan)
        self.state = np.zeros(capacity, np.int8)
        self.poison = np.zeros(capacity, np.bool_)
        self.partition = np.full(capacity, -1, np.int32)  #: where the broker stored it (from the ack)
        self.offset = np.full(capacity, -1, np.int64)

    def ensure(self, n: int) -> None:
        """Grow (double) so that ``n`` records fit."""
        if n <= self.capacity:
            return
        cap = max(n, 2 * self.capacity)
        for name, fill in (("keys", None), ("event_ts", None), ("send_ts", np.nan), ("state", 0),
                           ("poison", False), ("partition", -1), ("offset", -1)):
            old = getattr(self, name)
            new = np.empty(cap, old.dtype) if fill is None else np.full(cap, fill, old.dtype)
            new[: self.capacity] = old
            setattr(self, name, new)
        for name, old in self.extra.items():
            new = np.full(cap, np.nan)
            new[: self.capacity] = old
            self.extra[name] = new
        self.capacity = cap



def _check_args(*, bootstrap_servers: str, topic: str, rate: float, key_space: int, skew: float, record_size: int,
                late_fraction: float, late_by_seconds: float | tuple[float, float], partitions: int | None,
                max_records: int | None, message_timeout_s: float, tick_s: float, max_lag_s: float,
                record_factory: records.RecordFactory | None,
                annotate: Mapping[str, Annotation] | None, what: str) -> tuple[float, float]:
    """:class:`Generator`'s arguments checked (``ValueError`` naming the argument); the late range."""
    _check(bool(bootstrap_servers), "bootstrap_servers is empty; pass kafka.bootstrap_servers")
    _check(bool(topic), "topic is empty; pass the name returned by kafka.create_topic(...)")
    _check(rate > 0, f"rate must be > 0 records/s, got {rate!r}")
    _check(key_space >= 1, f"key_space must be >= 1, got {key_space!r}")
    _check(skew >= 0, f"skew (Zipf exponent) must be >= 0, got {skew!r}")
    _check(0 <= record_size <= records.MAX_RECORD_SIZE,
           f"record_size must be in [0, {records.MAX_RECORD_SIZE}], got {record_size!r}")
    _check(0.0 <= late_fraction <= 1.0, f"late_fraction must be in [0, 1], got {late_fraction!r}")
    lo, hi = (late_by_seconds, late_by_seconds) if np.isscalar(late_by_seconds) else late_by_seconds
    _check(0 <= lo <= hi, f"late_by_seconds must be >= 0 (or a (lo, hi) range), got {late_by_seconds!r}")
    _check(partitions is None or partitions >= 1, f"partitions must be None or >= 1, got {partitions!r}")
    _check(max_records is None or max_records >= 0, f"max_records must be >= 0, got {max_records!r}")
    _check(message_timeout_s > 0 and tick_s > 0 and max_lag_s > 0,
           "message_timeout_s, tick_s and max_lag_s must be > 0")
    if record_factory is not None:
        check_arity(record_factory, 1, what, FACTORY)
    _check(not annotate or record_factory is not None,
           "annotate= needs a record_factory (annotations are computed from its output)")
    for name, fn in (annotate or {}).items():
        check_arity(fn, 1, annotation_label(name), RECORD)
    return lo, hi


def _producer_conf(bootstrap_servers: str, rate: float, message_timeout_s: float, on_error: Callable[..., Any],
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


class Generator:
    """Produce JSON input records to ``topic`` at ``rate`` records/s from a background thread.

    Args:
        bootstrap_servers: Kafka bootstrap list.
        topic: the input topic (must exist).
        rate: target records per second (> 0).
        key_space: keys are ``k0 .. k<key_space-1>``.
        skew: Zipf exponent of the key distribution (0 = uniform; 1 = classic Zipf, ``k0`` hottest).
        record_size: pad good records to this many bytes.
        late_fraction: fraction of records whose event time lies in the past.
        late_by_seconds: how far in the past: a number, or ``(lo, hi)`` for a uniform range.
        poison: ``0`` (none), a fraction in (0, 1], a collection of ids, or a function
            ``ids -> bool mask``. Poison records are malformed (see ``records.POISON_KINDS``).
        partitions: ``None`` lets the producer partition by key (murmur2, like Java clients);
            an int ``n`` sends key ``k`` to partition ``k % n`` (so tests know where a key lives).
        seed: seeds keys, lateness and poison.
        id_start: first id (use distinct ranges when several generators feed one job).
        max_records: stop producing after this many records (None = until ``stop()``).
        message_timeout_s: how long the producer retries a record before reporting it failed.
        tick_s: pacing granularity.
        max_lag_s: the most backlog (in seconds of records) the generator catches up on.
        producer_config: extra librdkafka settings (override the defaults).
        record_factory: build each record's value yourself: a callable given a
            :class:`~pytest_streamchaos.workload.records.RecordSpec` (``id``, ``key``, ``key_index``,
            ``ts``, ``rng``) returning a dict (sent as JSON), str, bytes, or a ``(key, value)`` pair
            (key str / bytes / None). ``None`` (default): the built-in JSON template (fastest path).
            Ids, keys, event times (lateness included) and poison are chosen as without a factory;
            a poison record's factory output is replaced by malformed bytes (the key is kept).
            ``record_size`` does not apply. Costs a few microseconds per record.
        annotate: ground truth computed from the factory's output at send time:
            ``{name: fn(record) -> number}`` (``record``: what the factory returned; of a ``(key,
            value)`` pair, the value), recorded per record in
            ``SentRecords.annotations[name]`` (float64) for the oracles, e.g. the number of outputs
            an input fans out to (``IdentityOracle(copies=name)``) or the amount it adds to an
            aggregate (``AggregateOracle(amount=name)``). Needs ``record_factory``.
        what: how messages name the factory (``chaos.run`` passes ``inputs['<topic>'] factory``).

    A factory or ``annotate`` callable that raises (or a factory returning no record) stops the
    producing thread: :attr:`failure` holds the
    :class:`~pytest_streamchaos.usercode.UserCodeError` naming it, and :meth:`stop` raises it.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        rate: float,
        key_space: int = 100,
        skew: float = 0.0,
        record_size: int = 100,
        late_fraction: float = 0.0,
        late_by_seconds: float | tuple[float, float] = 60.0,
        poison: PoisonSpec = 0,
        partitions: int | None = None,
        seed: int = 0,
        id_start: int = 0,
        max_records: int | None = None,
        message_timeout_s: float = 60.0,
        tick_s: float = 0.01,
        max_lag_s: float = 1.0,
        producer_config: dict[str, Any] | None = None,
        record_factory: records.RecordFactory | None = None,
        annotate: Mapping[str, Annotation] | None = None,
        what: str = "record_factory",
    ) -> None:
        lo, hi = _check_args(bootstrap_servers=bootstrap_servers, topic=topic, rate=rate, key_space=key_space,
                             skew=skew, record_size=record_size, late_fraction=late_fraction,
                             late_by_seconds=late_by_seconds, partitions=partitions, max_records=max_records,
                             message_timeout_s=message_timeout_s, tick_s=tick_s, max_lag_s=max_lag_s,
                             record_factory=record_factory, annotate=annotate, what=what)
        self.what = what
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.key_space = key_space
        self.skew = skew
        self.record_size = record_size
        self.late_fraction = late_fraction
        self.late_by = (float(lo), float(hi))
        self.partitions = partitions
        self.seed = seed
        self.id_start = id_start
        self.max_records = max_records
        self.message_timeout_s = message_timeout_s
        self.tick_s = tick_s
        self.max_lag_s = max_lag_s
        self._poison_fn = _poison_predicate(poison, seed)
        self._factory = record_factory
        self._annotate = dict(annotate or {})
        self._rate = float(rate)
        self._rng = np.random.default_rng(seed)
        self._key_cdf = _zipf_cdf(key_space, skew) if skew > 0 else None
        self._key_bytes = [records.key_bytes(k) for k in range(key_space)] if key_space <= 200_000 else None
        self.client_stats = ClientStats("generator")  # the observer checks the faults spare it
        self._conf = {**_producer_conf(bootstrap_servers, rate, message_timeout_s, self._on_error, None),
                      **self.client_stats.conf(), **(producer_config or {})}
        self._buf = _Buffers(max(4096, int(rate * 30)), self._annotate)
        self._lock = threading.Lock()  # guards buffer growth against concurrent snapshots
        self._producer: Producer | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._paused = False
        self._pending_rate: float | None = None
        self._produced = 0
        self._acked = 0
        self._failed = 0
        self._skipped = 0
        self._queue_full = 0
        self._errors: list[str] = []
        self._fatal: KafkaError | None = None
        self._thread_error: BaseException | None = None
        self._t_start: float | None = None  # wall clock
        self._t_end: float | None = None  # wall clock when producing stopped
        self._thread_cpu_s: float | None = None  # CPU time of the producing thread (benchmarks)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Generator:
        """Connect, check the topic exists, and start producing. Returns ``self``."""
        if self._thread is not None:
            raise RuntimeError("Generator.start() called twice; create a new Generator for a new run")
        producer = Producer(self._conf)
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
        self._t_start = time.time()
        self._thread = threading.Thread(target=self._run, name=f"streamchaos-generator-{self.topic}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop producing, then wait until every produced record is acknowledged or has failed.

        ``timeout`` bounds the wait (default: the message timeout plus 10 s). Records still in
        flight after that are purged and counted as failed. Idempotent.
        """
        if self._thread is None:
            return
        self._stop_timeout = self.message_timeout_s + 10.0 if timeout is None else timeout
        self._stop.set()
        self._thread.join()
        if self._thread_error is not None:
            err, self._thread_error = self._thread_error, None
            if isinstance(err, UserCodeError):  # the test's own code: its error as it is
                raise err
            raise RuntimeError(f"generator thread failed: {err!r}") from err

    @property
    def failure(self) -> BaseException | None:
        """Why the producing thread ended early (a :class:`~pytest_streamchaos.usercode.UserCodeError`
        when the test's factory or ``annotate`` raised), None while it is fine."""
        return self._thread_error

    def claim_failure(self) -> BaseException | None:
        """:attr:`failure`, which the caller now reports: :meth:`stop` no longer raises it."""
        err, self._thread_error = self._thread_error, None
        return err

    def pause(self) -> None:
        """Stop producing new records until :meth:`resume` (paused time is not owed afterwards)."""
        self._paused = True

    def resume(self) -> None:
        """Continue producing at the current rate."""
        self._paused = False

    def set_rate(self, rate: float) -> None:
        """Change the target rate from now on (no catch-up on the old schedule)."""
        _check(rate > 0, f"rate must be > 0 records/s, got {rate!r}")
        self._pending_rate = float(rate)

    def __enter__(self) -> Generator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ results
    @property
    def rate(self) -> float:
        """The current target rate (records/s)."""
        return self._pending_rate or self._rate

    @property
    def produced(self) -> int:
        """Records handed to the producer (acked + failed + in flight)."""
        return self._produced

    @property
    def acked(self) -> int:
        """Records the broker acknowledged."""
        return self._acked

    @property
    def failed(self) -> int:
        """Records whose delivery failed (timed out or purged); they are not in the ground truth."""
        return self._failed

    @property
    def in_flight(self) -> int:
        """Records produced but neither acknowledged nor failed yet."""
        return self._produced - self._acked - self._failed

    @property
    def skipped(self) -> int:
        """Due records never created because the generator was more than ``max_lag_s`` behind."""
        return self._skipped

    @property
    def errors(self) -> list[str]:
        """Client errors reported while running (broker down, timeouts...), most recent last."""
        return list(self._errors)

    @property
    def running(self) -> bool:
        """True while the producing thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def rate_achieved(self) -> float:
        """Acknowledged records per second over the producing span (start to the last tick that
        produced, pauses included)."""
        if self._t_start is None:
            return 0.0
        end = self._t_end if self._t_end is not None else time.time()
        return self._acked / max(end - self._t_start, 1e-9)

    def sent(self) -> SentRecords:
        """The acknowledged records so far (a snapshot), in id order."""
        with self._lock:
            n = self._produced
            b = self._buf
            ok = np.flatnonzero(b.state[:n] == _ACKED)
            return SentRecords(
                ids=ok.astype(np.int64) + self.id_start,
                keys=b.keys[ok].copy(),
                event_ts=b.event_ts[ok].copy(),
                send_ts=b.send_ts[ok].copy(),
                poison=b.poison[ok].copy(),
                annotations={name: col[ok].copy() for name, col in b.extra.items()},
                partition=b.partition[ok].astype(np.int64),
                offset=b.offset[ok].copy(),
            )

    def failed_ids(self) -> np.ndarray:
        """Ids whose delivery failed. The broker may still have persisted some of them (a timeout
        is not proof of absence), so a validator may see them in the output."""
        with self._lock:
            return np.flatnonzero(self._buf.state[: self._produced] == _FAILED).astype(np.int64) + self.id_start

    def stats(self) -> dict[str, Any]:
        """Counters for reports and benchmarks."""
        return {"rate_target": self.rate, "rate_achieved": self.rate_achieved, "produced": self._produced,
                "acked": self._acked, "failed": self._failed, "in_flight": self.in_flight,
                "skipped": self._skipped, "queue_full_events": self._queue_full,
                "errors": len(self._errors), "fatal": str(self._fatal) if self._fatal else None,
                "thread_cpu_s": self._thread_cpu_s}

    # ------------------------------------------------------------------ internals
    def _on_error(self, err: KafkaError) -> None:
        # Broker-down and transport errors land here; they are expected under faults.
        self._errors.append(str(err))
        if len(self._errors) > 1000:
            del self._errors[:500]
        if err.fatal():
            self._fatal = err

    def _on_delivery(self, seq: int, err: KafkaError | None, msg: Any) -> None:
        b = self._buf
        if err is None:
            b.send_ts[seq] = time.time()
            b.partition[seq] = msg.partition()
            b.offset[seq] = msg.offset()
            b.state[seq] = _ACKED
            self._acked += 1
        else:
            b.state[seq] = _FAILED
            self._failed += 1
            if len(self._errors) < 1000:
                self._errors.append(f"delivery of id {seq + self.id_start} failed: {err}")

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # surfaced by stop() / failure
            self._thread_error = e
            if isinstance(e, UserCodeError):
                log.error("generator of %s stopped: %s", self.topic, e)
            else:
                log.exception("generator thread failed")
        finally:
            self._t_end = self._t_end or time.time()
            self._drain()

    def _loop(self) -> None:
        p = self._producer
        assert p is not None
        mono = time.monotonic
        wall_offset = time.time() - mono()  # monotonic -> wall clock for event times
        t0, base, rate = mono(), 0, self._rate
        covered = t0
        self._t_start = t0 + wall_offset  # the schedule's origin: rate_achieved is measured from here
        cpu0 = time.thread_time()
        while not self._stop.is_set():
            if self._fatal is not None:
                log.error("producer hit a fatal error, generator stops: %s", self._fatal)
                break
            now = mono()
            if self._pending_rate is not None:
                rate, self._rate, self._pending_rate = self._pending_rate, self._pending_rate, None
                t0, base = now, self._produced
            covered = now  # the schedule is produced up to here (rate_achieved's end point)
            if self._paused:
                t0, base = now, self._produced
            else:
                due = base + int((now - t0) * rate) - self._produced
                max_backlog = int(rate * self.max_lag_s) + 1
                if due > max_backlog:  # too far behind: forget the oldest due records (their slots
                    self._skipped += due - max_backlog  # in event time stay empty)
                    base -= due - max_backlog
                    due = max_backlog
                if self.max_records is not None:
                    due = min(due, self.max_records - self._produced)
                    if due <= 0 and self._produced >= self.max_records:
                        break
                if due > 0:  # bounded batches, so delivery reports get served in between
                    self._produce(p, min(due, _MAX_BATCH), t0, base, rate, wall_offset)
            next_tick = now + self.tick_s
            # Serve delivery callbacks while waiting for the next tick.
            while True:
                left = next_tick - mono()
                if left <= 0:
                    break
                p.poll(left)
        self._t_end = covered + wall_offset
        self._thread_cpu_s = time.thread_time() - cpu0

    def _produce(self, p: Producer, n: int, t0: float, base: int, rate: float, wall_offset: float) -> None:
        start = self._produced
        with self._lock:
            self._buf.ensure(start + n)
        b = self._buf
        seqs = np.arange(start, start + n, dtype=np.int64)
        ids = seqs + self.id_start
        # Event time = when the record was scheduled (<= now); late ones lie further back.
        event = t0 + (seqs - base + 1) / rate + wall_offset
        if self.late_fraction > 0:
            late = self._rng.random(n) < self.late_fraction
            lo, hi = self.late_by
            event[late] -= lo if lo == hi else self._rng.uniform(lo, hi, int(late.sum()))
        ts_ms = np.floor(event * 1000.0).astype(np.int64)
        if self._key_cdf is None:
            keys = self._rng.integers(0, self.key_space, n, dtype=np.int64)
        else:
            keys = np.searchsorted(self._key_cdf, self._rng.random(n), side="right").astype(np.int64)
        poison = self._poison_fn(ids) if self._poison_fn is not None else None
        if self._factory is None:
            values = records.encode_batch(ids, keys, ts_ms, self.record_size, poison)
            kb = self._key_bytes
            msg_keys = ([kb[k] for k in keys.tolist()] if kb is not None
                        else [records.key_bytes(k) for k in keys.tolist()])
        else:
            values, msg_keys = self._build(start, ids, keys, ts_ms, poison)
        b.keys[start:start + n] = keys
        b.event_ts[start:start + n] = ts_ms / 1000.0
        b.poison[start:start + n] = False if poison is None else poison
        b.send_ts[start:start + n] = np.nan
        b.state[start:start + n] = _IN_FLIGHT
        self._produced = start + self._send(p, start, values, msg_keys, keys)
        p.poll(0)

    def _build(self, start: int, ids: np.ndarray, keys: np.ndarray, ts_ms: np.ndarray,
               poison: np.ndarray | None) -> tuple[list[bytes], list[bytes | None]]:
        """Values and message keys from the record factory; annotations go to the buffers."""
        assert self._factory is not None
        values, msg_keys, ann = records.build_batch(self._factory, self.seed, ids, keys, ts_ms, poison,
                                                    self._annotate, self.what)
        for name, col in ann.items():
            self._buf.extra[name][start:start + ids.shape[0]] = col
        return values, msg_keys

    def _send(self, p: Producer, start: int, values: list[bytes], msg_keys: list[bytes | None],
              keys: np.ndarray) -> int:
        """Hand the records to the producer; returns how many it took (it stops when its queue is full)."""
        produce, topic, cb = p.produce, self.topic, self._on_delivery
        partial = functools.partial
        done = 0
        try:
            if self.partitions is None:
                for j in range(len(values)):
                    produce(topic, values[j], msg_keys[j], on_delivery=partial(cb, start + j))
                    done += 1
            else:
                parts = self.partitions
                klist = keys.tolist()
                for j in range(len(values)):
                    produce(topic, values[j], msg_keys[j], partition=klist[j] % parts,
                            on_delivery=partial(cb, start + j))
                    done += 1
        except BufferError:
            # Producer queue full (brokers unreachable): the rest stays due for the next tick.
            self._queue_full += 1
        return done

    def _drain(self) -> None:
        p = self._producer
        if p is None:
            return
        deadline = time.monotonic() + getattr(self, "_stop_timeout", self.message_timeout_s + 10.0)
        while self.in_flight > 0 and time.monotonic() < deadline:
            p.poll(0.05)
        if self.in_flight > 0:
            log.warning("generator: %d records still in flight at stop; purging them (counted failed)",
                        self.in_flight)
            p.purge()
            end = time.monotonic() + 5.0
            while self.in_flight > 0 and time.monotonic() < end:
                p.poll(0.05)
        p.flush(0)
        self._producer = None


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _zipf_cdf(n: int, s: float) -> np.ndarray:
    """CDF of a finite Zipf distribution over ranks 1..n (rank 1 = key 0)."""
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    cdf[-1] = 1.0  # searchsorted never returns n
    return cdf


def _poison_predicate(poison: PoisonSpec, seed: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """Normalise the ``poison`` argument to ``ids -> bool mask`` (None = no poison)."""
    if callable(poison):
        return lambda ids: np.asarray(poison(ids), dtype=np.bool_)
    if isinstance(poison, (int, float)) and not isinstance(poison, bool):
        if poison == 0:
            return None
        _check(0 < poison <= 1, f"poison as a number is a fraction in (0, 1], got {poison!r}; "
                                "pass a list of ids to poison specific records")
        frac = float(poison)
        # Hashed per id (not drawn from the batch rng), so the choice is reproducible from the seed
        # whatever the batch boundaries were.
        return lambda ids: _unit_hash(ids, seed) < frac
    try:
        chosen = np.fromiter(poison, dtype=np.int64)
    except TypeError as e:
        raise ValueError(f"poison must be a fraction, a collection of ids or a callable, got {poison!r}") from e
    return lambda ids: np.isin(ids, chosen)


def _unit_hash(ids: np.ndarray, seed: int) -> np.ndarray:
    """A uniform value in [0, 1) per id (splitmix64 finaliser), reproducible for a seed."""
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15 + 1) % 2**64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(2**53)
