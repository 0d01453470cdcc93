"""The reference run: the same job on the same input without faults, as the oracle nobody has to write
(``chaos.run(..., reference=True)``; the comparison is :mod:`pytest_streamchaos.analysis.reference`).

**The same input.** A record is a pure function of (seed, id, event time) (``workload.record_batches``),
so the input is fixed by the seed, the number of records and their event times. The first reference run
sends at the test's rate for its load (the test's ``duration`` plus :data:`SLACK_S`, so that a faulted run
whose warm-up takes longer still has input until its planned end) with event times on a clock of its
own (``origin + (n + 1) / rate``, the origin the second it was planned, shared by every input topic); the
second reference run and every run compared with them send exactly as many records on the same clock,
their load lasting until the last one is sent -- the second :data:`SECOND_PACE` times faster, so that its
micro-batches split the input otherwise than the first's.

**Twice, once.** Two fault-free runs tell what of the output is stable (a column that differs between
them -- a ``current_timestamp()``, a batch id -- is left out and named; rows that differ make the output
not comparable, never a false alarm). They are made once for what decides a run's output (its key,
:mod:`.reference_key`: the job and its modules' content, its files, arguments, conf and environment, the
inputs and their record factories, the outputs, the seed, rate, duration, the workload's shape, the
trigger, the checkpoint's place, the Spark line and the session's stack), reused by every test of the
session that asks the same, and kept in pytest's cache for the next sessions (:mod:`.reference_cache`),
which reuse it with no run at all unless ``--chaos-fresh-reference`` (:class:`References`). A run compared
with a reference kept from an earlier session sends exactly its records on its event-time clock: event times
from then, which nothing compares with the wall clock (a job's watermark follows the event times it reads;
the harness's latencies are of send and arrival times).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.facts import OutputRows
from pytest_streamchaos.history import History
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.reference_cache import ReferenceCache, Stored, when
from pytest_streamchaos.runner.reference_key import RefKey, reference_key
from pytest_streamchaos.runner.spec import RunInputs, RunSpec

__all__ = ["REFERENCES_KEY", "SECOND_PACE", "SLACK_S", "Reference", "ReferenceRuns", "References", "compared_spec",
           "make_reference", "reference_key"]

#: how much longer than the test's load the first reference run sends, in seconds
SLACK_S = 5.0
#: how much faster the second reference run sends the same records (on the same event-time clock): other
#: micro-batch boundaries than the first's, so that a column set by them (a batch id) differs between the two and
#: is left out. At one pace, two quiet runs once split the input alike, the batch id looked stable, and the
#: faulted run, split otherwise, was reported changed in 852 rows (2026-11-28)
SECOND_PACE = 1.5
#: where the session keeps its :class:`References` (``config.stash``)
REFERENCES_KEY: pytest.StashKey[References] = pytest.StashKey()


@dataclass
class ReferenceRuns:
    """The two fault-free runs of one input: their outputs' rows, the input's size per topic and the origin
    of its event times, how long making them took and when; where they came from (``made`` in this session,
    or read from the ``cache``), why they were made rather than read (:attr:`why_made`), what became of
    keeping them (:attr:`kept`), how often they were reused."""

    first: list[OutputRows]
    second: list[OutputRows]
    counts: tuple[int, ...]
    origin: float | None
    seconds: float
    made_at: float = field(default_factory=time.time)
    key: str = ""
    source: str = "made"
    why_made: str = ""
    kept: str | None = None
    reused: int = 0

    def rows(self) -> tuple[list[OutputRows], list[OutputRows]]:
        return list(self.first), list(self.second)

    def note(self) -> str:
        """The one line a run compared with this reference carries (its check's lines, ``describe()``, the
        report): how the reference was made or where it came from, and why."""
        what = f"two runs of the job without faults on the same {sum(self.counts)} input records"
        key = self.key[:12]
        if self.source == "cache":
            again = "; reused from an earlier test" if self.reused else ""
            return (f"the reference: reused from the cache (made {when(self.made_at)} in {self.seconds:.0f}s, key "
                    f"{key}{again}): {what}")
        if self.reused:
            return f"the reference: {what} (reused from an earlier test; made in {self.seconds:.0f}s)"
        kept = "kept for the next session" if self.kept is None else self.kept
        return f"the reference: {what} (made in {self.seconds:.0f}s, key {key}; made fresh: {self.why_made}; {kept})"

    @classmethod
    def of(cls, stored: Stored) -> ReferenceRuns:
        return cls(stored.first, stored.second, stored.counts, stored.origin, stored.seconds, stored.made_at,
                   stored.key, source="cache")

    def stored(self, key: RefKey, pacing: Mapping[str, float]) -> Stored:
        return Stored(key.key, key.parts, list(self.first), list(self.second), self.counts, self.origin,
                      self.seconds, self.made_at, dict(pacing))


@dataclass
class References:
    """The session's reference runs, by key (:func:`reference_key`: one set per distinct input and job),
    read from and kept in :attr:`cache` across sessions unless :attr:`fresh` (``--chaos-fresh-reference``);
    :attr:`session`: the session's settings that go into every key (the stack's shape)."""

    made: dict[str, ReferenceRuns] = field(default_factory=dict)
    cache: ReferenceCache = field(default_factory=lambda: ReferenceCache(None, "no cache given"))
    fresh: bool = False
    session: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_config(cls, config: pytest.Config, fresh: bool, session: Mapping[str, Any]) -> References:
        """The session's references, in pytest's cache (``config.cache``) unless it is off."""
        return cls(cache=ReferenceCache.for_config(config), fresh=fresh, session=dict(session))

    def get(self, key: RefKey, make: Callable[[], ReferenceRuns],
            announce: Callable[[str], None] | None = None) -> ReferenceRuns:
        """The reference of ``key``: this session's, else the cache's, else made by ``make`` (``announce`` says
        why, before the runs start) and kept in the cache."""
        found = self.made.get(key.key)
        if found is not None:
            found.reused += 1
            return found
        cached, why = self._cached(key)
        if cached is not None:
            self.made[key.key] = cached
            if announce is not None:
                announce(cached.note())
            return cached
        if announce is not None:
            announce(f"making the reference (two runs of the job without faults), key {key.short}: {why}")
        made = make()
        made.key, made.why_made = key.key, why
        made.kept = self.cache.save(made.stored(key, {"slack_s": SLACK_S, "second_pace": SECOND_PACE})) \
            if key.why_not is None and self.cache.on else "not kept"
        self.made[key.key] = made
        return made

    def _cached(self, key: RefKey) -> tuple[ReferenceRuns | None, str]:
        """The cache's entry of ``key`` when it may be used, else None and why not."""
        if key.why_not is not None:
            return None, f"not reused from the cache: {key.why_not}"
        if not self.cache.on:
            return None, self.cache.off
        if self.fresh:
            return None, "--chaos-fresh-reference refuses the cached one"
        stored, why = self.cache.load(key)
        return (ReferenceRuns.of(stored), "") if stored is not None else (None, why)


