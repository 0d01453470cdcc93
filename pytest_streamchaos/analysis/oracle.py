"""Oracles: which input ids each expected output should contain (PGVal's ground truth).

An oracle turns the sent records into *expected pairs* ``(group, sent row)``: "the input in row
``r`` of :class:`~pytest_streamchaos.records.SentRecords` must appear in the output of group
``g``" -- and tells, for every recorded output, which group it is (:meth:`Oracle.assign`). Groups are
int64 codes so the validator stays vectorised; :meth:`Expected.label` renders one for messages.

Three oracles cover the usual jobs:

- :class:`IdentityOracle` -- stateless jobs: every kept input appears exactly once in the main output
  (or ``copies`` times, for jobs that fan an input out into several outputs).
- :class:`TumblingWindowOracle` -- event-time tumbling windows (per key or global) with a watermark;
  only finalized windows count, late events may go to a side output.
- :class:`CustomOracle` -- anything else: a function computes ``expected key -> ids`` and another maps
  each output to its expected key.

Jobs whose outputs carry no ids (counts / sums per key and window) are validated per aggregate by
:class:`~pytest_streamchaos.analysis.aggregate.AggregateOracle`.

Every oracle takes ``filter`` (a vectorised predicate on the sent records selecting ids the job
drops on purpose: they are expected *not* to appear) and ``drop_poison`` (poison records are
expected to be rejected, default True).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..records import OutputRecords, SentRecords
from .guarantee import GuaranteeReport, IdIndex
from .spelling import did_you_mean

#: :meth:`Oracle.assign` codes for outputs that are not an expected output's group.
IGNORE = -1  #: output does not count (e.g. a window not finalized at the end of the run, another topic)
UNKNOWN = -2  #: output matches no expected output: every id in it is incorrect
SIDE = -3  #: side output (e.g. late events): each id counts toward its own expected output
#: the annotation ``IdentityOracle(copies=callable)`` fills
COPIES = "IdentityOracle(copies=)"

Predicate = Callable[[SentRecords], np.ndarray]
#: A per-record number from the ground truth: a constant, the name of a ``SentRecords.annotations``
#: column, or a callable ``(record) -> number`` given each input record as the record factory made it
#: (the one convention of :mod:`pytest_streamchaos.usercode`). The analysis never calls it: it runs
#: when the record is sent (the run passes :meth:`Oracle.record_callables` to the generator's
#: ``annotate``) and its numbers are read here from the annotation it fills.
PerRecord = float | str | Callable[[Any], float]


def per_record(spec: PerRecord, sent: SentRecords, what: str, annotation: str = "") -> np.ndarray:
    """Evaluate a :data:`PerRecord` spec to one finite float64 per sent record; a callable's numbers are
    the sent records' ``annotation`` column."""
    n = len(sent)
    if callable(spec):
        if annotation not in sent.annotations:
            raise ValueError(f"{what} is a callable (record) -> number, computed as each record is sent, but the "
                             f"sent records have no annotation {annotation!r}: chaos.run computes it; with a "
                             "Generator of your own pass annotate=oracle.record_callables()")
        spec = annotation
    if isinstance(spec, str):
        if spec not in sent.annotations:
            raise ValueError(f"{what}={spec!r}: the sent records have no annotation {spec!r} (have "
                             f"{sorted(sent.annotations)}); pass Generator(annotate={{{spec!r}: fn}})")
        v = np.asarray(sent.annotations[spec], dtype=np.float64)
    else:
        v = np.full(n, float(spec))
    if v.shape != (n,):
        raise ValueError(f"{what} gave shape {v.shape}, expected one value per sent record ({n},)")
    if not np.isfinite(v).all():
        bad = np.asarray(sent.ids)[~np.isfinite(v)][:5].tolist()
        raise ValueError(f"{what} is not a finite number for ids {bad}")
    return v


@dataclass
class Expected:
    """The oracle's answer: expected ``(group, row)`` pairs, row = index into the sent records.

    ``late`` marks pairs whose input arrived after its output was finalized (window oracles);
    ``label`` renders a group code for humans; ``copies`` (None: 1 each) is how many times each pair
    is expected to appear (fan-out jobs, ``IdentityOracle(copies=...)``).
    """

    rows: np.ndarray
    groups: np.ndarray
    n_sent: int
    late: np.ndarray | None = None
    label: Callable[[int], str] = field(default=lambda g: f"output#{g}", repr=False)
    copies: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def single_membership(self) -> bool:
        """True when every sent row is expected in at most one output (the fast validation path)."""
        if len(self) == 0:
            return True
        return bool(np.bincount(self.rows, minlength=self.n_sent).max() <= 1)


