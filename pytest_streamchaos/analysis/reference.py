"""The reference run's verdict: a faulted run's output compared with the output of the same job on the
same input without faults, by key -- the oracle nobody has to write (pure: rows in, differences out).

What is compared, per output (:func:`compare`):

- **append output** (a Kafka topic, a file sink, ``foreachBatch`` appends): the *multiset* of rows. A
  row the reference has and the run has not is **missing**, one the run has more often is **extra** (a
  replayed batch written twice), and a missing and an extra row that agree on every column but the ones
  a key does not cover are one **changed** key (``expected {on_hand: 10}, got {on_hand: 13}``);
- **update / complete output and tables**: the *final value per key* -- the last row of each key (a
  Kafka message key that repeats: an update stream; the columns :class:`Reference` names as the key;
  a table's final rows). Intermediate updates depend on where batch boundaries fell and are never
  compared.

Two fault-free runs of the same input must agree, or nothing can be compared as such. The reference
is therefore made twice (:func:`stability`): a column whose value differs between the two (a
``current_timestamp()``, a batch id, an arrival-order artefact) is left out of the comparison and
named; rows that differ beyond such columns (records later than the watermark, dropped in one run and
kept in the other; processing-time windows) make the output *not comparable*, said so in words instead
of a false alarm. Floats are compared to 9 significant digits (a sum whose terms were added in another
order across batch boundaries differs in its last bits).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.facts import OutputRows

__all__ = ["Changed", "Comparison", "OutputDiff", "OutputRows", "Reference", "compare", "diff", "stability"]

Row = Mapping[str, Any]
#: a row as it is compared: its (column, value) pairs, sorted, values made hashable
Canon = tuple[tuple[str, Any], ...]
#: rows shown per difference in words
SHOWN = 3
#: pairing passes: each may leave out one more column that differs between the two reference runs
MAX_IGNORED = 3


@dataclass(frozen=True)
class Reference:
    """How a run is compared with its reference run (``chaos.run(..., reference=Reference(...))``; ``True``
    is ``Reference()``): ``key`` the columns that name an output row's key, to compare the final value per
    key (an update or complete output, a table written by MERGE; None: the Kafka message key of an update
    stream, else the multiset of rows), ``ignore`` columns left out (a timestamp of when a row was written).
    Either is a list or tuple of names, kept as a tuple."""

    key: Sequence[str] | None = None
    ignore: Sequence[str] = ()

    def __post_init__(self) -> None:
        for name in ("key", "ignore"):
            cols = getattr(self, name)
            if cols is None:
                continue
            if isinstance(cols, str) or not all(isinstance(c, str) and c for c in cols):
                raise ValueError(f"Reference({name}={cols!r}): give a list of column names, e.g. "
                                 f"Reference({name}=['sku'])")
            kept = tuple(cols)
            object.__setattr__(self, name, (kept or None) if name == "key" else kept)  # frozen: once, here

    @classmethod
    def of(cls, value: bool | Reference | None) -> Reference | None:
        """``chaos.run``'s ``reference`` argument as a :class:`Reference` (None: no reference)."""
        if value is None or value is False:
            return None
        if value is True:
            return cls()
        if isinstance(value, Reference):
            return value
        raise TypeError(f"chaos.run(reference={value!r}): pass True or Reference(key=[...], ignore=[...])")


@dataclass(frozen=True)
class Changed:
    """A key whose row differs: what the reference wrote and what the run wrote, and in which columns."""

    key: str
    expected: Row
    got: Row
    columns: tuple[str, ...]

    def words(self) -> str:
        exp = ", ".join(f"{c}={_show(self.expected.get(c))}" for c in self.columns)
        got = ", ".join(f"{c}={_show(self.got.get(c))}" for c in self.columns)
        return f"{self.key}: expected {exp}, got {got}"


