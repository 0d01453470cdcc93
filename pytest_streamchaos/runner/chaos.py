"""The ``chaos`` fixture's runner: :class:`Chaos` and its ``run``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_streamchaos import storages
from pytest_streamchaos.analysis.judge import Compared, judge
from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.history import History
from pytest_streamchaos.observe.storage import Place, locate
from pytest_streamchaos.runner.leftovers import clear_leftovers
from pytest_streamchaos.runner.one_history import OneHistory, history_key, last_seen, shareable
from pytest_streamchaos.runner.reference import ReferenceRuns, References, compared_spec, make_reference
from pytest_streamchaos.runner.reference_key import reference_key, stack_part
from pytest_streamchaos.runner.run import Run
from pytest_streamchaos.runner.shared import SharedHistories, why_alone
from pytest_streamchaos.runner.spec import (
    JobPlace,
    RunGroups,
    RunInputs,
    RunSpec,
    build_run,
    check_checkpoint,
    judged_by,
)
from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster
from pytest_streamchaos.workload.seed import resolve_seed


class Chaos:
    """The ``chaos`` fixture's runner (:class:`~pytest_streamchaos.harness.ChaosFixture` holds it): runs the user's
    job on the stack under load with the test's faults.

    ``faults`` come from the test's fault marks (validated at collection). Every finished run is kept
    in :attr:`runs` for the SLA marks, the terminal summary and ``--chaos-report``.
    """

    def __init__(self, *, cluster: SparkCluster, kafka: KafkaCluster, workdir: Path, faults: Sequence[FaultSpec] = (),
                 test_dir: Path | None = None, rootdir: Path | None = None, nodeid: str = "",
                 java_home: str | None = None, jit: str = "quick", seed: int | None = None,
                 status: Callable[[dict[str, Any]], None] | None = None,
                 progress: Callable[[str], None] | None = None, checkpoint: str = storages.DEFAULT,
                 fixture: Callable[[str], Any] | None = None, references: References | None = None,
                 shared: SharedHistories | None = None) -> None:
        check_checkpoint(checkpoint)
        self.cluster = cluster
        self.kafka = kafka  # the per-test view (unique topic names)
        self.workdir = Path(workdir)
        self.faults = list(faults)
        self.test_dir = test_dir
        self.rootdir = rootdir
        self.nodeid = nodeid
        self.java_home = java_home or None
        self.jit = jit  # the job JVMs' JIT mode (spark.launcher.QUICK_JIT)
        self.seed = resolve_seed(nodeid, seed)  # the workload seed: stable per test id unless given
        self.runs: list[ChaosRun] = []
        #: runs started, failed ones included: each gets a directory of its own (a run that failed must not
        #: hand its checkpoint to the next)
        self.started = 0
        #: called about once a second while a run goes on, with the fields of
        #: :class:`~pytest_streamchaos.runner.context.Status` (the plugin's live progress line); None: nobody listens
        self.status = status
        #: where a line goes while something slow happens once (Spark's Kafka connector resolved)
        self.progress = progress
        #: where runs keep their checkpoints unless a run says otherwise (``--chaos-checkpoint``)
        self.checkpoint = checkpoint
        #: a fixture by name (``request.getfixturevalue``): the service of a checkpoint storage, started on first
        #: use (None: no storage but this host's disk)
        self.fixture = fixture
        #: the runs are ``@explore``'s (its body sets it): each load ends once its schedule played out
        self.explored = False
        #: the session's reference runs (``reference=``), made once per job and input, reused across tests
        self.references = references if references is not None else References()
        self._last: History | None = None  #: the last run executed (what it left outside is cleared next)
        #: @explore's one history (docs/explore.md#one-history): its body sets this for a run that plays its
        #: schedule on the job already running, as the next window of one history
        self.share_history = False
        self.history: OneHistory | None = None  #: the one history running now
        self.histories: list[OneHistory] = []  #: every one history of the test, in order
        #: why the body's runs cannot share one history (the first that could not), or None
        self.unshared: str | None = None
        self.body_calls = 0  #: ``run`` calls since the body began (the explored body resets it)
        #: the module's shared history (``--chaos-history=shared``; None: every plain run a job of its own)
        self.shared = shared
        self.repeats = 1  #: how many times the run being made is repeated (a repeated run is never a window)

    def run(self, job: str | Path, groups: RunGroups, guarantee: str = "at-least-once") -> ChaosRun:
        """One run of ``job`` with the test's faults, and its verdict: the ``chaos`` fixture's call, its flat
        arguments folded into their ``groups`` (:meth:`pytest_streamchaos.harness.ChaosFixture.run`, where every
        argument is written and documented, once)."""
        spec, run_inputs = build_run(job, place=JobPlace(test_dir=self.test_dir, rootdir=self.rootdir),
                                     faults=self.faults, groups=groups, guarantee=guarantee,
                                     default_checkpoint=self.checkpoint, explored=self.explored,
                                     stack=(self.cluster, self.kafka))
        ref = Reference.of(groups.watch.reference)
        self.body_calls += 1
        if self.shared is not None:
            view = self._in_shared(spec, run_inputs, ref is not None)
            if view is not None:
                return view
        if self.share_history:
            why = ("the body calls chaos.run more than once" if self.body_calls > 1
                   else shareable(spec, run_inputs, ref is not None))
            if why is None:
                view = self._in_history(spec, run_inputs)
                self.runs.append(view)
                return view
            self.unshared = self.unshared or why
        self.close_history()  # a job of its own: the one running now goes first
        if ref is not None:
            run_inputs = replace(run_inputs, reference=ref)  # its columns are checked before the load
        compared = None
        if ref is not None:
            refs = self._reference(spec, run_inputs)
            spec = compared_spec(spec, refs)
            compared = Compared(*refs.rows(), ref, [refs.note()])
        result = judge(self._execute(spec, run_inputs), judged_by(spec, run_inputs, compared))
        self.runs.append(result)
        return result

    def _in_shared(self, spec: RunSpec, inputs: RunInputs, reference: bool) -> ChaosRun | None:
        """The run as a window of the module's shared history (None: it needs a job of its own, and the shared
        one is ended first: two jobs on the stack would each take the other's faults)."""
        assert self.shared is not None
        why = ("the test is explored: its schedules run on jobs of its own" if self.explored
               else why_alone(spec, inputs, reference=reference, repeats=self.repeats))
        if why is not None:
            self.shared.end(f"{self.nodeid} runs a job of its own")
            said = f"{self.nodeid}: a job of its own: {why}"
            if said not in self.shared.alone:  # an explored test's every schedule: said once
                self.shared.alone.append(said)
            return None
        view = self.shared.run(self, spec, inputs)
        self.runs.append(view)
        return view

    def _reference(self, spec: RunSpec, inputs: RunInputs) -> ReferenceRuns:
        """The reference of ``spec``'s job and input: this session's, pytest's cache's, or made now."""
        key = reference_key(spec, inputs, self.seed, stack_part(type(self.cluster).__name__,
                                                                self.references.session))
        return self.references.get(key, lambda: make_reference(spec, inputs, self._execute, self._clear_leftovers),
                                   self.progress)

    def _execute(self, spec: RunSpec, inputs: RunInputs) -> History:
        """One run of the stack's life cycle (:class:`~pytest_streamchaos.runner.run.Run`) and its history, for
        the judge (a reference run's is read, not judged); its leftovers outside the run's directory stay for the
        next run to clear (:meth:`_clear_leftovers`). Test seam: a subclass hands back synthetic histories."""
        history = Run(self, spec, inputs).execute()
        self._last = history
        return history

    def _clear_leftovers(self) -> None:
        """What the last run's job left outside the run's directory, removed (its checkpoint, its outputs; on the
        object store too)."""
        if self._last is not None:
            clear_leftovers([self._last], self.workdir, self._place)

    def _place(self, url: str) -> Place:
        """The place of a URL on a storage's service (started by its fixture)."""
        entry = storages.of_scheme(url.split("://", 1)[0])
        if entry is None or entry.fixture is None or self.fixture is None:
            raise ValueError(f"{url}: no storage of the stack serves it")
        return locate(url, self.fixture(entry.fixture))

    def _in_history(self, spec: RunSpec, inputs: RunInputs) -> ChaosRun:
        """The run's schedule as the next window of the one history running now -- or of a fresh one when none
        runs, the one running is broken, or it runs the job with other arguments."""
        live = self.history
        if live is not None and (live.broken or live.key != history_key(spec)):
            self.close_history()
            live = None
        if live is None:
            self._clear_leftovers()
            live = OneHistory(self, spec, inputs, len(self.histories))
            self.histories.append(live)
            live.start()
            self.history = live
        return live.segment(spec, inputs)

    def close_history(self) -> ChaosRun | None:
        """End the one history running now, if any: drain, judge the whole (its verdict, or None when it could
        not be judged), stop the job and clear what it left outside its directory."""
        live, self.history = self.history, None
        if live is None:
            return None
        whole = live.close()
        seen = last_seen(live)
        if seen is not None:
            self._last = seen
            self._clear_leftovers()
        return whole

