"""What a search covered: the schedules that gave a verdict (singles, pairs and triples of their
counts), the fault x phase cells, the cells pruned by rule, the aim hit rate, the runs by purpose.

A run whose faults did not all land in their phases (a missed aim) counts as an attempt, not as a
schedule run: it tested something else than the schedule it was given. Confirming and shrinking runs
are counted by their purpose, never as schedules the search explored.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pytest_streamchaos.search.schedule import Outcome, Schedule

#: the purposes whose runs explore (their verdicts are the search's evidence)
EXPLORING = ("explore", "retry", "memory", "replay")
#: schedule sizes as the coverage line names them
SIZES = {1: "singles", 2: "pairs", 3: "triples"}


@dataclass
class Coverage:
    """Counts of one search. ``cells``: the (fault kind, phase) cells the space searches;
    ``pruned``: rule name -> the steps it left out; ``why``: rule name -> its reason; ``sizes``: how many
    schedules of each size (1, 2, 3 faults) the space searches (set when the search ends)."""

    cells: list[tuple[str, str]]
    pruned: dict[str, list[str]]
    why: dict[str, str]
    sizes: dict[int, int] = field(default_factory=dict)
    attempts: int = 0
    errors: int = 0
    aims: int = 0
    hits: int = 0
    by_phase: dict[str, list[int]] = field(default_factory=dict)  #: phase -> [hits, aims]
    covered: set[tuple[str, str]] = field(default_factory=set)
    purposes: Counter[str] = field(default_factory=Counter)  #: runs by purpose
    #: distinct schedules of exploring runs that gave a verdict
    verdicts: set[Schedule] = field(default_factory=set)

    def record(self, schedule: Schedule, outcome: Outcome, purpose: str = "explore") -> None:
        """Count one run of ``schedule`` made for ``purpose``."""
        self.attempts += 1
        self.purposes[purpose] += 1
        if outcome.error is not None:
            self.errors += 1
            return
        for i, step in enumerate(schedule.steps):
            hit = i < len(outcome.landed) and outcome.landed[i].hit
            self.aims += 1
            self.hits += hit
            counts = self.by_phase.setdefault(step.phase, [0, 0])
            counts[0] += hit
            counts[1] += 1
            if hit:
                self.covered.add(step.cell)
        if outcome.all_hit(schedule) and purpose in EXPLORING:
            self.verdicts.add(schedule)

    @property
    def schedules_run(self) -> int:
        """Distinct schedules explored that gave a verdict (every aim landed, no error)."""
        return len(self.verdicts)

    @property
    def hit_rate(self) -> float | None:
        """Aims that landed in their phase / aims made (None before any)."""
        return self.hits / self.aims if self.aims else None

    @property
    def cells_covered(self) -> list[tuple[str, str]]:
        return sorted(self.covered & set(self.cells))

    def by_size(self) -> dict[int, int]:
        """Schedules with a verdict by their number of faults."""
        return Counter(len(s) for s in self.verdicts)

    def summary(self) -> str:
        """One line: ``singles 7/7, pairs 2/98, triples 0/1728 with a verdict; 6/6 fault x phase cells;
        9 pruned (clean_restart 1, ...); aims hit 9/10 (90 %); runs: explore 10, confirm 1``."""
        done = self.by_size()
        sizes = ", ".join(f"{SIZES[n]} {done.get(n, 0)}/{total}" for n, total in sorted(self.sizes.items()))
        if not sizes:
            sizes = f"{self.schedules_run} schedules"
        pruned = sum(len(v) for v in self.pruned.values())
        rules = ", ".join(f"{k} {len(v)}" for k, v in self.pruned.items())
        rate = "no aims" if self.hit_rate is None else f"aims hit {self.hits}/{self.aims} ({self.hit_rate:.0%})"
        runs = ", ".join(f"{p} {n}" for p, n in self.purposes.items())
        errors = f" ({self.errors} without a verdict: an error)" if self.errors else ""
        return (f"{sizes} with a verdict; {len(self.cells_covered)}/{len(self.cells)} fault x phase cells; "
                f"{pruned} pruned{f' ({rules})' if rules else ''}; {rate}; runs: {runs or 'none'}{errors}")

    def to_dict(self) -> dict[str, object]:
        done = self.by_size()
        return {"attempts": self.attempts, "schedules_run": self.schedules_run, "errors": self.errors,
                "runs": dict(self.purposes),
                "sizes": {SIZES[n]: {"with_verdict": done.get(n, 0), "of": total}
                          for n, total in sorted(self.sizes.items())},
                "cells": [list(c) for c in self.cells], "cells_covered": [list(c) for c in self.cells_covered],
                "pruned": self.pruned, "rules": {k: self.why[k] for k in self.pruned},
                "aims": self.aims, "hits": self.hits, "hit_rate": self.hit_rate,
                "by_phase": {p: {"hits": h, "aims": a} for p, (h, a) in sorted(self.by_phase.items())}}
