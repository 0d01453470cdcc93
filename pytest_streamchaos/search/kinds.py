"""A fault kind as the search sees it: plain data, so the fault families' registry can hand it over."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_streamchaos.search.schedule import phase

#: what a fault can take down; the pruning rules reason about these roles
ROLES = ("driver", "executor", "broker", "other")
#: what the job does through a target: reads its input, writes its output
SERVES = ("input", "output")


@dataclass(frozen=True)
class KindInfo:
    """One fault kind as the search sees it. ``targets`` simplest first; ``interchangeable``: groups of
    targets that are the same by symmetry (two workers with one executor each); ``serves``: (target,
    ``input`` or ``output``) for a target the job reads or writes through (a partition's leader)."""

    name: str
    takes_down: str
    targets: tuple[str, ...]
    phases: tuple[str, ...]
    interchangeable: tuple[tuple[str, ...], ...] = ()
    serves: tuple[tuple[str, str], ...] = ()

    def served_by(self, target: str) -> str | None:
        """What the job does through ``target``: ``input`` (reads), ``output`` (writes), None (neither said)."""
        return dict(self.serves).get(target)

    def __post_init__(self) -> None:
        if self.takes_down not in ROLES:
            raise ValueError(f"{self.name}: takes_down={self.takes_down!r}; one of {', '.join(ROLES)}")
        if not self.targets or not self.phases:
            raise ValueError(f"{self.name}: a kind the search can aim needs at least one target and one phase")
        for p in self.phases:
            phase(p)
        for target, what in self.serves:
            if target not in self.targets or what not in SERVES:
                raise ValueError(f"{self.name}: serves ({target!r}, {what!r}): a target of {self.targets} and "
                                 f"one of {', '.join(SERVES)}")
