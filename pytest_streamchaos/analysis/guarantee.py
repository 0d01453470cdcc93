"""What :func:`~pytest_streamchaos.analysis.validate.validate` returns, and the id index it and the
oracles share: the guarantee names, :class:`IdIndex`, :class:`GuaranteeReport`.

Kept apart from ``validate`` and ``oracle`` so that both can import it (``validate`` uses the
oracles; ``CustomOracle`` needs the id index and ``Oracle.custom_report`` returns a report) without
an import cycle. ``validate`` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

GUARANTEES = ("exactly-once", "at-least-once", "at-most-once")
#: what each delivered guarantee also satisfies when a stronger/weaker one was declared
SATISFIES = {
    "exactly-once": {"exactly-once", "at-least-once", "at-most-once", "none"},
    "at-least-once": {"at-least-once", "none"},
    "at-most-once": {"at-most-once", "none"},
    "none": {"none"},
}


class IdIndex:
    """Maps input ids to their row in the sent records (-1: never sent). Ids must be unique."""

    def __init__(self, ids: np.ndarray) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        self.n = int(ids.size)
        self._base: int | None = None
        # fast path: the generator's ids are usually a contiguous increasing range
        if self.n and ids[-1] - ids[0] == self.n - 1 and (self.n == 1 or bool(np.all(np.diff(ids) == 1))):
            self._base = int(ids[0])
            return
        self._order = np.argsort(ids, kind="stable")
        self._sorted = ids[self._order]
        if self.n > 1 and bool(np.any(self._sorted[1:] == self._sorted[:-1])):
            dup = self._sorted[1:][self._sorted[1:] == self._sorted[:-1]][:5].tolist()
            raise ValueError(f"sent records contain duplicate ids {dup}: every input record needs a unique id")

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """Row of each id, -1 for ids never sent."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._base is not None:
            r = ids - self._base
            r[(r < 0) | (r >= self.n)] = -1
            return r
        if self.n == 0:
            return np.full(ids.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self._sorted, ids)
        pos_c = np.minimum(pos, self.n - 1)
        hit = self._sorted[pos_c] == ids
        return np.where(hit, self._order[pos_c], -1).astype(np.int64)


