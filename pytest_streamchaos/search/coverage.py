"""What a search covered: schedules run, fault x phase cells, cells pruned by rule, the aim hit rate.

A run whose faults did not all land in their phases (a missed aim) counts as an attempt, not as a
schedule run: it tested something else than the schedule it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.search.schedule import Outcome, Schedule


@dataclass
class Coverage:
    """Counts of one search. ``cells``: the (fault kind, phase) cells the space searches;
    ``pruned``: rule name -> the steps it left out; ``why``: rule name -> its reason."""

    cells: list[tuple[str, str]]
    pruned: dict[str, list[str]]
    why: dict[str, str]
    attempts: int = 0
    schedules_run: int = 0
    errors: int = 0
    aims: int = 0
    hits: int = 0
    by_phase: dict[str, list[int]] = field(default_factory=dict)  #: phase -> [hits, aims]
    covered: set[tuple[str, str]] = field(default_factory=set)

    def record(self, schedule: Schedule, outcome: Outcome) -> None:
        """Count one run of ``schedule`` (any purpose: exploring, confirming, shrinking)."""
        self.attempts += 1
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
        if outcome.all_hit(schedule):
            self.schedules_run += 1

    @property
    def hit_rate(self) -> float | None:
        """Aims that landed in their phase / aims made (None before any)."""
        return self.hits / self.aims if self.aims else None

    @property
    def cells_covered(self) -> list[tuple[str, str]]:
        return sorted(self.covered & set(self.cells))

    def summary(self) -> str:
        """One line: ``7 schedules run (8 attempts), 6/9 fault x phase cells, 9 pruned (clean_restart 1,
        ...), aims hit 9/10 (90 %)``."""
        pruned = sum(len(v) for v in self.pruned.values())
        rules = ", ".join(f"{k} {len(v)}" for k, v in self.pruned.items())
        rate = "no aims" if self.hit_rate is None else f"aims hit {self.hits}/{self.aims} ({self.hit_rate:.0%})"
        errors = f", {self.errors} without a verdict" if self.errors else ""
        return (f"{self.schedules_run} schedules run ({self.attempts} attempts{errors}), "
                f"{len(self.cells_covered)}/{len(self.cells)} fault x phase cells, "
                f"{pruned} pruned{f' ({rules})' if rules else ''}, {rate}")

    def to_dict(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "schedules_run": self.schedules_run, "errors": self.errors,
                "cells": [list(c) for c in self.cells], "cells_covered": [list(c) for c in self.cells_covered],
                "pruned": self.pruned, "rules": {k: self.why[k] for k in self.pruned},
                "aims": self.aims, "hits": self.hits, "hit_rate": self.hit_rate,
                "by_phase": {p: {"hits": h, "aims": a} for p, (h, a) in sorted(self.by_phase.items())}}