class Oracle:
    """Base class; subclasses implement :meth:`_expected` and :meth:`assign`.

    ``topic``: the main output topic (None: every output not on ``side_topic``); outputs on other
    topics are ignored. ``side_topic``: a side output whose ids count toward their own expected
    output (PGVal's Algorithm 2 for late events).
    """

    def __init__(
        self,
        filter: Predicate | None = None,
        drop_poison: bool = True,
        topic: str | None = None,
        side_topic: str | None = None,
    ) -> None:
        self.filter = filter
        self.drop_poison = drop_poison
        self.topic = topic
        self.side_topic = side_topic

    # -- public API -----------------------------------------------------------------------------
    def bound(self, topic: str | None = None, side_topic: str | None = None) -> Oracle:
        """This oracle for a run whose main output is ``topic`` and late side output ``side_topic``: a
        copy with the topics it does not name itself filled in (itself when nothing changes). The
        run's checkers bind the test's oracle so, never changing it: one oracle serves several runs."""
        fill_topic = self.topic is None and topic is not None
        fill_side = self.side_topic is None and side_topic is not None
        if not (fill_topic or fill_side):
            return self
        twin = copy.copy(self)
        if fill_topic:
            twin.topic = topic
        if fill_side:
            twin.side_topic = side_topic
        return twin

    def keep_mask(self, sent: SentRecords) -> np.ndarray:
        """Rows the job is expected to process (not filtered, not poison)."""
        keep = np.ones(len(sent), dtype=bool)
        if self.drop_poison and sent.poison is not None:
            keep &= ~np.asarray(sent.poison, dtype=bool)
        if self.filter is not None:
            drop = np.asarray(self.filter(sent), dtype=bool)
            if drop.shape != keep.shape:
                raise ValueError(
                    f"oracle filter returned shape {drop.shape}, expected one bool per sent record "
                    f"({keep.shape}); the filter must be vectorised: SentRecords -> bool array (True = dropped)"
                )
            keep &= ~drop
        return keep

    def expected(self, sent: SentRecords) -> Expected:
        """Expected pairs for these sent records."""
        return self._expected(sent, self.keep_mask(sent))

    def assign(self, outputs: OutputRecords, sent: SentRecords, expected: Expected) -> np.ndarray:
        """Group code per output (or ``IGNORE`` / ``UNKNOWN`` / ``SIDE``)."""
        raise NotImplementedError

    def record_callables(self) -> dict[str, Callable[[Any], float]]:
        """The oracle's per-record callables ``(record) -> number`` by the annotation each fills (e.g.
        ``{"IdentityOracle(copies=)": fn}``): the generator calls them on every record it sends
        (``Generator(annotate=...)``; ``chaos.run`` does it)."""
        return {}

    def annotation_names(self) -> dict[str, str]:
        """The ground-truth annotations the oracle reads by name, by the argument that names them (e.g.
        ``{"IdentityOracle(copies=)": "lines"}``): ``chaos.run`` checks each is one the test's ``annotate=``
        gives, before anything starts (docs/names.md)."""
        return {}

    def output_fields(self) -> dict[str, str | None]:
        """The fields of the job's output records the oracle reads, by the argument that names them (a JSON path,
        dots for nesting; None: the default window, a ``window`` object or ``window_start`` / ``window_end``):
        the run refuses one that none of the first records has (docs/names.md)."""
        return {}

    def custom_report(self, sent: SentRecords, outputs: OutputRecords) -> GuaranteeReport | None:
        """An oracle that does not work per id appearance (aggregates) validates here; None (the
        default) means :func:`~pytest_streamchaos.analysis.validate.validate`'s per-record path."""
        return None

    def reference_send_ts(self, sent: SentRecords, outputs: OutputRecords, rows: np.ndarray) -> np.ndarray:
        """Send time each output's latency is measured from (NaN: none).

        Default (stateless / custom): the latest send time among the output's known input ids, i.e.
        the input that completed it. ``rows`` is the sent row of every flat output id (-1 unknown).
        """
        return latest_send_ts(sent, outputs, rows)

    # -- helpers for subclasses -----------------------------------------------------------------
    def _topic_codes(self, outputs: OutputRecords) -> tuple[np.ndarray, np.ndarray]:
        """(is_side, is_other) masks from the outputs' topic column."""
        n = len(outputs)
        if outputs.topic is None:
            return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        topic = np.asarray(outputs.topic).astype(str)
        side = topic == self.side_topic if self.side_topic is not None else np.zeros(n, dtype=bool)
        other = (topic != self.topic) & ~side if self.topic is not None else np.zeros(n, dtype=bool)
        return side, other

    def _expected(self, sent: SentRecords, keep: np.ndarray) -> Expected:
        raise NotImplementedError


