"""The end-of-session table: one row per chaos run with its faults and headline numbers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

COLUMNS: tuple[tuple[str, str], ...] = (
    ("test", "test"),
    ("faults", "faults"),
    ("guarantee", "declared"),
    ("delivered", "delivered"),
    ("sent", "sent"),
    ("lost", "lost"),
    ("dup", "dup"),
    ("incorrect", "incorr"),
    ("reliability", "reliab"),
    ("downtime_s", "down s"),
    ("recovery_s", "recov s"),
    ("failure_cost_s", "cost s"),
    ("p99_latency_s", "p99 s"),
)


def _cell(v: object) -> str:
    if v is None:  # a metric that could not be measured (the run's JSON says why)
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_table(rows: Sequence[dict[str, Any]], columns: Iterable[tuple[str, str]] = COLUMNS) -> list[str]:
    """Fixed-width text table of ``rows`` (dicts keyed by the column keys)."""
    cols = list(columns)
    cells = [[h for _, h in cols]] + [[_cell(r.get(k, "")) for k, _ in cols] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = []
    for n, row in enumerate(cells):
        pairs = enumerate(zip(row, widths, strict=True))
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
