"""One running job for a module's tests (``--chaos-history=shared``; docs/shared-history.md).

Each test's plain ``chaos.run`` of a job plays its faults on the job a test before it started, as the next
window of one history (:class:`~pytest_streamchaos.runner.one_history.OneHistory`, ``@explore``'s engine): the
job starts once per test module instead of once per test. A run shares the history running when it runs the same
job with the same arguments and inputs on the same stack; otherwise -- another job, or a run that cannot be a
window (:func:`why_alone`) -- the history ends first (two jobs on the stack would each take the other's faults)
and the run starts a job of its own, or a fresh history. A test that uses the stack without ``chaos`` ends it
too (its faults would strike the shared job between two windows).

The windows tile the history: each test judges the records sent since the window before its own. When the
history ends, the records sent after the last window -- no test's -- are judged against the guarantee its runs
declared (:func:`whole_problem`); what fails there is an error at the module's end, naming the tests that
shared the history.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.runner.leftovers import clear_leftovers
from pytest_streamchaos.runner.one_history import OneHistory, history_key, last_seen, shareable
from pytest_streamchaos.runner.spec import RunInputs, RunSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_streamchaos.runner.context import RunOwner
    from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster


@dataclass
class HistoryOwner:
    """What a shared history's runs take from a ``chaos`` fixture (the
    :class:`~pytest_streamchaos.runner.context.RunOwner` protocol), kept while the history runs: the stack, the seed and
    JVM settings of the test that started the job, a directory of the module's; ``nodeid`` is the test whose
    window plays now (its run's JSON names it), ``status`` its progress line, ``fixture`` its fixtures."""

    cluster: SparkCluster
    kafka: KafkaCluster
    nodeid: str
    seed: int
    java_home: str | None
    jit: str
    workdir: Path
    progress: Callable[[str], None] | None = None
    status: Callable[[dict[str, Any]], None] | None = None
    fixture: Callable[[str], Any] | None = None
    started: int = 0

    @classmethod
    def of(cls, chaos: RunOwner, workdir: Path) -> HistoryOwner:
        return cls(cluster=chaos.cluster, kafka=chaos.kafka, nodeid=chaos.nodeid, seed=chaos.seed,
                   java_home=chaos.java_home, jit=chaos.jit, workdir=workdir, progress=chaos.progress,
                   status=chaos.status, fixture=chaos.fixture)


def inputs_key(inputs: RunInputs) -> tuple[Any, ...]:
    """What of a run's inputs its window must share with the history's job: everything but its faults and why
    its load lasts what it does (a callable is the same only when it is the same object: a lambda written in
    each test makes each test's run a job of its own)."""
    oracle = inputs.oracle
    return (inputs.script, type(oracle), tuple(sorted(vars(oracle).items(), key=lambda kv: kv[0])),
            inputs.id_reader, inputs.params, sorted(inputs.factories.items(), key=lambda kv: kv[0]),
            sorted(inputs.output_ids.items(), key=lambda kv: kv[0]),
            sorted(inputs.annotate.items(), key=lambda kv: kv[0]), inputs.real_time, inputs.urls)


def same(a: Any, b: Any) -> bool:
    """Whether two keys are equal; a value whose equality is not a bool (a numpy array an oracle holds) makes
    them different: a job of its own, never a wrong window."""
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


def why_alone(spec: RunSpec, inputs: RunInputs, *, reference: bool, repeats: int) -> str | None:
    """Why a plain run cannot be a window of a shared history (None: it can)."""
    if repeats > 1:
        return f"the test repeats its run (repeat={repeats}): each repetition is a whole run of its own"
    if inputs.urls:
        return "the job names object-store paths, whose service is the test's"
    return shareable(spec, inputs, reference)


@dataclass
class SharedHistories:
    """A test module's shared histories (see the module docstring): at most one running at a time."""

    workdir: Path  #: the directory of the histories' runs
    live: OneHistory | None = None
    owner: HistoryOwner | None = None
    key: tuple[Any, ...] = ()
    tests: list[str] = field(default_factory=list)  #: the tests whose windows the live history played
    #: what went wrong in every ended history, one line each (the module fails on them at its end)
    failures: list[str] = field(default_factory=list)
    #: one line per ended history: how many windows, which tests, how it ended (the session's summary)
    accounts: list[str] = field(default_factory=list)
    #: one line per run that needed a job of its own, and why
    alone: list[str] = field(default_factory=list)
    count: int = 0  #: histories started

    def run(self, chaos: RunOwner, spec: RunSpec, inputs: RunInputs) -> ChaosRun:
        """``chaos``'s run as the next window of the history running now, or of a fresh one."""
        key = (id(chaos.cluster), id(chaos.kafka), history_key(spec), inputs_key(inputs))
        live = self.live
        if live is not None and (live.broken or not same(key, self.key)):
            self.end(str(live.broken) if live.broken else f"{chaos.nodeid} runs another job or other arguments")
            live = None
        if live is None:
            live = self._start(chaos, spec, inputs, key)
        owner = self.owner
        assert owner is not None
        owner.nodeid, owner.status, owner.fixture = chaos.nodeid, chaos.status, chaos.fixture
        live.status.callback = chaos.status  # the progress line of the test playing now
        self.tests.append(chaos.nodeid)
        try:
            return live.segment(spec, inputs)
        finally:
            live.status.callback = None

    def _start(self, chaos: RunOwner, spec: RunSpec, inputs: RunInputs, key: tuple[Any, ...]) -> OneHistory:
        workdir = self.workdir / f"history{self.count}"
        workdir.mkdir(parents=True, exist_ok=True)
        self.owner = HistoryOwner.of(chaos, workdir)
        live = OneHistory(self.owner, spec, inputs, self.count)
        self.count += 1
        self.key, self.tests = key, []
        try:
            live.start()
        except BaseException:
            self.live = None
            raise
        self.live = live
        return live

    def end(self, why: str) -> None:
        """End the history running now, if any: drain, judge the records after its last window against the
        guarantee its runs declared, stop the job, clear what it left outside its directory; a failure is kept
        for the module's end."""
        live, self.live = self.live, None
        if live is None:
            return
        t0 = time.time()
        whole = live.close()
        tests = ", ".join(dict.fromkeys(self.tests)) or "no test"
        problem = whole_problem(whole, live.broken, live.windows)
        self.accounts.append(f"shared history #{live.number}: {live.windows} window(s) of {tests}; ended: {why}; "
                             + (f"whole: {whole.sent} sent, lost {whole.lost}, duplicates {whole.duplicates}"
                                if whole is not None else "whole: not judged")
                             + f" (closed in {time.time() - t0:.1f}s)")
        if problem is not None:
            self.failures.append(f"shared history #{live.number} of {tests}: {problem}")
            self.accounts.append(f"FAILED on the whole: {problem}")
        seen = last_seen(live)
        if seen is not None and self.owner is not None:
            clear_leftovers([seen], self.owner.workdir)

    def finish(self) -> None:
        """The module's end: the history ended, and a failure (no traceback: the harness's code is not the
        story) naming every ended history's failure."""
        self.end("the module's tests ended")
        if self.failures:
            pytest.fail("a shared history failed on the whole (--chaos-history=shared; docs/shared-history.md):\n  "
                        + "\n  ".join(self.failures), pytrace=False)


#: where the session keeps every module's :class:`SharedHistories` (``config.stash``), once a test asked for one
SHARED_KEY: pytest.StashKey[list[SharedHistories]] = pytest.StashKey()


def whole_problem(whole: ChaosRun | None, broken: str | None, windows: int) -> str | None:
    """What fails a shared history when it ends (None: nothing): the records sent after its last test's window
    -- no test judged them; each earlier record was its window's test's to judge -- not delivered under the
    declared guarantee, or a whole that could not be judged when the windows had been (``broken`` says why).
    ``windows``: how many windows the tests closed (the tail is the next)."""
    if whole is None:
        return f"the whole history could not be judged: {broken}" if broken and broken.startswith("judging") else None
    tail = next((w for w in whole.windows if w.window.index == windows), None)
    if tail is None or tail.ok is not False:
        return None
    return (f"the records sent after the last test's window, which no test judged, broke the declared "
            f"{tail.declared}: {tail.describe()}")