def _send_order(sent: SentRecords) -> np.ndarray:
    """Rows in send order (the generator records them so: skip the sort when already ordered)."""
    ts = np.asarray(sent.send_ts)
    if ts.size < 2 or bool(np.all(ts[1:] >= ts[:-1])):
        return np.arange(ts.size)
    return np.argsort(ts, kind="stable")


def _is_identity(order: np.ndarray) -> bool:
    return bool(np.array_equal(order, np.arange(order.size)))


def _key_send_order(kidx: np.ndarray, send_order: np.ndarray) -> np.ndarray:
    """Rows ordered by key, then send order; ``kidx`` are non-negative key indexes."""
    k = kidx[send_order]
    # a stable sort of 16-bit ints is a radix sort in NumPy: much faster than lexsort
    k = k.astype(np.int16) if k.size and int(k.max()) < 2**15 else k
    return send_order[np.argsort(k, kind="stable")]


def latest_send_ts(sent: SentRecords, outputs: OutputRecords, rows: np.ndarray) -> np.ndarray:
    """Per output: max send time among its known ids (NaN for outputs with none)."""
    n = len(outputs)
    ref = np.full(n, np.nan)
    if n == 0 or rows.size == 0:
        return ref
    ts = np.where(rows >= 0, np.asarray(sent.send_ts, dtype=np.float64)[np.maximum(rows, 0)], -np.inf)
    lengths = outputs.lengths()
    nonempty = lengths > 0
    starts = outputs.offsets[:-1][nonempty]
    # reduceat over the non-empty segments only (it misbehaves on empty ones).
    m = np.maximum.reduceat(ts, starts) if starts.size else np.empty(0)
    m[np.isneginf(m)] = np.nan
    ref[nonempty] = m
    return ref


class IdentityOracle(Oracle):
    """Stateless jobs: each kept input id must appear exactly once in the main output.

    Ids selected by ``filter`` (and poison records when ``drop_poison``) are expected *not* to
    appear; seeing one is an incorrect output.

    ``copies``: jobs that legitimately emit several outputs per input (``explode`` of an invoice
    into its line items, fan-out). The number of appearances expected per input: a constant, a
    callable ``(record) -> int`` given each input record as the record factory made it
    (``copies=lambda rec: len(rec["Items"])``), or the name of a ground-truth annotation
    (``annotate={"lines": lambda rec: len(rec["Items"])}`` then ``copies="lines"``). A callable runs
    when the record is sent (:meth:`record_callables`), so the analysis stays pure.
    Fewer appearances than ``copies`` make the id *lost* (``GuaranteeReport.missing_copies`` counts
    the missing appearances); more are *duplicates* (the extra appearances). An input with 0
    copies is expected not to appear (like ``filter``).
    """

    def __init__(self, filter: Predicate | None = None, drop_poison: bool = True, topic: str | None = None,
                 side_topic: str | None = None, *, copies: PerRecord | None = None) -> None:
        super().__init__(filter=filter, drop_poison=drop_poison, topic=topic, side_topic=side_topic)
        self.copies = copies

    def record_callables(self) -> dict[str, Callable[[Any], float]]:
        return {COPIES: self.copies} if callable(self.copies) else {}

    def annotation_names(self) -> dict[str, str]:
        return {COPIES: self.copies} if isinstance(self.copies, str) else {}

    def _expected(self, sent: SentRecords, keep: np.ndarray) -> Expected:
        copies = None
        if self.copies is not None:
            c = per_record(self.copies, sent, "IdentityOracle copies", COPIES)
            if (c < 0).any() or not np.array_equal(c, np.round(c)):
                raise ValueError("IdentityOracle copies must be non-negative integers")
            keep = keep & (c > 0)
            copies = c.astype(np.int64)
        rows = np.flatnonzero(keep).astype(np.int64)
        return Expected(rows, np.zeros(rows.shape, dtype=np.int64), len(sent), label=lambda g: "main output",
                        copies=None if copies is None else copies[rows])

    def assign(self, outputs: OutputRecords, sent: SentRecords, expected: Expected) -> np.ndarray:
        side, other = self._topic_codes(outputs)
        g = np.zeros(len(outputs), dtype=np.int64)
        g[side] = SIDE
        g[other] = IGNORE
        return g