@dataclass(frozen=True)
class OutputDiff:
    """One output compared: ``mode`` (``rows``: the multiset; ``final per key``), how many rows or keys the
    reference has (``expected``), what differs (``missing``, ``extra``, ``changed``), the columns left out
    (``ignored``, with why) and, when two fault-free runs did not agree beyond them, ``unstable`` (why it
    cannot be compared: then nothing is counted)."""

    name: str
    mode: str
    expected: int
    missing: tuple[Row, ...] = ()
    extra: tuple[Row, ...] = ()
    changed: tuple[Changed, ...] = ()
    ignored: tuple[str, ...] = ()
    unstable: str | None = None

    @property
    def count(self) -> int | None:
        """Rows or keys that differ (a changed key once); None when the output cannot be compared."""
        if self.unstable is not None:
            return None
        return len(self.missing) + len(self.extra) + len(self.changed)

    def lines(self) -> list[str]:
        """The difference in words, the first few of each kind."""
        if self.unstable is not None:
            return [f"{self.name}: not comparable: {self.unstable}"]
        head = (f"{self.name} ({self.mode}, {self.expected} in the reference): "
                + ("as the reference" if not self.count else
                   f"{self.count} differ: {len(self.changed)} changed, {len(self.missing)} missing, "
                   f"{len(self.extra)} extra"))
        out = [head]
        if self.ignored:
            out.append(f"  left out: {', '.join(self.ignored)} (differed between two runs without faults)")
        out += [f"  changed {c.words()}" for c in self.changed[:SHOWN]]
        out += [f"  missing {_row_words(r)}" for r in self.missing[:SHOWN]]
        out += [f"  extra {_row_words(r)}" for r in self.extra[:SHOWN]]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.name, "mode": self.mode, "expected": self.expected, "count": self.count,
                "changed": [{"key": c.key, "expected": dict(c.expected), "got": dict(c.got), "columns": list(c.columns)}
                            for c in self.changed[:100]],
                "missing": [dict(r) for r in self.missing[:100]], "extra": [dict(r) for r in self.extra[:100]],
                "n_changed": len(self.changed), "n_missing": len(self.missing), "n_extra": len(self.extra),
                "ignored": list(self.ignored), "unstable": self.unstable}