@dataclass
class GuaranteeReport:
    """Result of :func:`validate`. Counts are ints; ``*_ids`` arrays hold the offending ids."""

    expected: int
    processed_ok: int
    lost: int
    duplicates: int
    incorrect: int
    ignored: int
    #: appearances accepted through the side output (late events, Algorithm 2)
    side_output: int
    #: expected memberships whose input was late (sent after its window was finalized)
    late: int
    lost_ids: np.ndarray
    duplicate_ids: np.ndarray
    #: how many extra appearances each of ``duplicate_ids`` had
    duplicate_extra: np.ndarray
    incorrect_ids: np.ndarray
    #: up to 20 misplaced appearances: (id, found in, expected in)
    misplaced: list[tuple[int, str, str]] = field(default_factory=list)
    #: appearances missing from ids seen fewer times than their expected ``copies`` (None: the
    #: oracle expects one appearance per id)
    missing_copies: int | None = None
    #: ``"record"`` (every id tracked) or ``"aggregate"`` (counts inferred from aggregate values:
    #: no offending ids are known, see ``wrong_groups``)
    resolution: str = "record"
    #: aggregate resolution: up to 20 wrong (key, window) groups, JSON-ready dicts
    wrong_groups: list[dict[str, Any]] = field(default_factory=list)
    # --- per expected membership, for metrics (not part of the JSON) ---
    pair_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)
    pair_count: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)
    pair_wrong: np.ndarray = field(default_factory=lambda: np.empty(0, bool), repr=False)
    #: arrival time of the first correct appearance (NaN: lost)
    pair_first_ts: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    #: sent row of every flat output id (-1: never sent)
    appearance_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)
    #: expected appearances per membership (empty: 1 each)
    pair_need: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)
    #: per membership: its input was late (empty: none was)
    pair_late: np.ndarray = field(default_factory=lambda: np.empty(0, bool), repr=False)
    #: per flat output id: the membership it fulfils (-1: none), whether it counts (not ignored), whether it
    #: came through the side output -- what a window of the run is judged by (``analysis.windows.restrict``);
    #: empty for a report an oracle made itself (per aggregate)
    appearance_pair: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), repr=False)
    appearance_counted: np.ndarray = field(default_factory=lambda: np.empty(0, bool), repr=False)
    appearance_side: np.ndarray = field(default_factory=lambda: np.empty(0, bool), repr=False)

    @property
    def guarantee_delivered(self) -> str:
        """The strongest guarantee the counts support (PGVal §3.4.1)."""
        if self.lost == 0 and self.duplicates == 0 and self.incorrect == 0:
            return "exactly-once"
        if self.lost == 0 and self.incorrect == 0:
            return "at-least-once"
        if self.duplicates == 0 and self.incorrect == 0:
            return "at-most-once"
        return "none"

    def delivers(self, declared: str) -> bool:
        """True if the delivered guarantee satisfies ``declared``."""
        _check_guarantee(declared)
        return declared in SATISFIES[self.guarantee_delivered]

    def reliability(self, declared: str = "exactly-once") -> float:
        """Fraction of expected ids processed correctly under the ``declared`` guarantee.

        An expected id (membership) counts as correct when it appeared in no wrong output and

        - exactly-once: exactly once in its right output (a duplicate makes it incorrect);
        - at-least-once: at least once (duplicates are allowed);
        - at-most-once: exactly once as well. The guarantee *permits* loss, so a lost id does not
          stop ``guarantee_delivered`` from being at-most-once, but it was not processed: PGVal's
          reliability is "the percentage of input events reliably processed", so loss lowers it
          under every guarantee. A duplicate violates at-most-once.

        Side-output appearances count as processed (PGVal: no data lost). With no expected id the
        reliability is 1.0.
        """
        _check_guarantee(declared)
        if self.expected == 0:
            return 1.0
        c = self.pair_count
        need = self.pair_need if self.pair_need.size else 1
        ok = (c >= need) if declared == "at-least-once" else (c == need)
        return float(np.count_nonzero(ok & ~self.pair_wrong)) / self.expected

    def counts(self) -> dict[str, int]:
        """The counts as a dict (``missing_copies`` only when the oracle expects copies)."""
        c = {
            "expected": self.expected,
            "processed_ok": self.processed_ok,
            "lost": self.lost,
            "duplicates": self.duplicates,
            "incorrect": self.incorrect,
            "ignored": self.ignored,
            "side_output": self.side_output,
            "late": self.late,
        }
        if self.missing_copies is not None:
            c["missing_copies"] = self.missing_copies
        return c

    def to_dict(self, sample: int = 20) -> dict[str, object]:
        """JSON-ready summary; id arrays are capped at ``sample`` entries (full sizes given)."""
        return {
            **self.counts(),
            "guarantee_delivered": self.guarantee_delivered,
            "reliability": {g: self.reliability(g) for g in GUARANTEES},
            "lost_ids": self.lost_ids[:sample].tolist(),
            "duplicate_ids": self.duplicate_ids[:sample].tolist(),
            "duplicate_extra": self.duplicate_extra[:sample].tolist(),
            "incorrect_ids": self.incorrect_ids[:sample].tolist(),
            "misplaced": [list(m) for m in self.misplaced[:sample]],
            **({} if self.resolution == "record" else
               {"resolution": self.resolution, "wrong_groups": self.wrong_groups[:sample]}),
        }

    def describe(self, sample: int = 5) -> str:
        """One readable paragraph: counts plus a few offending ids (or groups, per aggregate)."""
        parts = [
            f"{self.expected} expected, {self.processed_ok} processed, lost={self.lost}, "
            f"duplicates={self.duplicates}, incorrect={self.incorrect} -> {self.guarantee_delivered}"
        ]
        if self.resolution != "record":
            parts.insert(0, f"resolution per {self.resolution}, not per record (counts in input records "
                            "inferred from aggregate values; no ids)")
            parts.extend(self.wrong_group_lines(sample))
            return "; ".join(parts)
        if self.missing_copies:
            parts.append(f"{self.missing_copies} expected copies missing")
        if self.lost:
            parts.append(f"lost ids e.g. {self.lost_ids[:sample].tolist()}")
        if self.duplicates:
            parts.append(f"duplicated ids e.g. {self.duplicate_ids[:sample].tolist()}")
        if self.misplaced:
            shown = (f"id {i} in {a}, expected {b}" for i, a, b in self.misplaced[:sample])
            parts.append("misplaced e.g. " + "; ".join(shown))
        elif self.incorrect:
            parts.append(f"incorrect ids e.g. {self.incorrect_ids[:sample].tolist()}")
        return "; ".join(parts)


    def wrong_group_lines(self, sample: int = 5) -> list[str]:
        """Aggregate resolution: one line per wrong (key, window) group, the first ``sample``."""
        return [f"{g['group']}: {g['kind']} {g['records']} record(s) (expected {_range(g)}, got "
                f"{g['observed']:g} in {g['emissions']} output(s))" for g in self.wrong_groups[:sample]]


def _range(g: dict[str, Any]) -> str:
    lo, hi = g["expected_min"], g["expected"]
    return f"{hi:g}" if lo == hi else f"{lo:g}..{hi:g}"


def _check_guarantee(g: str) -> None:
    if g not in GUARANTEES:
        raise ValueError(f"unknown guarantee {g!r}; use one of {', '.join(GUARANTEES)}")