def reference_spec(spec: RunSpec) -> RunSpec:
    """The first reference run's spec: the test's run without faults, sending for :data:`SLACK_S` more, on
    fixed event times from this second, its outputs' rows read at the end."""
    return replace(spec, duration=spec.duration + SLACK_S, capture_rows=True, event_origin=float(int(time.time())),
                   input_counts=None, explored=False, end_on_recovery=False, recovery_window=None)


def make_reference(spec: RunSpec, inputs: RunInputs, execute: Callable[[RunSpec, RunInputs], History],
                   clear: Callable[[], None] = lambda: None) -> ReferenceRuns:
    """The two fault-free runs of ``spec``'s input (``execute`` runs one and hands back its history; ``clear``
    removes what the job of a run left outside it -- its checkpoint, its absolute outputs -- before the next one)."""
    t0 = time.time()
    quiet = replace(inputs, planned=[])
    first_spec = reference_spec(spec)
    first = execute(first_spec, quiet)
    clear()
    gens = list(first.facts.generators.values())
    if not gens or first.facts.output_rows is None:
        raise RunError("the reference run (the job without faults) sent no input or read no output: nothing to "
                       "compare with")
    counts = tuple(g.produced for g in gens)
    second = execute(replace(first_spec, input_counts=counts, send_pace=SECOND_PACE), quiet)
    clear()
    return ReferenceRuns(list(first.facts.output_rows), list(second.facts.output_rows or []), counts,
                         first_spec.event_origin, time.time() - t0, made_at=t0)


def compared_spec(spec: RunSpec, refs: ReferenceRuns) -> RunSpec:
    """The test's run given the reference's input: the same records on the same clock, its rows read."""
    return replace(spec, capture_rows=True, input_counts=refs.counts, event_origin=refs.origin)