@dataclass(frozen=True)
class Comparison:
    """A run compared with its reference, output by output; ``notes`` what the comparison could not do."""

    outputs: tuple[OutputDiff, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def diverged(self) -> int | None:
        """Rows or keys that differ, over the outputs that can be compared; None when none can."""
        counts = [o.count for o in self.outputs if o.count is not None]
        return sum(counts) if counts else None

    @property
    def missing(self) -> int:
        return sum(len(o.missing) for o in self.outputs if o.count is not None)

    @property
    def extra(self) -> int:
        return sum(len(o.extra) for o in self.outputs if o.count is not None)

    @property
    def changed(self) -> int:
        return sum(len(o.changed) for o in self.outputs if o.count is not None)

    def guarantee(self) -> str | None:
        """The guarantee the comparison shows: ``exactly-once`` (nothing differs), ``at-least-once``
        (only extra rows: written twice), ``at-most-once`` (only missing rows), ``none``; None: nothing
        could be compared."""
        if self.diverged is None:
            return None
        if self.diverged == 0:
            return "exactly-once"
        if self.changed:
            return "none"
        if self.missing == 0:
            return "at-least-once"
        return "at-most-once" if self.extra == 0 else "none"

    def lines(self) -> list[str]:
        out = [line for o in self.outputs for line in o.lines()]
        return out + [f"note: {n}" for n in self.notes]

    def to_dict(self) -> dict[str, Any]:
        return {"diverged": self.diverged, "missing": self.missing, "extra": self.extra, "changed": self.changed,
                "guarantee": self.guarantee(), "outputs": [o.to_dict() for o in self.outputs],
                "notes": list(self.notes)}


# -- rows as compared ------------------------------------------------------------------------------------

def _value(v: Any) -> Any:
    """A value made hashable and stable across runs: floats to 9 significant digits, containers as JSON."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float):
        return v if not math.isfinite(v) else float(f"{v:.9g}")
    if isinstance(v, int | str):
        return v
    if isinstance(v, Mapping | list | tuple):
        return json.dumps(v, sort_keys=True, default=str)
    return str(v)


def canon(row: Row, ignore: Iterable[str] = ()) -> Canon:
    skip = set(ignore)
    return tuple(sorted((k, _value(v)) for k, v in row.items() if k not in skip))


def _show(v: Any) -> str:
    return json.dumps(v, default=str) if not isinstance(v, str) else v


def _row_words(row: Row) -> str:
    return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in row.items()) + "}"


# -- modes -----------------------------------------------------------------------------------------------

def mode_of(out: OutputRows, options: Reference) -> str:
    """``final per key`` when a key is named or the output is a Kafka update stream (a message key that
    repeats); ``final rows`` for a table without a named key (the multiset of its final rows); else
    ``rows``."""
    if options.key:
        return "final per key"
    if out.table:
        return "final rows"
    if out.keys is not None:
        seen = [k for k in out.keys if k is not None]
        if seen and len(set(seen)) < len(seen):
            return "final per key"
    return "rows"


def _key_of(out: OutputRows, i: int, row: Row, options: Reference) -> str:
    if options.key:
        return ", ".join(f"{c}={_show(row.get(c))}" for c in options.key)
    if out.keys is not None and out.keys[i] is not None:
        return f"key {out.keys[i]}"
    return _row_words(row)  # a table without a key: each distinct row is its own key


def finals(out: OutputRows, options: Reference) -> dict[str, Row]:
    """The last row of each key (in the order the rows were written)."""
    last: dict[str, Row] = {}
    for i, row in enumerate(out.rows):
        last[_key_of(out, i, row, options)] = row
    return last


# -- comparing -------------------------------------------------------------------------------------------

def _diff_rows(expected: Sequence[Row], got: Sequence[Row], ignore: tuple[str, ...]
               ) -> tuple[list[Row], list[Row], list[Changed]]:
    """Multiset difference of two row lists (columns in ``ignore`` left out), missing and extra rows that
    differ in one column paired as changed."""
    exp = Counter(canon(r, ignore) for r in expected)
    got_c = Counter(canon(r, ignore) for r in got)
    first = {canon(r, ignore): r for r in [*expected, *got]}
    missing = [first[c] for c, n in (exp - got_c).items() for _ in range(n)]
    extra = [first[c] for c, n in (got_c - exp).items() for _ in range(n)]
    return _pair(missing, extra, ignore)


def _pair(missing: list[Row], extra: list[Row], ignore: tuple[str, ...]) -> tuple[list[Row], list[Row], list[Changed]]:
    """Missing and extra rows that agree on every column but one, paired: that key changed."""
    changed: list[Changed] = []
    columns = sorted({c for r in [*missing, *extra] for c in r if c not in ignore})
    for col in columns:
        if not missing or not extra:
            break
        by_rest: dict[Canon, list[int]] = {}
        for j, r in enumerate(extra):
            by_rest.setdefault(canon(r, (*ignore, col)), []).append(j)
        keep_missing: list[Row] = []
        used: set[int] = set()
        for m in missing:
            slots = by_rest.get(canon(m, (*ignore, col)), [])
            free = next((j for j in slots if j not in used), None)
            if free is None:
                keep_missing.append(m)
                continue
            used.add(free)
            rest = canon(m, (*ignore, col))
            changed.append(Changed("{" + ", ".join(f"{k}: {_show(v)}" for k, v in rest) + "}", m, extra[free],
                                   (col,)))
        missing, extra = keep_missing, [r for j, r in enumerate(extra) if j not in used]
    return missing, extra, changed


def _diff_finals(expected: dict[str, Row], got: dict[str, Row], ignore: tuple[str, ...]
                 ) -> tuple[list[Row], list[Row], list[Changed]]:
    missing = [r for k, r in expected.items() if k not in got]
    extra = [r for k, r in got.items() if k not in expected]
    changed = []
    for k in expected.keys() & got.keys():
        e, g = expected[k], got[k]
        if canon(e, ignore) != canon(g, ignore):
            cols = tuple(sorted(c for c in set(e) | set(g) if c not in ignore and _value(e.get(c)) != _value(g.get(c))))
            changed.append(Changed(k, e, g, cols))
    return missing, extra, sorted(changed, key=lambda c: c.key)


def diff(expected: OutputRows, got: OutputRows, options: Reference, ignore: tuple[str, ...] = ()) -> OutputDiff:
    """``got`` compared with ``expected`` (the reference), columns in ``options.ignore`` and ``ignore`` left out."""
    mode = mode_of(expected, options)
    left_out = (*options.ignore, *ignore)
    if mode != "final per key":
        missing, extra, changed = _diff_rows(expected.rows, got.rows, left_out)
        n = len(expected.rows)
    else:
        exp, g = finals(expected, options), finals(got, options)
        missing, extra, changed = _diff_finals(exp, g, left_out)
        n = len(exp)
    return OutputDiff(expected.name, mode, n, tuple(missing), tuple(extra), tuple(changed), tuple(ignore))


def stability(first: OutputRows, second: OutputRows, options: Reference) -> tuple[tuple[str, ...], str | None]:
    """What two fault-free runs of the same input say about an output: the columns to leave out (they
    differed, all else agreeing) and, when rows differ beyond them, why the output cannot be compared."""
    ignore: tuple[str, ...] = ()
    for _ in range(MAX_IGNORED + 1):
        d = diff(first, second, options, ignore)
        if not d.count:
            return ignore, None
        cols = Counter(c for ch in d.changed for c in ch.columns)
        if d.missing or d.extra or not cols or len(ignore) == MAX_IGNORED:
            break
        ignore = (*ignore, cols.most_common(1)[0][0])
    d = diff(first, second, options, ignore)
    sample = [*(f"changed {c.words()}" for c in d.changed[:1]), *(f"only in one: {_row_words(r)}"
                                                                  for r in [*d.missing, *d.extra][:2])]
    return ignore, (f"{d.count} of its {d.expected} rows differ between two runs of the same input without faults "
                    f"({'; '.join(sample)}): its content depends on processing time, arrival order or where batch "
                    "boundaries fell (records later than the watermark dropped in one run and kept in the other, a "
                    "processing-time window, current_timestamp()); compare the columns that do not, with "
                    "Reference(ignore=[...]) or Reference(key=[...])")


def compare(reference: Sequence[OutputRows], again: Sequence[OutputRows], run: Sequence[OutputRows],
            options: Reference = Reference(), plan_notes: Sequence[str] = ()) -> Comparison:
    """The run's outputs compared with the reference's, by name; ``again`` the second fault-free run that
    tells what is stable (:func:`stability`); ``plan_notes`` what the job's plan says of processing-time
    dependence (named where an output is not comparable)."""
    by_name = {o.name: o for o in run}
    second = {o.name: o for o in again}
    diffs, notes = [], list(plan_notes)
    for ref in reference:
        mine = by_name.get(ref.name)
        if mine is None:
            notes.append(f"{ref.name}: the run did not read this output")
            continue
        ignore, unstable = stability(ref, second.get(ref.name, ref), options)
        if unstable is not None:
            diffs.append(OutputDiff(ref.name, mode_of(ref, options), len(ref.rows), unstable=unstable))
            continue
        if not ref.rows:  # a verdict over nothing expected would be green without evidence
            diffs.append(OutputDiff(ref.name, mode_of(ref, options), 0, unstable=(
                "the reference run wrote nothing there, so there is nothing to compare: a window the watermark "
                "never passed within the run (give it a longer duration or a shorter window / watermark), a "
                "filter that let nothing through")))
            continue
        diffs.append(diff(ref, mine, options, ignore))
    return Comparison(tuple(diffs), tuple(notes))
