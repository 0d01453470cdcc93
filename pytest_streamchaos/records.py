"""The recorded data of one run: what went in, what came out, and what happened in between.

Next to the bottom of the package's import graph: it imports only :mod:`pytest_streamchaos.events` (the
timeline's kinds and events, re-exported here), so every layer (``workload``, ``observe``, ``faults``,
``spark.launcher``, ``runner``, ``analysis``) can use these types without importing the analysis.

This is the contract between the recording side (``workload`` generator, ``observe`` collector and
Spark progress capture, ``faults`` timeline) and the pure ``analysis`` code. Columns are NumPy
arrays so that validation and metrics stay vectorised on millions of records.

All times are float seconds on one clock (``time.time()`` of the pytest process, which runs both the
generator and the collector).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from pytest_streamchaos.events import Kind, TimelineEvent

#: The timeline ``kind`` the fault timeline records when a fault takes effect (:attr:`Kind.FAULT_INJECTED`,
#: kept here for code written against it); :class:`TimelineEvent` and the kinds live in
#: :mod:`pytest_streamchaos.events`.
FAULT_INJECTED = Kind.FAULT_INJECTED


@dataclass
class SentRecords:
    """Input records the broker acknowledged (the ground truth's raw material).

    ``ids`` are unique int64 ids; ``keys`` the record keys (int64 key numbers, the JSON key is
    ``"k<n>"``); ``event_ts`` the event time and ``send_ts`` the broker-acknowledged send time.
    ``poison`` marks malformed records that a job is expected to reject. ``annotations`` holds
    per-record numbers computed at send time from a record factory's output
    (``Generator(annotate={name: fn})``, float64 columns aligned with ``ids``), e.g. how many outputs
    an input fans out to, or the amount it adds to an aggregate. ``partition`` / ``offset``: where
    the broker stored each record (from its acknowledgement), which lets Spark's own progress
    (offset ranges per micro-batch) say when a record was processed.
    """

    ids: np.ndarray
    keys: np.ndarray
    event_ts: np.ndarray
    send_ts: np.ndarray
    poison: np.ndarray | None = None
    annotations: dict[str, np.ndarray] = field(default_factory=dict)
    partition: np.ndarray | None = None
    offset: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])


@dataclass
class OutputRecords:
    """Output records read from the output topic, in arrival order.

    The ids of output ``i`` are ``ids[offsets[i]:offsets[i + 1]]`` (CSR layout: one id for a
    stateless output, the ``ids`` list of an aggregate -- a list, so double counts stay visible).
    ``keys``/``window_start``/``window_end`` are filled for keyed / windowed outputs (NaN or None
    otherwise); ``topic`` tells a side output (e.g. late events) from the main one. ``values`` is the
    numeric result an aggregate output reports (a count or a sum; NaN: none), for
    :class:`~pytest_streamchaos.analysis.aggregate.AggregateOracle`; such outputs usually carry no ids.
    """

    arrival_ts: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    keys: np.ndarray | None = None
    window_start: np.ndarray | None = None
    window_end: np.ndarray | None = None
    topic: np.ndarray | None = None
    values: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.arrival_ts.shape[0])

    def lengths(self) -> np.ndarray:
        """Number of ids carried by each output."""
        return np.diff(self.offsets)

    def output_of_id(self) -> np.ndarray:
        """Index of the output each entry of the flat ``ids`` column belongs to."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.lengths())

    @classmethod
    def from_lists(
        cls,
        arrival_ts: list[float],
        ids: list[list[int]],
        **columns: Any,
    ) -> OutputRecords:
        """Build from Python lists (``ids`` is one list of input ids per output)."""
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.fromiter((i for x in ids for i in x), dtype=np.int64, count=int(offsets[-1]))
        cols = {k: (None if v is None else np.asarray(v)) for k, v in columns.items()}
        return cls(np.asarray(arrival_ts, dtype=np.float64), offsets, flat, **cols)


class SourceProgress(TypedDict, total=False):
    """One source of a micro-batch's progress (Spark's ``SourceProgress`` JSON). Its offsets are the source's own
    JSON (Kafka's: topic -> partition -> offset), so they stay arbitrary."""

    description: str
    startOffset: Any
    endOffset: Any
    latestOffset: Any
    numInputRows: int
    inputRowsPerSecond: float
    processedRowsPerSecond: float


class SinkProgress(TypedDict, total=False):
    """A micro-batch's sink (Spark's ``SinkProgress`` JSON)."""

    description: str
    numOutputRows: int


class BatchProgress(TypedDict, total=False):
    """One micro-batch: Spark's ``StreamingQueryProgress`` JSON as its event log carries it (the derived totals
    added, source offsets parsed: :mod:`pytest_streamchaos.observe.progress`), plus ``t_start`` / ``t_end`` (epoch
    seconds of its trigger and its end) and ``app_id`` (the driver launch that ran it)."""

    id: str
    runId: str
    name: str | None
    timestamp: str
    batchId: int
    batchDuration: int
    numInputRows: int
    inputRowsPerSecond: float
    processedRowsPerSecond: float
    durationMs: dict[str, int]
    eventTime: dict[str, str]
    stateOperators: list[dict[str, Any]]
    sources: list[SourceProgress]
    sink: SinkProgress
    observedMetrics: dict[str, Any]
    t_start: float
    t_end: float
    app_id: str


@dataclass
class Trace:
    """Everything recorded for one run; the input of every verdict and metric."""

    sent: SentRecords
    outputs: OutputRecords
    #: Spark StreamingQueryProgress dicts, one per micro-batch, in order.
    batches: list[BatchProgress] = field(default_factory=list)
    timeline: list[TimelineEvent] = field(default_factory=list)
    #: phase boundaries on the run clock: warmup_end, load_end, drain_end.
    phases: dict[str, float] = field(default_factory=dict)
    #: the job's trigger interval in seconds (the normal gap between micro-batches).
    trigger_seconds: float = 1.0
    #: records flow out while a batch runs (real-time mode's long-running tasks): Spark's progress comes once
    #: per checkpoint interval, which is then not the output's pace
    continuous: bool = False

    def fault_times(self, kinds: tuple[str, ...] = (FAULT_INJECTED,)) -> np.ndarray:
        """Sorted times of the timeline events whose ``kind`` is one of ``kinds``."""
        return np.sort(np.array([e.t for e in self.timeline if e.kind in kinds], dtype=np.float64))


def concat_outputs(parts: list[OutputRecords]) -> OutputRecords:
    """Outputs of several sinks as one stream, in arrival order (CSR ids kept aligned)."""
    parts = [p for p in parts if p is not None]
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return OutputRecords(np.zeros(0), np.zeros(1, np.int64), np.zeros(0, np.int64))
    arrival = np.concatenate([p.arrival_ts for p in parts])
    ids_per = [[p.ids[p.offsets[i]:p.offsets[i + 1]].tolist() for i in range(len(p))] for p in parts]
    flat_rows = [row for rows in ids_per for row in rows]

    def col(name: str, fill: object) -> np.ndarray:
        return np.concatenate([getattr(p, name) if getattr(p, name) is not None
                               else np.full(len(p), fill, dtype=object if fill is None else np.float64)
                               for p in parts])

    order = np.argsort(arrival, kind="stable")
    cols = {"keys": col("keys", np.nan), "window_start": col("window_start", np.nan),
            "window_end": col("window_end", np.nan), "topic": col("topic", None)}
    return OutputRecords.from_lists(arrival[order].tolist(), [flat_rows[i] for i in order],
                                    **{k: v[order] for k, v in cols.items()})


def join_sent(parts: list[SentRecords]) -> SentRecords:
    """The ground truth of a job fed the same ids on several topics (a stream-stream join): an id
    counts once it was acknowledged on every topic, and its send time is the latest of them (the
    record that completes the join)."""
    if len(parts) == 1:
        return parts[0]
    common = parts[0].ids
    for p in parts[1:]:
        common = np.intersect1d(common, p.ids, assume_unique=True)
    first = parts[0]
    idx0 = np.searchsorted(first.ids, common)
    send = np.max(np.stack([p.send_ts[np.searchsorted(p.ids, common)] for p in parts]), axis=0)
    poison = np.zeros(common.shape[0], np.bool_)
    for p in parts:
        if p.poison is not None:
            poison |= p.poison[np.searchsorted(p.ids, common)]
    return SentRecords(ids=common, keys=first.keys[idx0], event_ts=first.event_ts[idx0], send_ts=send,
                       poison=poison, partition=None if first.partition is None else first.partition[idx0],
                       offset=None if first.offset is None else first.offset[idx0])
