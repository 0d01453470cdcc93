"""The reference check: the run's outputs, row by row, against the same job's outputs on the same input
without faults (:mod:`pytest_streamchaos.analysis.reference`), for jobs whose output is not one record per
input -- aggregates, joins, sessions, MERGE into a table -- where no oracle was written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_streamchaos.events import Kind, Phase
from pytest_streamchaos.facts import OutputRows, RunFacts
from pytest_streamchaos.history import History

from ..checker import CheckResult
from ..reference import Comparison, Reference, compare
from .guarantee import no_verdict


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
                   "compared": cmp.compared, "left_out": cmp.left_out, "guarantee": cmp.guarantee()}
        unknown = next((o for o in cmp.outputs if o.count is None), None)
        reason = "" if unknown is None else f"{unknown.name} could not be compared: {unknown.unstable}"
        lines = cmp.lines()
        behind = not_caught_up(history)
        if behind and n:
            numbers["caught_up"] = False
            lines.append(f"note: {behind}")
        # a divergence is a violation; none found is a pass only if every output was compared
        ok = False if n else (True if n == 0 and unknown is None else None)
        return ReferenceResult(self.name, ok, lines, numbers, reason=reason, comparison=cmp)


def not_caught_up(history: History) -> str:
    """Why a divergence may be the run's unfinished work rather than a wrong output: the drain ended before the
    job had committed the input's end offsets (empty: it had, or the run has no drain). The reference runs
    processed all of the input, so rows of input the job had not reached show as missing or changed keys --
    counted as the run's, as the per-record verdict counts such ids lost, but named so it is not read as a
    replay's damage."""
    if history.phase(Phase.DRAIN_END) is None or any(e.kind == Kind.CAUGHT_UP for e in history.timeline):
        return ""
    return ("the job had not committed the input's end offsets when the drain ended, so input it had not "
            "processed yet shows as missing or changed rows; a longer Timing(drain_timeout=...) lets it catch up")


def comparison_of(results: Sequence[CheckResult]) -> Comparison | None:
    """The reference comparison among a run's check results (None: no reference)."""
    return next((r.comparison for r in results if isinstance(r, ReferenceResult)), None)


def reference_unavailable(cmp: Comparison | None, facts: RunFacts | None = None) -> dict[str, str]:
    """Why the guarantee of a run without a per-record verdict is not known: it has no reference, or the
    reference could not vouch for it (empty: the comparison gives it)."""
    if cmp is None:
        return {"guarantee": no_verdict(facts)}
    if cmp.guarantee() is None:
        unknown = next((o for o in cmp.outputs if o.count is None), None)
        why = f"{unknown.name}: {unknown.unstable}" if unknown is not None else "no output had rows to compare"
        return {"guarantee": f"the reference comparison cannot vouch for it ({why})"}
    return {}