class TumblingWindowOracle(Oracle):
    """Event-time tumbling windows ``[origin + k*size, origin + (k+1)*size)``, per key or global.

    Expected output per (key, window): the ids whose ``event_ts`` falls in the window. Only
    *finalized* windows count: ``end <= max event time seen - watermark_seconds`` at the end of the
    run; outputs of other windows are ignored. An output's window comes from
    ``OutputRecords.keys``/``window_start``.

    Late events: an input is late when, in send order, the watermark had already passed its window
    end when it was sent (``end <= max event_ts of earlier inputs - watermark_seconds``; Spark moves
    its watermark per micro-batch, so this is the earliest it can be late). Ids seen on
    ``late_topic`` count toward their window (PGVal Algorithm 2: a duplicate if also in the window);
    since Spark's watermark lags, a "late" id may also legitimately show up in the window itself.

    Latency reference (:meth:`reference_send_ts`): the send time of the first input (in send
    order) of the same key (``closer="key"``, PGVal) or of any key (``closer="any"``, Spark's
    global watermark) whose event time is at least ``window end + watermark_seconds`` -- the input
    that lets the window close.
    """

    def __init__(
        self,
        size_seconds: float,
        by_key: bool = True,
        watermark_seconds: float = 0.0,
        late_topic: str | None = None,
        origin: float = 0.0,
        closer: str = "key",
        filter: Predicate | None = None,
        drop_poison: bool = True,
        topic: str | None = None,
        allowed_lateness: float | None = None,
    ) -> None:
        if not size_seconds > 0:
            raise ValueError(f"TumblingWindowOracle: size_seconds must be > 0, got {size_seconds!r}")
        if closer not in ("key", "any"):
            raise ValueError(f"TumblingWindowOracle(closer={closer!r}){did_you_mean(str(closer), ('key', 'any'))}: use "
                             "'key' or 'any'")
        super().__init__(filter=filter, drop_poison=drop_poison, topic=topic, side_topic=late_topic)
        self.size = float(size_seconds)
        self.by_key = by_key
        #: ``allowed_lateness`` is an alias (Flink's word for the same delay).
        self.watermark = float(allowed_lateness if allowed_lateness is not None else watermark_seconds)
        self.origin = float(origin)
        self.closer = closer

    def output_fields(self) -> dict[str, str | None]:
        return {"window": None}  # the window each output reports (OutputRecords.window_start)

    # window index of a time
    def _win(self, ts: np.ndarray) -> np.ndarray:
        return np.floor((np.asarray(ts, dtype=np.float64) - self.origin) / self.size).astype(np.int64)

    def _keys(self, keys: np.ndarray | None, n: int, what: str) -> np.ndarray:
        if not self.by_key:
            return np.zeros(n, dtype=np.int64)
        if keys is None:
            raise ValueError(
                f"TumblingWindowOracle(by_key=True) needs {what}.keys; record keys, or use by_key=False"
            )
        return np.asarray(keys)

    def _final_watermark(self, sent: SentRecords) -> float:
        ev = np.asarray(sent.event_ts, dtype=np.float64)
        if sent.poison is not None:
            ev = ev[~np.asarray(sent.poison, dtype=bool)]
        return float(ev.max()) - self.watermark if ev.size else -np.inf

    def _expected(self, sent: SentRecords, keep: np.ndarray) -> Expected:
        n = len(sent)
        keys = self._keys(sent.keys, n, "SentRecords").astype(np.int64)
        w = self._win(sent.event_ts)
        end = self.origin + (w + 1) * self.size
        final = end <= self._final_watermark(sent)
        # late: the watermark (from inputs sent before this one) already passed this window's end
        order = _send_order(sent)
        in_order = bool(n == 0 or (order[0] == 0 and order[-1] == n - 1 and _is_identity(order)))
        ev = np.asarray(sent.event_ts, dtype=np.float64)
        ev_sorted = ev if in_order else ev[order]
        prev_max = np.empty(n)
        if n:
            prev_max[0] = -np.inf
            np.maximum.accumulate(ev_sorted[:-1], out=prev_max[1:])
        prev_max -= self.watermark
        if in_order:
            late = end <= prev_max
        else:
            late = np.empty(n, dtype=bool)
            late[order] = end[order] <= prev_max
        sel = keep & final
        rows = np.flatnonzero(sel).astype(np.int64)
        kmin, _kspan, wmin, wspan = self._encoding(keys, w)
        groups = (keys[rows] - kmin) * wspan + (w[rows] - wmin)

        def label(g: int, kmin=kmin, wmin=wmin, wspan=wspan) -> str:
            k, wi = divmod(int(g), wspan)
            start = self.origin + (wi + wmin) * self.size
            win = f"window [{start:.3f}, {start + self.size:.3f})"
            return f"key {k + kmin} {win}" if self.by_key else win

        return Expected(rows, groups.astype(np.int64), n, late=late[rows], label=label)

    @staticmethod
    def _encoding(keys: np.ndarray, w: np.ndarray) -> tuple[int, int, int, int]:
        """(kmin, kspan, wmin, wspan): group code = (key - kmin) * wspan + (window - wmin)."""
        if keys.size == 0:
            return 0, 1, 0, 1
        kmin, wmin = int(keys.min()), int(w.min())
        kspan, wspan = int(keys.max()) - kmin + 1, int(w.max()) - wmin + 1
        if kspan * wspan >= 2**62:
            raise ValueError(
                f"TumblingWindowOracle: key range {kspan} x window range {wspan} too large to encode; "
                "key numbers should be small integers"
            )
        return kmin, kspan, wmin, wspan

    def assign(self, outputs: OutputRecords, sent: SentRecords, expected: Expected) -> np.ndarray:
        skeys = self._keys(sent.keys, len(sent), "SentRecords").astype(np.int64)
        kmin, kspan, wmin, wspan = self._encoding(skeys, self._win(sent.event_ts))
        n = len(outputs)
        side, other = self._topic_codes(outputs)
        g = np.full(n, UNKNOWN, dtype=np.int64)
        main = ~side & ~other
        if outputs.window_start is None:
            raise ValueError("TumblingWindowOracle needs OutputRecords.window_start (the window of each output)")
        start = np.asarray(outputs.window_start, dtype=np.float64)
        keys = self._keys(outputs.keys, n, "OutputRecords")
        keys_f = np.asarray(keys, dtype=np.float64)
        valid = main & np.isfinite(start) & np.isfinite(keys_f)
        wf = (start - self.origin) / self.size
        wi = np.rint(np.where(np.isfinite(wf), wf, 0)).astype(np.int64)
        aligned = np.abs(wf - wi) < 1e-6
        ki = np.where(np.isfinite(keys_f), keys_f, 0).astype(np.int64)
        in_range = (ki >= kmin) & (ki < kmin + kspan) & (wi >= wmin) & (wi < wmin + wspan)
        ok = valid & aligned & in_range
        g[ok] = (ki[ok] - kmin) * wspan + (wi[ok] - wmin)
        # a window not finalized at the end of the run does not count, whatever it holds
        end = self.origin + (wi + 1) * self.size
        unfinal = valid & aligned & (end > self._final_watermark(sent))
        g[unfinal] = IGNORE
        g[side] = SIDE
        g[other] = IGNORE
        return g

    def reference_send_ts(self, sent: SentRecords, outputs: OutputRecords, rows: np.ndarray) -> np.ndarray:
        n = len(outputs)
        if outputs.window_end is None and outputs.window_start is None:
            return latest_send_ts(sent, outputs, rows)
        ends = (
            np.asarray(outputs.window_end, dtype=np.float64)
            if outputs.window_end is not None
            else np.asarray(outputs.window_start, dtype=np.float64) + self.size
        )
        ref = latest_send_ts(sent, outputs, rows)  # fallback for outputs without a window (side output)
        has_win = np.isfinite(ends)
        if len(sent) == 0 or not has_win.any():
            return ref
        by_key = self.by_key and self.closer == "key"
        skeys = np.asarray(sent.keys, dtype=np.int64) if by_key else np.zeros(len(sent), dtype=np.int64)
        okeys = (
            np.asarray(outputs.keys, dtype=np.float64) if by_key and outputs.keys is not None else np.zeros(n)
        )
        ev = np.asarray(sent.event_ts, dtype=np.float64)
        ev0 = float(ev.min())
        span = float(ev.max()) - ev0 + 1.0
        kmin = int(skeys.min())
        kidx = skeys - kmin
        order = _key_send_order(kidx, _send_order(sent))
        # per-key running max of event time, made globally monotone by a per-key offset
        run = np.maximum.accumulate(kidx[order] * span + (ev[order] - ev0))
        send_sorted = np.asarray(sent.send_ts, dtype=np.float64)[order]
        key_sorted = kidx[order]
        ok = has_win & np.isfinite(okeys)
        ok_idx = np.flatnonzero(ok)
        ok_k = okeys[ok_idx].astype(np.int64) - kmin
        thr = ends[ok_idx] + self.watermark - ev0
        in_keys = (ok_k >= 0) & (ok_k <= int(kidx.max())) & (thr <= span - 1.0)
        q = ok_k * span + np.clip(thr, 0.0, span - 1.0)
        pos = np.searchsorted(run, q, side="left")
        found = in_keys & (pos < run.size)
        found[found] &= key_sorted[pos[found]] == ok_k[found]
        res = np.full(ok_idx.size, np.nan)
        res[found] = send_sorted[pos[found]]
        ref[ok_idx] = res
        return ref


