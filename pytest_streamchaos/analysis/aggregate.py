"""Validation of jobs whose outputs are aggregates (counts / sums per key and event-time window).

Most real streaming jobs emit no input ids, e.g. ``{"window": {"start": ..., "end": ...},
"StoreID": "k3", "count": 17}``. :class:`AggregateOracle` derives the expected aggregate of every
*finalized* (key, window) from the ground truth -- with :class:`TumblingWindowOracle`'s windowing,
watermark and late-event logic -- and compares it with the value the job reported for that group:

- ``output_mode="update"`` / ``"complete"``: the *last* value emitted per group counts (a group is
  re-emitted whenever it changes; re-emitting an equal value, e.g. after a replay, is harmless);
- ``output_mode="append"``: the group is emitted once, when finalized; that value counts and every
  further emission of the group is a *duplicate* (its value counted again downstream).

A deficit is reported as *lost*, an excess (or a repeated append emission) as *duplicates*, and a
value for a group that should not exist (a finalized window without kept inputs, an unreadable
key/window) as *incorrect* -- all in input-record units: exact for ``agg="count"``; for ``"sum"`` the
amount is converted with the group's mean amount per record (an estimate). Inputs the watermark may
already have excluded (``late``) make a range acceptable: ``[sum without them, sum with them]``.

The resolution is *per aggregate, not per record*: which inputs were lost is unknown, so
``lost_ids`` / ``duplicate_ids`` stay empty and ``GuaranteeReport.wrong_groups`` names the offending
(key, window) groups instead. For the per-record series (throughput, backlog, reliability) the
lost inputs of a group are taken to be its last-sent ones, the duplicated its first-sent ones.

Pure: the outputs' values come from the collector (``OutputRecords.values``; configure it with
``Collector(..., **oracle.collector_options())``), the amounts from the ground truth.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..records import OutputRecords, SentRecords
from .guarantee import GuaranteeReport
from .oracle import IGNORE, UNKNOWN, Expected, PerRecord, Predicate, TumblingWindowOracle, per_record
from .spelling import did_you_mean

AGGS = ("count", "sum")
OUTPUT_MODES = ("update", "complete", "append")
_EMPTY_IDS = np.empty(0, np.int64)
#: the annotation ``AggregateOracle(amount=callable)`` fills
AMOUNT = "AggregateOracle(amount=)"


@dataclass
class _Groups:
    """Per (key, window) group: the expected range, what was observed, and the verdict."""

    codes: np.ndarray  # group codes (TumblingWindowOracle encoding), sorted
    e_lo: np.ndarray  # expected amount without inputs that may have been late
    e_hi: np.ndarray  # expected amount with every kept input
    n_rec: np.ndarray  # kept inputs
    unit: np.ndarray  # amount per input record (record-unit conversion)
    observed: np.ndarray  # the counted value (0 when no output)
    counted_at: np.ndarray  # arrival of the counted output (NaN: none)
    emissions: np.ndarray  # outputs of the group
    lost: np.ndarray  # records
    dup: np.ndarray  # records
    bad: np.ndarray  # records (group should not exist)


class AggregateOracle(TumblingWindowOracle):
    """Per-(key, window) aggregates over event-time tumbling windows; see the module docstring.

    Args:
        size_seconds, by_key, watermark_seconds, origin, closer, filter, drop_poison, topic: as
            :class:`TumblingWindowOracle` (``closer`` picks the latency reference).
        agg: ``"count"`` (inputs per group) or ``"sum"`` (of ``amount``).
        amount: for ``"sum"``: each input's amount -- a callable ``(record) -> number`` given each
            input record as the record factory made it (``amount=lambda rec: rec["Total"]``, run
            when the record is sent), the name of a ground-truth annotation
            (``annotate={"total": lambda rec: rec["Total"]}``), or a constant.
        output_mode: ``"update"`` / ``"complete"`` (last value counts) or ``"append"`` (one emission
            per group; more are duplicates).
        tolerance: relative tolerance of a sum comparison (``tolerance * max(1, |expected|)``).
        key_field, window_field, value_field: where the outputs hold the key (``"k<n>"`` or ``n``),
            the ``{start, end}`` window and the aggregate value (JSON paths, dots for nesting;
            ``window_field=None`` also reads ``window_start``/``window_end``; ``value_field``
            defaults to ``agg``). Only used to configure the collector (:meth:`collector_options`).
    """

    def __init__(
        self,
        size_seconds: float,
        agg: str = "count",
        amount: PerRecord | None = None,
        by_key: bool = True,
        watermark_seconds: float = 0.0,
        output_mode: str = "update",
        origin: float = 0.0,
        closer: str = "key",
        filter: Predicate | None = None,
        drop_poison: bool = True,
        topic: str | None = None,
        tolerance: float = 1e-9,
        key_field: str | None = "key",
        window_field: str | None = None,
        value_field: str | None = None,
    ) -> None:
        for arg, value, choices in (("agg", agg, AGGS), ("output_mode", output_mode, OUTPUT_MODES)):
            if value not in choices:
                raise ValueError(f"AggregateOracle({arg}={value!r}){did_you_mean(str(value), choices)}: use one of "
                                 f"{', '.join(map(repr, choices))}")
        if (agg == "sum") != (amount is not None):
            raise ValueError("AggregateOracle: agg='sum' needs amount= (and agg='count' takes none)")
        super().__init__(size_seconds, by_key=by_key, watermark_seconds=watermark_seconds, origin=origin,
                         closer=closer, filter=filter, drop_poison=drop_poison, topic=topic)
        self.agg, self.amount, self.output_mode, self.tolerance = agg, amount, output_mode, tolerance
        self.key_field, self.window_field = key_field, window_field
        self.value_field = value_field or agg

    def record_callables(self) -> dict[str, Callable[[Any], float]]:
        return {AMOUNT: self.amount} if callable(self.amount) else {}

    def annotation_names(self) -> dict[str, str]:
        return {AMOUNT: self.amount} if isinstance(self.amount, str) else {}

    def output_fields(self) -> dict[str, str | None]:
        """The fields of an output the oracle reads, by the argument that names them (None: the default
        ``window`` object or ``window_start`` / ``window_end``): checked against the job's first records."""
        named: dict[str, str | None] = {"value_field": self.value_field, "window_field": self.window_field}
        return {**({"key_field": self.key_field} if self.by_key and self.key_field else {}), **named}

    def collector_options(self) -> dict[str, object]:
        """Keyword arguments for :class:`~pytest_streamchaos.observe.collector.Collector` so that it
        reads each output's key, window and value."""
        return {"key_field": self.key_field, "window_field": self.window_field, "amount_field": self.value_field}

    # -- validation ---------------------------------------------------------------------------------
    def custom_report(self, sent: SentRecords, outputs: OutputRecords) -> GuaranteeReport:
        """Compare expected and reported aggregates; see the module docstring."""
        if outputs.values is None:
            raise ValueError("AggregateOracle needs OutputRecords.values (the aggregate of each output); "
                             "collect with Collector(..., **oracle.collector_options())")
        exp = self.expected(sent)
        amt = self._amounts(sent)[exp.rows]
        g_out = np.asarray(self.assign(outputs, sent, exp), dtype=np.int64)
        grp, eg = self._groups(exp, amt, outputs, g_out)
        return self._report(sent, outputs, exp, eg, grp, g_out)

    def reference_send_ts(self, sent: SentRecords, outputs: OutputRecords, rows: np.ndarray) -> np.ndarray:
        """Latency reference per output. Append mode: the input that lets the window close (as for
        :class:`TumblingWindowOracle`). Update / complete mode: an emission reports the group's value
        *so far*, usually long before the watermark closes the window, so its reference is the send
        time of the last input it reflects -- the input (in send order) at which the group's running
        count / sum reaches the emitted value. Outputs of groups that are not expected get NaN."""
        if self.output_mode == "append" or outputs.values is None or len(outputs) == 0:
            return super().reference_send_ts(sent, outputs, rows)
        exp = self.expected(sent)
        g_out = np.asarray(self.assign(outputs, sent, exp), dtype=np.int64)
        send = np.asarray(sent.send_ts, dtype=np.float64)[exp.rows]
        amt = self._amounts(sent)[exp.rows]
        order = np.lexsort((send, exp.groups))
        groups, send, amt = exp.groups[order], send[order], amt[order]
        cum = np.cumsum(amt)
        starts = np.searchsorted(groups, groups, side="left")
        cum = cum - np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0.0)  # running amount within each group
        ref = np.full(len(outputs), np.nan)
        values = np.asarray(outputs.values, dtype=np.float64)
        for i in np.flatnonzero((g_out >= 0) & np.isfinite(values)):
            lo, hi = np.searchsorted(groups, g_out[i], "left"), np.searchsorted(groups, g_out[i], "right")
            if hi > lo:
                k = lo + int(np.searchsorted(cum[lo:hi], values[i] - self.tolerance * max(1.0, abs(values[i]))))
                ref[i] = send[min(k, hi - 1)]
        return ref

    def _amounts(self, sent: SentRecords) -> np.ndarray:
        if self.amount is None:
            return np.ones(len(sent))
        return per_record(self.amount, sent, "AggregateOracle amount", AMOUNT)

    def _groups(self, exp: Expected, amt: np.ndarray, outputs: OutputRecords,
                g_out: np.ndarray) -> tuple[_Groups, np.ndarray]:
        """The per-group table, and the group index of every expected row."""
        out_idx = np.flatnonzero(g_out >= 0)
        arrival = np.asarray(outputs.arrival_ts, dtype=np.float64)
        out_idx = out_idx[np.argsort(arrival[out_idx], kind="stable")]
        codes, inv = np.unique(np.concatenate((exp.groups, g_out[out_idx])), return_inverse=True)
        eg, og = inv[: len(exp)], inv[len(exp):]
        n_g = codes.size
        late = exp.late if exp.late is not None else np.zeros(len(exp), bool)
        e_hi = np.bincount(eg, weights=amt, minlength=n_g)
        e_lo = e_hi - np.bincount(eg[late], weights=amt[late], minlength=n_g)
        n_rec = np.bincount(eg, minlength=n_g)
        vals = np.nan_to_num(np.asarray(outputs.values, dtype=np.float64)[out_idx], nan=0.0)
        pick = self._counted_output(og)
        observed, counted_at = np.zeros(n_g), np.full(n_g, np.nan)
        observed[og[pick]], counted_at[og[pick]] = vals[pick], arrival[out_idx[pick]]
        emissions = np.bincount(og, minlength=n_g)
        repeat = np.bincount(og, weights=vals, minlength=n_g) - observed if self.output_mode == "append" \
            else np.zeros(n_g)
        abs_sum = np.bincount(eg, weights=np.abs(amt), minlength=n_g)
        mean_unit = float(np.abs(amt).mean()) if amt.size and np.abs(amt).mean() > 0 else 1.0
        unit = np.where(abs_sum > 0, abs_sum / np.maximum(n_rec, 1), mean_unit)
        tol = self.tolerance * np.maximum(1.0, np.abs(e_hi)) if self.agg == "sum" else np.full(n_g, 0.5)
        expected_g = n_rec > 0
        lost = _records(np.where(expected_g, e_lo - observed, 0.0), unit, tol)
        lost = np.minimum(lost, n_rec)
        dup = _records(np.where(expected_g, observed - e_hi, 0.0), unit, tol) + _records(repeat, unit, tol)
        bad = _records(np.where(expected_g, 0.0, np.abs(observed) + repeat), unit, tol)
        return _Groups(codes, e_lo, e_hi, n_rec, unit, observed, counted_at, emissions, lost, dup, bad), eg

    def _counted_output(self, og: np.ndarray) -> np.ndarray:
        """Index (into the group's outputs in arrival order) of the output whose value counts."""
        if self.output_mode == "append" or og.size == 0:
            return np.unique(og, return_index=True)[1]
        first_rev = np.unique(og[::-1], return_index=True)[1]
        return og.size - 1 - first_rev

    def _report(self, sent: SentRecords, outputs: OutputRecords, exp: Expected, eg: np.ndarray,
                grp: _Groups, g_out: np.ndarray) -> GuaranteeReport:
        unknown = np.flatnonzero(g_out == UNKNOWN)
        unknown_vals = np.abs(np.nan_to_num(np.asarray(outputs.values, dtype=np.float64)[unknown], nan=1.0))
        unit0 = float(np.median(grp.unit)) if grp.unit.size else 1.0
        incorrect = int(grp.bad.sum()) + int(np.maximum(np.rint(unknown_vals / unit0), 1).sum())
        pair_count, first_ts = _per_row(eg, grp)
        lost, dup = int(grp.lost.sum()), int(grp.dup.sum())
        return GuaranteeReport(
            expected=len(exp), processed_ok=int(np.count_nonzero(pair_count)), lost=lost, duplicates=dup,
            incorrect=incorrect, ignored=int(np.count_nonzero(g_out == IGNORE)), side_output=0,
            late=int(np.count_nonzero(exp.late)) if exp.late is not None else 0,
            lost_ids=_EMPTY_IDS, duplicate_ids=_EMPTY_IDS, duplicate_extra=_EMPTY_IDS, incorrect_ids=_EMPTY_IDS,
            resolution="aggregate", wrong_groups=self._wrong_groups(exp, grp, outputs, unknown),
            pair_rows=exp.rows, pair_count=pair_count, pair_wrong=np.zeros(len(exp), bool),
            pair_first_ts=first_ts, appearance_rows=_EMPTY_IDS,
        )

    def _wrong_groups(self, exp: Expected, grp: _Groups, outputs: OutputRecords,
                      unknown: np.ndarray, limit: int = 20) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for i in np.flatnonzero((grp.lost > 0) | (grp.dup > 0) | (grp.bad > 0))[:limit].tolist():
            kind = "lost" if grp.lost[i] else ("duplicated" if grp.dup[i] else "incorrect")
            rows.append({
                "group": exp.label(int(grp.codes[i])), "kind": kind,
                "records": int(grp.lost[i] + grp.dup[i] + grp.bad[i]),
                "expected": float(grp.e_hi[i]), "expected_min": float(grp.e_lo[i]),
                "observed": float(grp.observed[i]), "emissions": int(grp.emissions[i]),
            })
        values = outputs.values if outputs.values is not None else np.full(len(outputs), np.nan)
        for j in unknown[: max(0, limit - len(rows))].tolist():
            key = None if outputs.keys is None else outputs.keys[j]
            ws = None if outputs.window_start is None else outputs.window_start[j]
            rows.append({"group": f"unexpected output #{j} (key {key}, window start {ws})", "kind": "incorrect",
                         "records": 1, "expected": 0.0, "expected_min": 0.0,
                         "observed": float(np.nan_to_num(values[j])), "emissions": 1})
        return rows


def _records(amount: np.ndarray, unit: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Amounts above tolerance, in input records (at least 1 each)."""
    over = amount > tol
    recs = np.zeros(amount.shape, np.int64)
    recs[over] = np.maximum(np.rint(amount[over] / unit[over]), 1).astype(np.int64)
    return recs


def _per_row(eg: np.ndarray, grp: _Groups) -> tuple[np.ndarray, np.ndarray]:
    """Per expected row: appearances (0 lost, 1 ok, 2 duplicated) and when its group was counted.

    Within a group the last-sent rows are the lost ones and the first-sent the duplicated ones."""
    order = np.argsort(eg, kind="stable")  # rows are in send order within a group
    starts = np.cumsum(grp.n_rec) - grp.n_rec
    rank = np.empty(eg.size, np.int64)
    rank[order] = np.arange(eg.size) - starts[eg[order]]
    count = np.ones(eg.size, np.int64)
    count[rank < grp.dup[eg]] = 2
    count[rank >= grp.n_rec[eg] - grp.lost[eg]] = 0
    first_ts = np.where(count > 0, grp.counted_at[eg], np.nan)
    return count, first_ts
