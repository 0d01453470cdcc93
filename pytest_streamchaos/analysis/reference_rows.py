"""Rows as the reference comparison sees them (pure): a row made hashable (:func:`canon`), the columns an
output has, the event-time window a row belongs to, and the names a test gave checked against the columns.

Kept apart from :mod:`pytest_streamchaos.analysis.reference` (what is compared and what it says) so that
each stays short enough to read in one go.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Row = Mapping[str, Any]
#: a row as it is compared: its (column, value) pairs, sorted, values made hashable
Canon = tuple[tuple[str, Any], ...]
#: a window's identity: (start, end) as compared values
Window = tuple[Any, Any]

#: columns that hold a window's start and end when the job flattened the window struct
_START = re.compile(r"^(window)?[_.]?start$", re.IGNORECASE)
_END = re.compile(r"^(window)?[_.]?end$", re.IGNORECASE)


def value(v: object) -> Any:
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
    return tuple(sorted((k, value(v)) for k, v in row.items() if k not in skip))


def show(v: object) -> str:
    return json.dumps(v, default=str) if not isinstance(v, str) else v


def row_words(row: Row) -> str:
    return "{" + ", ".join(f"{k}: {show(v)}" for k, v in row.items()) + "}"


def columns(rows: Sequence[Row]) -> list[str]:
    """Every column some row has, in the order first seen."""
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    return list(seen)


def window_of(row: Row) -> Window | None:
    """The event-time window ``row`` reports: a struct column with ``start`` and ``end`` (Spark's
    ``window()`` as JSON, Parquet or Delta), or a flattened pair (``window_start`` / ``window_end``,
    ``windowStart`` / ``windowEnd``, ``start`` / ``end``); None when it reports none."""
    for v in row.values():
        if isinstance(v, Mapping) and "start" in v and "end" in v:
            return value(v["start"]), value(v["end"])
    start = next((k for k in row if _START.match(k)), None)
    end = next((k for k in row if _END.match(k)), None)
    if start is None or end is None:
        return None
    return value(row[start]), value(row[end])


def absent_names(given: Sequence[str], rows: Sequence[Row]) -> list[str]:
    """The names of ``given`` that no row of ``rows`` has as a column."""
    have = set(columns(rows))
    return [c for c in given if c not in have]


def refusal(what: str, absent: Sequence[str], output: str, have: Sequence[str]) -> str:
    """One line refusing names an output's rows do not have, with a did-you-mean and the columns they do
    have: ``Reference(key=['skuu']): no row of delta:/t has a column 'skuu' (did you mean 'sku'?); its columns:
    sku, on_hand``."""
    names = ", ".join(repr(c) for c in absent)
    close = [m for c in absent for m in difflib.get_close_matches(c, list(have), n=1)]
    mean = f" (did you mean {', '.join(repr(m) for m in close)}?)" if close else ""
    cols = ", ".join(have) if have else "none"
    plural = "columns" if len(absent) > 1 else "a column"
    return f"{what}: no row of {output} has {plural} {names}{mean}; its columns: {cols}"
