"""The reference check: the run's outputs, row by row, against the same job's outputs on the same input
without faults (:mod:`pytest_streamchaos.analysis.reference`), for jobs whose output is not one record per
input -- aggregates, joins, sessions, MERGE into a table -- where no oracle was written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_streamchaos.facts import OutputRows
from pytest_streamchaos.history import History

from ..checker import CheckResult
from ..reference import Comparison, Reference, compare
from .guarantee import NO_VERDICT


@dataclass
class ReferenceResult(CheckResult):
    """The comparison (``comparison``), and its counts in ``numbers``."""

    comparison: Comparison = field(default_factory=lambda: Comparison(()))


class ReferenceCheck:
    """Compares the run's outputs (``history.facts.output_rows``) with ``reference`` (a fault-free run's),
    ``again`` a second fault-free run's (what is stable between two runs without faults)."""

    name = "reference"

    def __init__(self, reference: Sequence[OutputRows], again: Sequence[OutputRows],
                 options: Reference | None = None, plan_notes: Sequence[str] = ()) -> None:
        self.reference = list(reference)
        self.again = list(again)
        self.options = options or Reference()
        self.plan_notes = list(plan_notes)

    def check(self, history: History) -> CheckResult:
        rows = history.facts.output_rows
        if rows is None:
            return CheckResult(self.name, None, reason="the run did not read its outputs' rows")
        cmp = compare(self.reference, self.again, rows, self.options, self.plan_notes)
        n = cmp.diverged
        numbers = {"diverged": n, "missing": cmp.missing, "extra": cmp.extra, "changed": cmp.changed,
                   "guarantee": cmp.guarantee()}
        reason = "" if n is not None else "no output could be compared with the reference (see the lines)"
        return ReferenceResult(self.name, None if n is None else n == 0, cmp.lines(), numbers, reason=reason,
                               comparison=cmp)


def comparison_of(results: Sequence[CheckResult]) -> Comparison | None:
    """The reference comparison among a run's check results (None: no reference)."""
    return next((r.comparison for r in results if isinstance(r, ReferenceResult)), None)


def reference_unavailable(cmp: Comparison | None) -> dict[str, str]:
    """Why the guarantee of a run without a per-record verdict is not known: it has no reference, or the
    reference could compare nothing (empty: the comparison gives it)."""
    if cmp is None:
        return {"guarantee": NO_VERDICT}
    if cmp.guarantee() is None:
        return {"guarantee": "no output could be compared with the reference run (run.reference says why)"}
    return {}
