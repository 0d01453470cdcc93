"""The load generator: paced, keyed, optionally skewed/late/poisoned input into a Kafka topic.

It runs in a background thread of the pytest process and records the ground truth's raw material
(:class:`~pytest_streamchaos.records.SentRecords`) for every record the broker acknowledged.

Pacing is a token bucket on ``time.monotonic``: every tick (10 ms by default) the thread produces
the records that are due since the start, so the rate does not drift over long runs. A generator
that falls behind (queue full while a broker is down) catches up, but by at most ``max_lag_s`` of
records; older due records are *skipped* (never created, so never in the ground truth).

The work is shared by collaborators: :mod:`~pytest_streamchaos.workload.pacing` (the token bucket),
:mod:`~pytest_streamchaos.workload.record_batches` (keys, event times, poison, message bytes),
:mod:`~pytest_streamchaos.workload.send_log` (the ground truth and the acknowledgements) and
:mod:`~pytest_streamchaos.workload.sender` (the Kafka producer).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from pytest_streamchaos.client_stats import ClientStats
from pytest_streamchaos.records import SentRecords
from pytest_streamchaos.usercode import FACTORY, RECORD, UserCodeError, annotation_label, check_arity
from pytest_streamchaos.workload import records
from pytest_streamchaos.workload.pacing import Pacer
from pytest_streamchaos.workload.poison import PoisonSpec
from pytest_streamchaos.workload.record_batches import Annotation, RecordMaker
from pytest_streamchaos.workload.send_log import SendLog
from pytest_streamchaos.workload.sender import Sender

log = logging.getLogger(__name__)

_MAX_BATCH = 10_000


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
    lo, hi = late_by_seconds if isinstance(late_by_seconds, tuple) else (late_by_seconds, late_by_seconds)
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
        event_origin: float | None = None,
        event_rate: float | None = None,
    ) -> None:
        lo, hi = _check_args(bootstrap_servers=bootstrap_servers, topic=topic, rate=rate, key_space=key_space,
                             skew=skew, record_size=record_size, late_fraction=late_fraction,
                             late_by_seconds=late_by_seconds, partitions=partitions, max_records=max_records,
                             message_timeout_s=message_timeout_s, tick_s=tick_s, max_lag_s=max_lag_s,
                             record_factory=record_factory, annotate=annotate, what=what)
        self.what, self.bootstrap_servers, self.topic = what, bootstrap_servers, topic
        self.key_space, self.skew, self.record_size = key_space, skew, record_size
        self.late_fraction, self.late_by = late_fraction, (float(lo), float(hi))
        self.partitions, self.seed, self.id_start, self.max_records = partitions, seed, id_start, max_records
        self.message_timeout_s, self.tick_s, self.max_lag_s = message_timeout_s, tick_s, max_lag_s
        self._maker = RecordMaker(key_space=key_space, skew=skew, record_size=record_size,
                                  late_fraction=late_fraction, late_by=self.late_by, poison=poison, seed=seed,
                                  factory=record_factory, annotate=annotate or {}, what=what)
        self._pacer = Pacer(rate, max_lag_s, max_records)
        self._log = SendLog(max(4096, int(rate * 30)), list(annotate or {}), id_start)
        self.client_stats = ClientStats("generator")  # the observer checks the faults spare it
        self._sender = Sender(bootstrap_servers, topic, partitions, self._log, rate=rate,
                              message_timeout_s=message_timeout_s,
                              extra_conf={**self.client_stats.conf(), **(producer_config or {})})
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stop_timeout = message_timeout_s + 10.0
        self._thread_error: BaseException | None = None
        self._t_start: float | None = None  # wall clock
        self._t_end: float | None = None  # wall clock when producing stopped
        self._thread_cpu_s: float | None = None  # CPU time of the producing thread (benchmarks)
        #: fixed event times: record ``seq``'s is ``origin + (seq + 1) / event_rate`` whenever it is sent (None:
        #: the time it was scheduled); a reference run and the run compared with it share one origin. The clock's
        #: rate is ``rate`` unless ``event_rate`` says otherwise (records sent faster than their clock: the same
        #: records, on other batch boundaries)
        self.event_origin = event_origin
        self._nominal_rate = float(event_rate or rate)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Generator:
        """Connect, check the topic exists, and start producing. Returns ``self``."""
        if self._thread is not None:
            raise RuntimeError("Generator.start() called twice; create a new Generator for a new run")
        self._sender.connect()
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
        self._pacer.paused = True

    def resume(self) -> None:
        """Continue producing at the current rate."""
        self._pacer.paused = False

    def set_rate(self, rate: float) -> None:
        """Change the target rate from now on (no catch-up on the old schedule)."""
        _check(rate > 0, f"rate must be > 0 records/s, got {rate!r}")
        self._pacer.pending_rate = float(rate)

    def __enter__(self) -> Generator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ results
    @property
    def rate(self) -> float:
        """The current target rate (records/s)."""
        return self._pacer.target

    @property
    def produced(self) -> int:
        """Records handed to the producer (acked + failed + in flight)."""
        return self._log.produced

    @property
    def acked(self) -> int:
        """Records the broker acknowledged."""
        return self._log.acked

    @property
    def failed(self) -> int:
        """Records whose delivery failed (timed out or purged); they are not in the ground truth."""
        return self._log.failed

    @property
    def in_flight(self) -> int:
        """Records produced but neither acknowledged nor failed yet."""
        return self._log.in_flight

    @property
    def skipped(self) -> int:
        """Due records never created because the generator was more than ``max_lag_s`` behind."""
        return self._pacer.skipped

    @property
    def errors(self) -> list[str]:
        """Client errors reported while running (broker down, timeouts...), most recent last."""
        return list(self._log.errors)

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
        return self.acked / max(end - self._t_start, 1e-9)

    def sent(self) -> SentRecords:
        """The acknowledged records so far (a snapshot), in id order."""
        return self._log.sent()

    def failed_ids(self) -> np.ndarray:
        """Ids whose delivery failed. The broker may still have persisted some of them (a timeout
        is not proof of absence), so a validator may see them in the output."""
        return self._log.failed_ids()

    def stats(self) -> dict[str, object]:
        """Counters for reports and benchmarks."""
        fatal = self._sender.fatal
        return {"rate_target": self.rate, "rate_achieved": self.rate_achieved, "produced": self.produced,
                "acked": self.acked, "failed": self.failed, "in_flight": self.in_flight,
                "skipped": self.skipped, "queue_full_events": self._sender.queue_full,
                "errors": len(self._log.errors), "fatal": str(fatal) if fatal else None,
                "thread_cpu_s": self._thread_cpu_s, "event_origin": self.event_origin}

    # ------------------------------------------------------------------ internals
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
            self._sender.drain(self._stop_timeout)

    def _loop(self) -> None:
        mono = time.monotonic
        wall_offset = time.time() - mono()  # monotonic -> wall clock for event times
        covered = mono()
        self._pacer.start(covered)
        self._t_start = covered + wall_offset  # the schedule's origin: rate_achieved is measured from here
        cpu0 = time.thread_time()
        while not self._stop.is_set():
            if self._sender.fatal is not None:
                log.error("producer hit a fatal error, generator stops: %s", self._sender.fatal)
                break
            now = covered = mono()  # the schedule is produced up to here (rate_achieved's end point)
            due = self._pacer.due(now, self._log.produced)
            if due is None:  # max_records made
                break
            if due > 0:  # bounded batches, so delivery reports get served in between
                self._produce(min(due, _MAX_BATCH), wall_offset)
            self._sender.serve_until(now + self.tick_s)  # delivery reports while waiting for the next tick
        self._t_end = covered + wall_offset
        self._thread_cpu_s = time.thread_time() - cpu0

    def _produce(self, n: int, wall_offset: float) -> None:
        start = self._log.produced
        seqs = np.arange(start, start + n, dtype=np.int64)
        # Event time = when the record was scheduled (<= now), or its fixed place on a shared clock; late
        # ones lie further back.
        if self.event_origin is None:
            event = self._pacer.scheduled(seqs, wall_offset)
        else:
            event = self.event_origin + (seqs + 1) / self._nominal_rate
        batch = self._maker.make(seqs + self.id_start, event)
        self._log.add(start, batch)
        self._log.produced = start + self._sender.send(start, batch)
        self._sender.serve()


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)
