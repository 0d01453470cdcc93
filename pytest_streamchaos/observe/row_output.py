"""What the outputs that are rows in files share: a job's files (:mod:`.file_sink`) and its Delta tables
(:mod:`.delta_sink`) are read by polling, a unit at a time -- a data file the sink's log or Hadoop's commit
protocol committed, a data file a Delta version added -- and a unit can stop counting later (a replay
overwrote its directory; a Delta version removed it).

:class:`RowOutput` keeps, per unit, when it became visible and the input ids of each of its rows, with the
query interface of :class:`~pytest_streamchaos.observe.collector.Collector` that a run uses (``start``,
``stop``, ``count``, ``ids_seen``, ``last_arrival``, ``outputs()``, ...). Ids of a unit that stopped
counting keep the time they first showed: a row that a later unit carries again (a rewritten file, a
MERGE's copy of the rows it did not change) arrived when it first did. The input ids of a row come from
``ids``: a field path (``"InvoiceNumber"``, ``"value.ids"``) or a callable ``(row: dict, None) -> ids``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from pytest_streamchaos.observe.seen_names import SAMPLE, Sampled
from pytest_streamchaos.records import OutputRecords
from pytest_streamchaos.usercode import UserCodeError, name_of

IdSpec = str | Callable[[Any, Any], Sequence[int]]


class RowOutput:
    """Polls (:meth:`poll`, a subclass's) in a thread and keeps the rows of every unit that counts.

    A callable ``ids`` that raises is the test's bug, not a malformed row: :attr:`failure` keeps the first
    (a :class:`~pytest_streamchaos.usercode.UserCodeError` naming it, ``what`` saying whose it is); a
    subclass may put there an error of the output itself that the run must stop on."""

    def __init__(self, name: str, ids: IdSpec, poll_s: float, what: str | None) -> None:
        self.name = name
        self._ids = ids
        self._what = what or f"outputs[{self.name!r}] id reader"
        self.failure: Exception | None = None
        self._poll_s = poll_s
        self._files: dict[str, tuple[float, list[list[int]]]] = {}  #: unit -> (arrival, ids per row)
        self._seen: set[int] = set()
        #: input id -> when it first showed, for ids of units that stopped counting
        self._first_shown: dict[int, float] = {}
        self.overwritten = 0  #: units read and later gone (overwritten, removed by a version)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.malformed = 0
        self.malformed_samples: list[str] = []
        #: the first rows read, readable or not, with how many input ids each gave (the run checks the test's id
        #: spec on them: :mod:`~pytest_streamchaos.observe.seen_names`)
        self.first_records: list[Sampled] = []
        self.errors: list[str] = []
        self.lost_to_retention = 0
        self.retention_gaps: list[dict[str, Any]] = []
        self.last_arrival: float | None = None
        #: when the newest output was written, by a stamp the writer made (None: no such stamp)
        self.last_written: float | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> RowOutput:
        label = self.name.rstrip("/").rsplit("/", 1)[-1]
        self._thread = threading.Thread(target=self._run, name=f"streamchaos-rows-{label}", daemon=True)
        self._thread.start()
        return self

    def stop(self, drain_timeout: float = 10.0) -> bool:
        """Stop polling after one last full read."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(drain_timeout)
        self.poll(fresh=True)
        return True

    def poll(self, fresh: bool = False) -> None:
        """Read what became visible since the last poll (``fresh``: look at everything again)."""
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.poll()
            except Exception as e:  # a broken file is a finding, not a crash of the run
                self._note_error(f"{type(e).__name__}: {e}")

    # -- state ---------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        with self._lock:
            return sum(len(rows) for _, rows in self._files.values())

    @property
    def ids_seen(self) -> int:
        return len(self._seen)

    def has_seen(self, ids: Any) -> bool:
        return all(int(i) in self._seen for i in np.atleast_1d(ids))

    def outputs(self) -> OutputRecords:
        """The rows of every unit that counts now, at the time each became visible (ids that a unit gone
        since showed earlier keep that earlier time)."""
        with self._lock:
            arrival, ids = [], []
            for t, rows in self._files.values():
                for row in rows:
                    shown = [self._first_shown[i] for i in row if i in self._first_shown]
                    arrival.append(min([t, *shown]))
                    ids.append(list(row))
        order = np.argsort(np.asarray(arrival, dtype=np.float64), kind="stable")
        return OutputRecords.from_lists([arrival[i] for i in order], [ids[i] for i in order],
                                        topic=np.asarray([self.name] * len(arrival), dtype=object))

    # -- what a subclass's poll calls ----------------------------------------------------------
    def _counts(self, unit: str) -> bool:
        return unit in self._files

    def _record(self, unit: str, t: float, rows: Iterable[Any], extra: dict[str, Any] | None = None) -> None:
        """Unit ``unit`` is output from ``t`` on, with ``rows`` (``extra``: columns to add to each row, e.g.
        a partition directory's)."""
        got: list[list[int]] = []
        for row in rows:
            if extra and isinstance(row, dict):
                row = {**extra, **row}
            try:
                got.append(self._row_ids(row))
            except UserCodeError as e:  # the test's reader failed: the run stops on the first
                self.failure = self.failure or e
            except (ValueError, KeyError, TypeError) as e:
                self.malformed += 1
                if len(self.malformed_samples) < 20:
                    self.malformed_samples.append(f"{row!r}: {e}")
                if len(self.first_records) < SAMPLE:
                    self.first_records.append(Sampled(row, None, None, f"{type(e).__name__}: {e}"))
                continue
            if len(self.first_records) < SAMPLE:
                self.first_records.append(Sampled(row, None, len(got[-1])))
        with self._lock:
            self._files[unit] = (t, got)
        for ids in got:
            self._seen.update(ids)
        if got:
            self.last_arrival = max(self.last_arrival or 0.0, t)

    def _unreadable(self, unit: str, t: float, why: str) -> None:
        """Unit ``unit`` cannot be read: noted once, its rows not counted."""
        self._note_error(f"cannot read {unit.rsplit('/', 1)[-1]}: {why}")
        with self._lock:
            self._files[unit] = (t, [])

    def _forget(self, unit: str) -> None:
        """A unit read earlier no longer counts (overwritten, removed): its rows go, their ids keep the time
        they first showed."""
        with self._lock:
            t, rows = self._files.pop(unit)
            for row in rows:
                for i in row:
                    self._first_shown[i] = min(self._first_shown.get(i, t), t)
        self.overwritten += 1

    def _row_ids(self, row: object) -> list[int]:
        if not callable(self._ids):
            return row_ids(row, self._ids)
        try:
            got = self._ids(row, None)
        except Exception as e:
            raise UserCodeError(f"{self._what} {name_of(self._ids)}", e, f"row {str(row)[:80]}") from e
        return [int(i) for i in got]

    def _note_error(self, msg: str) -> None:
        if len(self.errors) < 100:
            self.errors.append(msg)


def row_ids(row: Any, spec: IdSpec) -> list[int]:
    """The input ids of one output row (see the module docstring)."""
    if callable(spec):
        return [int(i) for i in spec(row, None)]
    v = row
    for part in spec.split("."):
        if isinstance(v, str):
            v = json.loads(v)
        if not isinstance(v, dict) or part not in v:
            raise KeyError(f"no field {spec!r}")
        v = v[part]
    values = v if isinstance(v, list) else [v]
    return [_as_int(x) for x in values]


def _as_int(v: object) -> int:
    if isinstance(v, bool):
        raise ValueError(f"id is a boolean: {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v)
    raise ValueError(f"id is not an integer: {v!r}")
