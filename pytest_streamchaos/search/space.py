"""The space of schedules: built from a plain-data description of the fault kinds.

Each kind says what its fault takes down (``driver``, ``executor``, ``broker``, ``other``), which
targets it can hit (simplest first) and which phases it can be aimed at; that is all the search needs,
so the fault families' registry can hand it over as data. :class:`Space` holds the kinds and the job's
traits, answers which single steps exist, which of them the pruning rules (:mod:`.rules`) fold into
another, and in what order the search tries schedules (:meth:`Space.schedules`: single faults first,
then pairs, then triples -- CREB: 87 % of crash-recovery bugs need at most 3 crashes).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.rules import RULES, Never, Rule, Traits
from pytest_streamchaos.search.schedule import PHASES, Schedule, Step

#: triples are built from this many of the likeliest single steps (the product of all would be cubic)
TRIPLE_SINGLES = 12
#: the anchors a pair's second step may take relative to its first: the same batch (for a fault on the
#: driver: its replay) or the next one
PAIR_GAPS = (0, 1)


@dataclass(frozen=True)
class Pruned:
    """A single step left out, the rule that left it out, and the step that stands for it (None: the
    moment never comes for this job)."""

    step: Step
    rule: Rule
    instead: Step | None


class Space:
    """The schedules the search may run over ``kinds`` (names, or :class:`KindInfo`), for a job whose
    traits are known as far as ``stateful`` and ``kafka_output`` say (None: unknown, the state-commit
    cells, the output leader's cells stay in)."""

    def __init__(self, kinds: Sequence[str | KindInfo], *, stateful: bool | None = None,
                 kafka_output: bool | None = None, catalogue: dict[str, KindInfo] | None = None,
                 rules: Sequence[Rule] = RULES) -> None:
        # the fault kinds as the search sees them come from the fault registry (by name) or as KindInfo
        known = catalogue or {}
        self.kinds: dict[str, KindInfo] = {}
        for k in kinds:
            info = k if isinstance(k, KindInfo) else known.get(k)
            if info is None:
                raise ValueError(f"explore: unknown fault {k!r}; the search can aim {', '.join(known)}")
            self.kinds[info.name] = info
        if not self.kinds:
            raise ValueError("explore: no fault kinds to search (pass faults=[...])")
        self.stateful = stateful
        self.kafka_output = kafka_output
        #: phases inside the tasks a run showed this job does not have (``moment_never_came``)
        self.never_comes: set[str] = set()
        self.rules = tuple(rules)

    def all_steps(self) -> list[Step]:
        """Every single step at anchor 0: kind x target x phase, in the kinds' order."""
        return [Step(k.name, t, p) for k in self.kinds.values() for t in k.targets for p in k.phases]

    def pruned(self, step: Step) -> Pruned | None:
        """Why ``step`` is left out (the first rule that folds it), or None: it is searched."""
        info = self.kinds.get(step.kind)
        if info is None or step.target not in info.targets or step.phase not in info.phases:
            return None
        traits = Traits(self.stateful, self.kafka_output, frozenset(self.never_comes))
        for rule in self.rules:
            instead = rule.fold(info, step, traits)
            if isinstance(instead, Never):
                return Pruned(step, rule, None)
            if instead is not None and instead != step:
                return Pruned(step, rule, instead)
        return None

    def allowed(self, step: Step) -> bool:
        """Whether ``step`` is a step of this space (its kind, target and phase exist)."""
        info = self.kinds.get(step.kind)
        return info is not None and step.target in info.targets and step.phase in info.phases

    def canonical(self, step: Step) -> Step | None:
        """The searched step that stands for ``step`` (itself when no rule folds it; None when its
        moment never comes for this job)."""
        seen = {step}
        while (why := self.pruned(step)) is not None:
            if why.instead is None:
                return None
            step = why.instead
            if step in seen:  # rules that fold into each other: keep the last one reached
                break
            seen.add(step)
        return step

    def singles(self) -> list[Step]:
        """The searched single steps, likeliest to break first (phase priority, then the kinds' and
        targets' order)."""
        kinds = list(self.kinds)
        found = [s for s in self.all_steps() if self.pruned(s) is None]
        return sorted(found, key=lambda s: (PHASES[s.phase].priority, kinds.index(s.kind),
                                            self.kinds[s.kind].targets.index(s.target)))

    def pruned_cells(self) -> dict[str, list[str]]:
        """Rule name -> the steps it left out, as ``kind target phase`` (for the coverage report)."""
        out: dict[str, list[str]] = {}
        for s in self.all_steps():
            why = self.pruned(s)
            if why is not None:
                out.setdefault(why.rule.name, []).append(f"{s.kind} {s.target} {s.phase}")
        return out

    def cells(self) -> list[tuple[str, str]]:
        """The (fault kind, phase) cells the searched steps cover."""
        return sorted({s.cell for s in self.singles()})

    def schedules(self, max_faults: int = 3, shuffle: random.Random | None = None) -> Iterator[Schedule]:
        """Every schedule in search order: the singles, then pairs (the second step in the same batch
        or the next), then triples (of the :data:`TRIPLE_SINGLES` likeliest singles, same batch).
        ``shuffle``: the same schedules in a uniformly random order drawn from it instead (a baseline the
        benchmark measures the order against)."""
        if shuffle is not None:
            every = list(self._ordered(max_faults))
            shuffle.shuffle(every)
            yield from every
            return
        yield from self._ordered(max_faults)

    def count(self, max_faults: int = 3) -> dict[int, int]:
        """How many schedules of 1, 2 and 3 faults the order holds (up to ``max_faults``)."""
        n = len(self.singles())
        sizes = {1: n, 2: n * n * len(PAIR_GAPS), 3: min(n, TRIPLE_SINGLES) ** 3}
        return {k: v for k, v in sizes.items() if k <= max_faults}

    def _ordered(self, max_faults: int) -> Iterator[Schedule]:
        singles = self.singles()
        rank = {s: i for i, s in enumerate(singles)}
        for s in singles:
            yield Schedule.of(s)
        if max_faults < 2:
            return
        pairs = [(a, b, gap) for a in singles for b in singles for gap in PAIR_GAPS]
        pairs.sort(key=lambda x: (_prio(x[0]) + _prio(x[1]), x[2], rank[x[0]] + rank[x[1]], rank[x[0]]))
        for a, b, gap in pairs:
            yield Schedule.of(a, Step(b.kind, b.target, b.phase, gap))
        if max_faults < 3:
            return
        top = singles[:TRIPLE_SINGLES]
        triples = sorted(itertools.product(top, repeat=3),
                         key=lambda t: (sum(_prio(s) for s in t), sum(rank[s] for s in t), [rank[s] for s in t]))
        for t in triples:
            yield Schedule(t)


def _prio(step: Step) -> int:
    return PHASES[step.phase].priority