class CustomOracle(Oracle):
    """User logic: ``fn(sent) -> {expected key: ids}`` and ``output_key(outputs) -> key per output``.

    ``output_key`` returns one hashable per output (``None``: ignore the output). An input id may
    be expected in several outputs (e.g. sliding windows); each (output, id) membership counts once.
    Keys are matched through a dict, so this costs one Python step per output.
    """

    def __init__(
        self,
        fn: Callable[[SentRecords], Mapping[Hashable, Any]],
        output_key: Callable[[OutputRecords], Sequence[Hashable | None]],
        filter: Predicate | None = None,
        drop_poison: bool = True,
        topic: str | None = None,
        side_topic: str | None = None,
    ) -> None:
        super().__init__(filter=filter, drop_poison=drop_poison, topic=topic, side_topic=side_topic)
        self.fn = fn
        self.output_key = output_key
        self._codes: dict[Hashable, int] = {}

    def _expected(self, sent: SentRecords, keep: np.ndarray) -> Expected:
        mapping = self.fn(sent)
        index = IdIndex(np.asarray(sent.ids))
        self._codes = {}
        rows_parts, group_parts = [], []
        for code, (key, ids) in enumerate(mapping.items()):
            self._codes[key] = code
            r = index.rows(np.asarray(ids, dtype=np.int64).ravel())
            if (r < 0).any():
                bad = np.asarray(ids, dtype=np.int64).ravel()[r < 0][:5].tolist()
                raise ValueError(f"CustomOracle: expected output {key!r} lists ids never sent: {bad}")
            rows_parts.append(np.unique(r))
            group_parts.append(np.full(rows_parts[-1].size, code, dtype=np.int64))
        rows = np.concatenate(rows_parts) if rows_parts else np.empty(0, dtype=np.int64)
        groups = np.concatenate(group_parts) if group_parts else np.empty(0, dtype=np.int64)
        sel = keep[rows]
        names = {c: k for k, c in self._codes.items()}
        return Expected(rows[sel], groups[sel], len(sent), label=lambda g: repr(names.get(int(g), g)))

    def assign(self, outputs: OutputRecords, sent: SentRecords, expected: Expected) -> np.ndarray:
        keys = self.output_key(outputs)
        if len(keys) != len(outputs):
            raise ValueError(f"CustomOracle.output_key returned {len(keys)} keys for {len(outputs)} outputs")
        codes = self._codes
        g = np.fromiter(
            (IGNORE if k is None else codes.get(k, UNKNOWN) for k in keys), dtype=np.int64, count=len(keys)
        )
        side, other = self._topic_codes(outputs)
        g[side] = SIDE
        g[other] = IGNORE
        return g
