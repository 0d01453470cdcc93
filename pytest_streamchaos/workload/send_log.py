"""The generator's send bookkeeping: per record its key, times, poison flag and delivery state.

The producing thread writes a batch's columns before handing it to the producer; the broker's
acknowledgements (delivery reports, served on the same thread) mark records acked, with where the
broker stored them, or failed. :meth:`SendLog.sent` is the ground truth: the acknowledged records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection
from typing import Any

import numpy as np
from confluent_kafka import KafkaError

from pytest_streamchaos.records import SentRecords
from pytest_streamchaos.workload.record_batches import Batch

_IN_FLIGHT, _ACKED, _FAILED = 0, 1, 2


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


class SendLog:
    """Every record produced, by sequence number (id - ``id_start``), and the counters.

    :attr:`errors` holds the client's errors (broker down, timeouts...) and failed deliveries, most
    recent last.
    """

    def __init__(self, capacity: int, annotations: Collection[str], id_start: int) -> None:
        self.id_start = id_start
        self.produced = 0  #: records handed to the producer
        self.acked = 0
        self.failed = 0
        self.errors: list[str] = []
        self._buf = _Buffers(capacity, annotations)
        self._lock = threading.Lock()  # guards buffer growth against concurrent snapshots

    @property
    def in_flight(self) -> int:
        """Records produced but neither acknowledged nor failed yet."""
        return self.produced - self.acked - self.failed

    def add(self, start: int, batch: Batch) -> None:
        """Note a batch's records from sequence number ``start`` as in flight."""
        n = batch.keys.shape[0]
        with self._lock:
            self._buf.ensure(start + n)
        b = self._buf
        for name, col in batch.annotations.items():
            b.extra[name][start:start + n] = col
        b.keys[start:start + n] = batch.keys
        b.event_ts[start:start + n] = batch.ts_ms / 1000.0
        b.poison[start:start + n] = False if batch.poison is None else batch.poison
        b.send_ts[start:start + n] = np.nan
        b.state[start:start + n] = _IN_FLIGHT

    def on_delivery(self, seq: int, err: KafkaError | None, msg: Any) -> None:
        """The producer's delivery report of record ``seq``: acked (where, when) or failed."""
        b = self._buf
        if err is None:
            b.send_ts[seq] = time.time()
            b.partition[seq] = msg.partition()
            b.offset[seq] = msg.offset()
            b.state[seq] = _ACKED
            self.acked += 1
        else:
            b.state[seq] = _FAILED
            self.failed += 1
            if len(self.errors) < 1000:
                self.errors.append(f"delivery of id {seq + self.id_start} failed: {err}")

    def sent(self) -> SentRecords:
        """The acknowledged records so far (a snapshot), in id order."""
        with self._lock:
            n = self.produced
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
        """Ids whose delivery failed."""
        with self._lock:
            return np.flatnonzero(self._buf.state[: self.produced] == _FAILED).astype(np.int64) + self.id_start
