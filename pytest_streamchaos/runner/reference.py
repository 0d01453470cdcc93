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

**Twice, once per session.** Two fault-free runs tell what of the output is stable (a column that
differs between them -- a ``current_timestamp()``, a batch id -- is left out and named; rows that differ
make the output not comparable, never a false alarm). They are made once per session for what decides
a run's output -- the job (its file's content), its arguments, conf and environment, the inputs and their
record factories, the outputs, the seed, rate, duration, the workload's shape, the trigger, the
checkpoint's place -- and reused by every test that asks the same (:class:`References`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.facts import OutputRows
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.spec import RunInputs, RunSpec
from pytest_streamchaos.usercode import name_of

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
    of its event times, how long making them took, how often they were reused."""

    first: ChaosRun
    second: ChaosRun
    counts: tuple[int, ...]
    origin: float | None
    seconds: float
    reused: int = 0

    def rows(self) -> tuple[list[OutputRows], list[OutputRows]]:
        return list(self.first.facts.output_rows or []), list(self.second.facts.output_rows or [])


@dataclass
class References:
    """The session's reference runs, by :func:`reference_key` (one set per distinct input and job)."""

    made: dict[str, ReferenceRuns] = field(default_factory=dict)

    def get(self, key: str, make: Callable[[], ReferenceRuns]) -> ReferenceRuns:
        found = self.made.get(key)
        if found is not None:
            found.reused += 1
            return found
        self.made[key] = made = make()
        return made


def reference_key(spec: RunSpec, inputs: RunInputs, seed: int, checkpoint_kind: str) -> str:
    """What decides a run's output besides its faults, hashed: the job's file and content, its arguments,
    conf, environment and files, the inputs with their factories, the outputs, the seed, the load."""
    script = Path(spec.job)
    parts: dict[str, Any] = {
        "job": str(script), "content": hashlib.sha256(script.read_bytes()).hexdigest() if script.exists() else "",
        "args": spec.args, "conf": spec.conf, "env": spec.env, "files": spec.files, "py_files": spec.py_files,
        "inputs": spec.inputs, "factories": {k: name_of(v) if v else None for k, v in inputs.factories.items()},
        "outputs": spec.outputs, "seed": seed, "rate": spec.rate, "duration": spec.duration,
        "partitions": spec.partitions, "key_space": spec.key_space, "skew": spec.skew,
        "record_size": spec.record_size, "late_fraction": spec.late_fraction, "trigger": spec.trigger_seconds,
        "checkpoint": checkpoint_kind, "kafka_port": spec.kafka_port}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:24]


def reference_spec(spec: RunSpec) -> RunSpec:
    """The first reference run's spec: the test's run without faults, sending for :data:`SLACK_S` more, on
    fixed event times from this second, its outputs' rows read at the end."""
    return replace(spec, duration=spec.duration + SLACK_S, capture_rows=True, event_origin=float(int(time.time())),
                   input_counts=None, explored=False, end_on_recovery=False, recovery_window=None)


def make_reference(spec: RunSpec, inputs: RunInputs, execute: Callable[[RunSpec, RunInputs], ChaosRun],
                   clear: Callable[[], None] = lambda: None) -> ReferenceRuns:
    """The two fault-free runs of ``spec``'s input (``execute`` runs one; ``clear`` removes what the job of a
    run left outside it -- its checkpoint, its absolute outputs -- before the next one)."""
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
    return ReferenceRuns(first, second, counts, first_spec.event_origin, time.time() - t0)


def compared_spec(spec: RunSpec, refs: ReferenceRuns) -> RunSpec:
    """The test's run given the reference's input: the same records on the same clock, its rows read."""
    return replace(spec, capture_rows=True, input_counts=refs.counts, event_origin=refs.origin)
