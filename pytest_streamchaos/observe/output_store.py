"""The collector's record of the outputs read: CSR columns, the ids seen, arrival and write stamps,
malformed samples.

Written by the collector's consuming thread (:meth:`OutputStore.record`, one fetched batch at a
time), read from the test's thread (:meth:`OutputStore.snapshot`, :meth:`SeenIds.has_seen`, the
counters).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

from pytest_streamchaos.observe.output_reader import NO_KEY, OutputReader
from pytest_streamchaos.observe.seen_names import SAMPLE, Sampled
from pytest_streamchaos.records import OutputRecords
from pytest_streamchaos.usercode import UserCodeError


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


class SeenIds:
    """The distinct input ids seen in any output: a bitmap for dense ids from 0, a set for the rest."""

    def __init__(self) -> None:
        self._seen = np.zeros(1 << 16, np.bool_)
        self._other: set[int] = set()  # ids outside the bitmap's range
        self.count = 0  #: distinct ids seen

    def mark(self, flat: list[int]) -> None:
        """Note the ids of a batch of outputs."""
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
        uniq = np.unique(arr[inside])
        fresh = uniq[~seen[uniq]]
        seen[fresh] = True
        n_new = int(fresh.shape[0])
        for i in arr[~inside].tolist():
            if i not in self._other:
                self._other.add(i)
                n_new += 1
        self.count += n_new

    def has_seen(self, ids: int | Sequence[int] | np.ndarray) -> bool:
        """True if every id in ``ids`` has appeared in some output."""
        arr = np.atleast_1d(np.asarray(ids, dtype=np.int64))
        seen = self._seen
        inside = (arr >= 0) & (arr < seen.shape[0])
        if not seen[arr[inside]].all():
            return False
        return all(int(i) in self._other for i in arr[~inside])


class OutputStore:
    """Reads each fetched output with ``reader`` and records it (see the module doc).

    An unreadable output is counted with a raw sample (up to ``max_samples``); the first error of a
    callable of the test is kept in :attr:`failure` instead.
    """

    def __init__(self, topics: list[str], reader: OutputReader, max_samples: int) -> None:
        self.topics = topics
        self.reader = reader
        self.max_samples = max_samples
        self.seen = SeenIds()
        self.failure: UserCodeError | None = None
        self.malformed = 0
        self.samples: list[MalformedOutput] = []
        #: the first records read, readable or not, with how many ids each gave
        self.first: list[Sampled] = []
        self.last_arrival: float | None = None
        self.last_written: float | None = None
        self._topic_index = {t: i for i, t in enumerate(topics)}
        self._cols = _Columns()
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Outputs recorded (malformed ones excluded)."""
        return self._cols.n

    def record(self, msgs: list[Any], now: float) -> None:
        """Record the readable messages of one fetched batch, all arrived at ``now``."""
        lengths: list[int] = []
        flat: list[int] = []
        keys: list[int] = []
        ws: list[float] = []
        we: list[float] = []
        tix: list[int] = []
        vals: list[float] = []
        for m in msgs:
            ts_type, ts_ms = m.timestamp()
            if ts_type == TIMESTAMP_LOG_APPEND_TIME:
                self.last_written = max(self.last_written or 0.0, ts_ms / 1000.0)
            try:
                ids, key, w0, w1, amount = self.reader.read(m.value(), m.key())
            except UserCodeError as e:  # the test's reader failed: the run stops on the first
                self.failure = self.failure or e
                continue
            except Exception as e:  # an unreadable output is a finding
                self._malformed(m, e)
                self._sample(m, None, f"{type(e).__name__}: {e}")
                continue
            self._sample(m, len(ids))
            lengths.append(len(ids))
            flat.extend(ids)
            keys.append(key)
            ws.append(w0)
            we.append(w1)
            vals.append(amount)
            tix.append(self._topic_index[m.topic()])
        if not lengths:
            return
        with self._lock:
            self._cols.append(now, keys, ws, we, lengths, flat, tix, vals)
        self.seen.mark(flat)
        self.last_arrival = now

    def _sample(self, m: Any, ids: int | None, error: str = "") -> None:
        """Keep the first :data:`~.seen_names.SAMPLE` records read, readable or not (the run checks the test's
        id spec and field names on them: :mod:`~pytest_streamchaos.observe.seen_names`)."""
        if len(self.first) < SAMPLE:
            self.first.append(Sampled(m.value(), m.key(), ids, error))

    def _malformed(self, m: Any, e: Exception) -> None:
        self.malformed += 1
        if len(self.samples) < self.max_samples:
            self.samples.append(MalformedOutput(m.topic(), m.partition(), m.offset(), m.value(),
                                                f"{type(e).__name__}: {e}"))

    def snapshot(self) -> OutputRecords:
        """The outputs recorded so far, in arrival order (see ``Collector.outputs``)."""
        with self._lock:
            c = self._cols
            n = c.n
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(c.lengths[:n], out=offsets[1:])
            keys = c.keys[:n].astype(np.float64)
            keys[keys == NO_KEY] = np.nan
            return OutputRecords(
                arrival_ts=c.arrival[:n].copy(),
                offsets=offsets,
                ids=c.ids[: c.m].copy(),
                keys=keys,
                window_start=c.wstart[:n].copy(),
                window_end=c.wend[:n].copy(),
                topic=np.asarray(self.topics, dtype=object)[c.topic[:n]],
                values=c.values[:n].copy() if self.reader.has_amount else None,
            )
