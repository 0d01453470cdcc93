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
named; rows or keys that differ beyond such columns (the last windows, closed in only one run; records
later than the watermark, dropped in one run and kept in the other) are left out and counted, with
their cause where the rows show it, and the rest is compared. Only when less than half is left is the
output *not comparable*, said so in words instead of a false alarm. Floats are compared to 9
significant digits (a sum whose terms were added in another order across batch boundaries differs in
its last bits).

A name the test gave is never compared as nothing: a key or ignored column that no row of an output has
refuses that output's comparison in one line naming the columns it has; a key that does not tell a
table's rows apart (many rows, few keys) is refused too; and the guarantee the comparison shows is
never stronger than what it compared (:meth:`Comparison.guarantee`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.facts import OutputRows

from .reference_rows import Canon, Row, Window, absent_names, canon, columns, refusal, row_words, show, value, window_of

__all__ = ["Changed", "Comparison", "LeftOut", "OutputDiff", "OutputRows", "Reference", "compare", "diff",
           "stability"]

#: rows shown per difference in words
SHOWN = 3
#: pairing passes: each may leave out one more column that differs between the two reference runs
MAX_IGNORED = 3
#: the share of the reference's rows (or keys) that must be left after what two fault-free runs disagree on is
#: left out; below it the output is not comparable (a verdict on a small remainder would say little)
MIN_COMPARED = 0.5


@dataclass(frozen=True)
class Reference:
    """How a run is compared with its reference run (``chaos.run(..., reference=Reference(...))``; ``True``
    is ``Reference()``): ``key`` the columns that name an output row's key, to compare the final value per
    key (an update or complete output, a table written by MERGE; None: the Kafka message key of an update
    stream, else the multiset of rows), ``ignore`` columns left out (a timestamp of when a row was written).
    Either is a list or tuple of names, kept as a tuple; each must be a column of the output's rows, or the
    comparison is refused naming the columns there are."""

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

    def refused(self, name: str, rows: Sequence[Row]) -> str | None:
        """One line when a column this names is a column of no row of output ``name`` (None: all are, or there
        are no rows to tell by); the earliest check of the names, and the comparison's."""
        if not rows:
            return None
        for what, given in (("key", self.key or ()), ("ignore", self.ignore)):
            absent = absent_names(given, rows)
            if absent:
                return refusal(f"Reference({what}={list(given)!r})", absent, name, columns(rows))
        return None


@dataclass(frozen=True)
class Changed:
    """A key whose row differs: what the reference wrote and what the run wrote, and in which columns."""

    key: str
    expected: Row
    got: Row
    columns: tuple[str, ...]

    def words(self) -> str:
        exp = ", ".join(f"{c}={show(self.expected.get(c))}" for c in self.columns)
        got = ", ".join(f"{c}={show(self.got.get(c))}" for c in self.columns)
        return f"{self.key}: expected {exp}, got {got}"


@dataclass(frozen=True)
class LeftOut:
    """What two fault-free runs disagreed on, left out of a comparison: rows (``canons``, and ``near``: each
    of those rows less one column, so that a faulted run's third variant of the same row is left out too),
    keys (final value per key), or whole event-time ``windows``; ``count`` the reference's rows or keys left
    out and ``why`` in words."""

    canons: frozenset[Canon] = frozenset()
    near: frozenset[tuple[str, Canon]] = frozenset()
    keys: frozenset[str] = frozenset()
    windows: frozenset[Window] = frozenset()
    count: int = 0
    why: str = ""

    def row(self, r: Row, ignore: tuple[str, ...]) -> bool:
        """Whether row ``r`` is left out."""
        if self.windows and window_of(r) in self.windows:
            return True
        if not self.canons:
            return False
        return canon(r, ignore) in self.canons or any((c, canon(r, (*ignore, c))) in self.near for c in r
                                                      if c not in ignore)


NOTHING = LeftOut()


@dataclass(frozen=True)
class OutputDiff:
    """One output compared: ``mode`` (``rows``: the multiset; ``final per key``), how many rows or keys of the
    reference were compared (``expected``; ``total`` before ``left_out`` of them were left out, with why),
    what differs (``missing``, ``extra``, ``changed``), the columns left out (``ignored``) and, when the
    output cannot be compared, ``unstable`` (why: then nothing is counted)."""

    name: str
    mode: str
    expected: int
    missing: tuple[Row, ...] = ()
    extra: tuple[Row, ...] = ()
    changed: tuple[Changed, ...] = ()
    ignored: tuple[str, ...] = ()
    unstable: str | None = None
    total: int | None = None
    left_out: int = 0
    left_out_why: str = ""

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
        unit = "keys" if self.mode == "final per key" else "rows"
        scope = (f"{self.expected} in the reference" if not self.left_out else
                 f"{self.expected} of its {self.total} {unit} compared; {self.left_out} left out: {self.left_out_why}")
        head = (f"{self.name} ({self.mode}, {scope}): "
                + ("as the reference" if not self.count else
                   f"{self.count} differ: {len(self.changed)} changed, {len(self.missing)} missing, "
                   f"{len(self.extra)} extra"))
        out = [head]
        if self.ignored:
            out.append(f"  left out: {', '.join(self.ignored)} (differed between two runs without faults)")
        out += [f"  changed {c.words()}" for c in self.changed[:SHOWN]]
        out += [f"  missing {row_words(r)}" for r in self.missing[:SHOWN]]
        out += [f"  extra {row_words(r)}" for r in self.extra[:SHOWN]]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"output": self.name, "mode": self.mode, "expected": self.expected, "count": self.count,
                "changed": [{"key": c.key, "expected": dict(c.expected), "got": dict(c.got), "columns": list(c.columns)}
                            for c in self.changed[:100]],
                "missing": [dict(r) for r in self.missing[:100]], "extra": [dict(r) for r in self.extra[:100]],
                "n_changed": len(self.changed), "n_missing": len(self.missing), "n_extra": len(self.extra),
                "ignored": list(self.ignored), "unstable": self.unstable,
                "total": self.expected if self.total is None else self.total, "left_out": self.left_out,
                "left_out_why": self.left_out_why}


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

    @property
    def compared(self) -> int:
        """Rows or keys of the reference that were compared, over every output."""
        return sum(o.expected for o in self.outputs if o.count is not None)

    @property
    def left_out(self) -> int:
        """Rows or keys of the reference left out (two fault-free runs disagreed on them)."""
        return sum(o.left_out for o in self.outputs if o.count is not None)

    def guarantee(self) -> str | None:
        """The guarantee the comparison shows: ``exactly-once`` (nothing differs), ``at-least-once``
        (only extra rows: written twice), ``at-most-once`` (only missing rows), ``none``; None: it cannot
        say -- an output could not be compared (a guarantee over the others would be stronger than what
        was compared), or nothing was."""
        if self.diverged is None or any(o.count is None for o in self.outputs):
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
                "compared": self.compared, "left_out": self.left_out, "guarantee": self.guarantee(),
                "outputs": [o.to_dict() for o in self.outputs], "notes": list(self.notes)}


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
        return ", ".join(f"{c}={show(row.get(c))}" for c in options.key)
    if out.keys is not None and out.keys[i] is not None:
        return f"key {out.keys[i]}"
    return row_words(row)  # a table without a key: each distinct row is its own key


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
    cols = sorted({c for r in [*missing, *extra] for c in r if c not in ignore})
    for col in cols:
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
            changed.append(Changed("{" + ", ".join(f"{k}: {show(v)}" for k, v in rest) + "}", m, extra[free],
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
            cols = tuple(sorted(c for c in set(e) | set(g) if c not in ignore and value(e.get(c)) != value(g.get(c))))
            changed.append(Changed(k, e, g, cols))
    return missing, extra, sorted(changed, key=lambda c: c.key)


def diff(expected: OutputRows, got: OutputRows, options: Reference, ignore: tuple[str, ...] = (),
         leave_out: LeftOut = NOTHING) -> OutputDiff:
    """``got`` compared with ``expected`` (the reference), columns in ``options.ignore`` and ``ignore`` left out,
    and the rows or keys ``leave_out`` names (on both sides)."""
    mode = mode_of(expected, options)
    skip = (*options.ignore, *ignore)
    if mode != "final per key":
        exp_rows = [r for r in expected.rows if not leave_out.row(r, skip)]
        got_rows = [r for r in got.rows if not leave_out.row(r, skip)]
        missing, extra, changed = _diff_rows(exp_rows, got_rows, skip)
        n, total = len(exp_rows), len(expected.rows)
    else:
        every = finals(expected, options)
        exp = {k: r for k, r in every.items() if k not in leave_out.keys and not leave_out.row(r, skip)}
        g = {k: r for k, r in finals(got, options).items() if k not in leave_out.keys and not leave_out.row(r, skip)}
        missing, extra, changed = _diff_finals(exp, g, skip)
        n, total = len(exp), len(every)
    return OutputDiff(expected.name, mode, n, tuple(missing), tuple(extra), tuple(changed), tuple(ignore),
                      total=total, left_out=total - n if leave_out is not NOTHING else 0, left_out_why=leave_out.why)


# -- what two fault-free runs agree on -------------------------------------------------------------------

def stability(first: OutputRows, second: OutputRows, options: Reference
              ) -> tuple[tuple[str, ...], LeftOut, str | None]:
    """What two fault-free runs of the same input say about an output: the columns to leave out (they
    differed, all else agreeing), the rows or keys to leave out (they differ beyond those columns:
    :func:`_disagreement`) and, when less than :data:`MIN_COMPARED` of the output is left, why it cannot be
    compared."""
    ignore: tuple[str, ...] = ()
    for _ in range(MAX_IGNORED + 1):
        d = diff(first, second, options, ignore)
        if not d.count:
            return ignore, NOTHING, None
        cols = Counter(c for ch in d.changed for c in ch.columns)
        if d.missing or d.extra or not cols or len(ignore) == MAX_IGNORED:
            break
        ignore = (*ignore, cols.most_common(1)[0][0])
    d = diff(first, second, options, ignore)
    left = _disagreement(first, second, d, options, ignore)
    kept = diff(first, second, options, ignore, left)
    total = kept.total or 0
    if total and kept.expected >= MIN_COMPARED * total and not kept.count:
        return ignore, left, None
    sample = [*(f"changed {c.words()}" for c in d.changed[:1]), *(f"only in one: {row_words(r)}"
                                                                  for r in [*d.missing, *d.extra][:2])]
    return ignore, left, (
        f"{left.count} of its {total} {'keys' if d.mode == 'final per key' else 'rows'} differ between two runs of "
        "the same input without faults "
        f"({'; '.join(sample)}), and leaving them out would leave {kept.expected} of {total} to compare: its "
        "content depends on processing time, arrival order or where batch boundaries fell (records later than "
        "the watermark dropped in one run and kept in the other, a processing-time window, current_timestamp()); "
        "compare the columns that do not, with Reference(ignore=[...]) or Reference(key=[...])")


def _disagreement(first: OutputRows, second: OutputRows, d: OutputDiff, options: Reference,
                  ignore: tuple[str, ...]) -> LeftOut:
    """What to leave out of an output two fault-free runs disagree on (``d``: the second run against the
    first): whole event-time windows when every row that differs reports one, else those rows (or keys),
    with the reference's rows or keys it takes and the cause in words."""
    rows = [*d.missing, *d.extra, *(r for c in d.changed for r in (c.expected, c.got))]
    skip = (*options.ignore, *ignore)
    wins = [window_of(r) for r in rows]
    if wins and all(w is not None for w in wins):
        windows = frozenset(w for w in wins if w is not None)
        left = LeftOut(windows=windows)
        why = _windows_why(first, windows, one_run=not d.changed)
    elif d.mode == "final per key":
        a, b = finals(first, options), finals(second, options)
        keys = frozenset(k for k in a.keys() | b.keys()
                         if k not in a or k not in b or canon(a[k], skip) != canon(b[k], skip))
        left, why = LeftOut(keys=keys), "keys whose final rows differ between two fault-free runs"
    else:
        canons = frozenset(canon(r, skip) for r in rows)
        # a changed row's other variants (a third value of the column that changed) are left out with it
        near = frozenset((c, canon(r, (*skip, c))) for ch in d.changed for c in ch.columns
                         for r in (ch.expected, ch.got))
        left, why = LeftOut(canons=canons, near=near), ("rows written in only one fault-free run or differing "
                                                        "between the two (records later than the watermark, "
                                                        "where batch boundaries fell)")
    n = diff(first, first, options, ignore, left)
    return LeftOut(left.canons, left.near, left.keys, left.windows, (n.total or 0) - n.expected, why)


def _windows_why(first: OutputRows, windows: frozenset[Window], one_run: bool) -> str:
    """The cause of windows two fault-free runs disagree on, in words: the last ones of the input, closed in
    only one run (the records that close them came at its end), or windows whose rows differ."""
    stable = [w for r in first.rows if (w := window_of(r)) is not None and w not in windows]
    try:
        tail = bool(stable) and min(windows) > max(stable)
    except TypeError:  # windows of mixed types: no order to tell a tail by
        tail = False
    n = f"{len(windows)} window{'s' if len(windows) > 1 else ''}"
    if one_run:
        return f"the last {n}, closed in only one fault-free run (the input's last records close them)" if tail \
            else f"{n} closed in only one fault-free run"
    return f"{n} whose rows differ between two fault-free runs"


# -- names the test gave ---------------------------------------------------------------------------------

def refused(ref: OutputRows, options: Reference) -> str | None:
    """Why ``ref`` (the reference's rows of one output) cannot be compared as the test named it: a key or
    ignored column no row has, a key most rows have no value in, or a key that does not tell a table's rows
    apart (the last row of each key would stand for the others); None when it can."""
    bad = options.refused(ref.name, ref.rows)
    if bad or not options.key or not ref.rows:
        return bad
    key = list(options.key)
    keyless = sum(1 for r in ref.rows if any(r.get(c) is None for c in key))
    if keyless * 2 > len(ref.rows):
        return (f"Reference(key={key!r}): {keyless} of the {len(ref.rows)} rows of {ref.name} have no value in "
                f"{', '.join(key)}; its columns: {', '.join(columns(ref.rows))}")
    n_keys = len(finals(ref, options))
    if ref.table and n_keys < len(ref.rows):
        return (f"Reference(key={key!r}) does not name one row of {ref.name}: its {len(ref.rows)} final rows have "
                f"{n_keys} distinct keys, so one row per key would stand for the others; name the columns that "
                f"tell its rows apart (of {', '.join(columns(ref.rows))})")
    return None


def compare(reference: Sequence[OutputRows], again: Sequence[OutputRows], run: Sequence[OutputRows],
            options: Reference = Reference(), plan_notes: Sequence[str] = ()) -> Comparison:
    """The run's outputs compared with the reference's, by name; ``again`` the second fault-free run that
    tells what is stable (:func:`stability`); ``plan_notes`` what the job's plan says of processing-time
    dependence (named where an output is not comparable)."""
    by_name = {o.name: o for o in run}
    second = {o.name: o for o in again}
    diffs = []
    for ref in reference:
        mine = by_name.get(ref.name)
        why = _not_comparable(ref, mine, options)
        if why is not None:
            diffs.append(OutputDiff(ref.name, mode_of(ref, options), len(ref.rows), unstable=why))
            continue
        assert mine is not None
        ignore, left, unstable = stability(ref, second.get(ref.name, ref), options)
        if unstable is not None:
            diffs.append(OutputDiff(ref.name, mode_of(ref, options), len(ref.rows), unstable=unstable))
            continue
        diffs.append(diff(ref, mine, options, ignore, left))
    return Comparison(tuple(diffs), tuple(plan_notes))


def _not_comparable(ref: OutputRows, mine: OutputRows | None, options: Reference) -> str | None:
    if mine is None:
        return "the run did not read this output, so it was not compared"
    if not ref.rows:  # a verdict over nothing expected would be green without evidence
        return ("the reference run wrote nothing there, so there is nothing to compare: a window the watermark "
                "never passed within the run (give it a longer duration or a shorter window / watermark), a "
                "filter that let nothing through")
    return refused(ref, options)
