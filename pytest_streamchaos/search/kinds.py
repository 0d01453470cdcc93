"""A fault kind as the search sees it: plain data, so the fault families' registry can hand it over."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_streamchaos.search.schedule import phase

#: what a fault can take down; the pruning rules reason about these roles
ROLES = ("driver", "executor", "broker", "other")


@dataclass(frozen=True)
class KindInfo:
    """One fault kind as the search sees it. ``targets`` simplest first; ``interchangeable``: groups of
    targets that are the same by symmetry (two workers with one executor each)."""

    name: str
    takes_down: str
    targets: tuple[str, ...]
    phases: tuple[str, ...]
    interchangeable: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.takes_down not in ROLES:
            raise ValueError(f"{self.name}: takes_down={self.takes_down!r}; one of {', '.join(ROLES)}")
        if not self.targets or not self.phases:
            raise ValueError(f"{self.name}: a kind the search can aim needs at least one target and one phase")
        for p in self.phases:
            phase(p)
