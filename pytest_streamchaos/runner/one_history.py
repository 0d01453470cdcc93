"""One running job for many fault schedules: Jepsen's one history with a nemesis (docs/explore.md#one-history).

:class:`OneHistory` starts the job once -- its topics, the prepared job (the checkpoint gate preloaded, for
whatever a later schedule aims at), the observers, the warm-up -- and then plays one schedule after another
on it (:meth:`OneHistory.segment`): each schedule's faults arm as soon as the one before it is over
(:mod:`~pytest_streamchaos.runner.phases.segment`), and each closes a *window* of the history -- the records
sent since the window before it, up to the start of the last micro-batch committed when its faults were over
(everything sent before that was read by a committed batch, so no later fault can touch it), and its own
faults. The window is recorded on the timeline (``history_window``) and judged as a view of the whole history
so far: a :class:`~pytest_streamchaos.analysis.result.ChaosRun` whose counts are the window's records and
whose faults are the window's, measured against the whole history's baseline. :meth:`OneHistory.close`
ends the load, drains and judges the whole history, every window in it.

A schedule that leaves the job unable to take another -- records lost, the driver down for good, the query
terminated, a fault that did not recover or did not happen as planned -- ends the history
(:attr:`OneHistory.broken`): the next schedule starts a fresh one.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from pytest_streamchaos.analysis.checkers import Validation
from pytest_streamchaos.analysis.judge import judge
from pytest_streamchaos.analysis.oracle import Oracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.run_metrics import uncovered
from pytest_streamchaos.events import Kind, Phase, TimelineEvent
from pytest_streamchaos.facts import LoadFacts
from pytest_streamchaos.faults.registry import release
from pytest_streamchaos.faults.spec import AIMED_ARM_AFTER
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.history import History, Window
from pytest_streamchaos.runner.context import RunContext, RunOwner, Status, check_user_code, poll_until
from pytest_streamchaos.runner.phases.drain import Drain
from pytest_streamchaos.runner.phases.job import PreparedJob, PrepareJob
from pytest_streamchaos.runner.phases.load import LoadResult
from pytest_streamchaos.runner.phases.observers import Observers, WireObservers, fault_scheduler
from pytest_streamchaos.runner.phases.segment import SegmentLoad
from pytest_streamchaos.runner.phases.topics import MakeTopics, RunTopics
from pytest_streamchaos.runner.phases.verdict import Phases, Verdict
from pytest_streamchaos.runner.phases.warmup import WarmUp, WarmUpResult
from pytest_streamchaos.runner.run import run_storage
from pytest_streamchaos.runner.spec import RunInputs, RunSpec, judged_by

#: how far before the plan of the last committed batch a window ends: a record acknowledged while that batch
#: fixed its end offsets may be read by the next one, and would be counted lost in a window it is not in
CUT_MARGIN_S = 1.0
#: how long after the last commit of a window its outputs are given to reach the collector (a sink writes a
#: batch's output before its commit; a file output is polled every 0.2 s) before its records are counted
OUTPUT_GRACE_S = 1.0


def history_key(spec: RunSpec) -> RunSpec:
    """What a job's run must repeat to play its next schedule in the same history: its spec, less what only
    plans the load around its faults."""
    return replace(spec, duration=0.0, recovery_window=None, end_on_recovery=False)


def shareable(spec: RunSpec, inputs: RunInputs, reference: bool) -> str | None:
    """Why a run cannot be one schedule of one history (None: it can): what compares or counts whole runs."""
    if reference:
        return "the run is compared with a reference run, which is a whole run's"
    if spec.real_time:
        return "the job runs in real-time mode, whose checks are a whole run's"
    if spec.input_counts is not None:
        return "the run sends a fixed input, a whole run's"
    if type(inputs.oracle).custom_report is not Oracle.custom_report:
        return "the oracle judges aggregates (no input ids in the output): a window's records cannot be told apart"
    return None


def relabelled(planned: list[PlannedFault], window: int, earliest: float) -> list[PlannedFault]:
    """A schedule's faults as window ``window`` of the history plays them: named apart from every earlier
    window's (their labels key the history's faults), an aimed one armed ``earliest`` seconds after the
    schedule arms -- not a baseline of its own each time: the history's, measured once."""
    return [PlannedFault(replace(p.spec, after=earliest if p.at is None else p.spec.after,
                                 params={**p.spec.params, "window": window}), p.occurrence, p.at, p.heal_after)
            for p in planned]


class OneHistory:
    """One job run for many schedules (see the module docstring); ``number`` counts the histories of a test."""

    def __init__(self, chaos: RunOwner, spec: RunSpec, inputs: RunInputs, number: int) -> None:
        self.chaos, self.spec, self.inputs, self.number = chaos, spec, inputs, number
        self.key = history_key(spec)
        n, chaos.started = chaos.started, chaos.started + 1
        self.dir: Path = chaos.workdir / f"run{n}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.tag = uuid.uuid4().hex[:10]
        self.windows = 0  #: windows closed so far
        self.since = -math.inf  #: where the next window begins (send time)
        #: why the history cannot take another schedule (None: it can)
        self.broken: str | None = None
        self.whole: ChaosRun | None = None  #: the whole history's verdict, once closed
        self.last_view: ChaosRun | None = None  #: the last schedule's view (what the job left, if the whole fails)
        self.planned: list[PlannedFault] = []  #: every schedule's faults, in order
        self.fault_errors: list[str] = []  #: what went wrong with them, every schedule's
        self.closed = False
        self._undo = ExitStack()
        self._cleaned = False
        self.ctx: RunContext
        self.topics: RunTopics
        self.prepared: PreparedJob
        self.obs: Observers
        self.status: Status
        self.warm: WarmUpResult | None = None

    # -- start ----------------------------------------------------------------------------------
    def start(self) -> None:
        """The topics, the job (the gate preloaded), its observers, the warm-up to steady state; everything
        started is stopped again when it fails."""
        chaos, spec = self.chaos, self.spec
        self.ctx = RunContext(chaos=chaos, spec=spec, inputs=replace(self.inputs, planned=[]), dir=self.dir,
                              storage=run_storage(chaos, spec, self.inputs, self.dir, self.tag), tag=self.tag)
        try:
            topics_phase = MakeTopics(chaos.kafka, spec, self.tag)
            self.topics = topics_phase.run()
            self._undo.callback(topics_phase.forget, self.topics)
            if spec.kafka_port:
                chaos.kafka.listen(spec.kafka_port)
                self._undo.callback(chaos.kafka.unlisten, spec.kafka_port)
            self.prepared = PrepareJob(self.ctx, self.topics, gate=True).run()
            self._undo.callback(lambda: self.ctx.warnings.extend(release(self.prepared.prepared)))
            self.obs = WireObservers(self.ctx, self.topics, self.prepared).run()
            self._undo.callback(self._cleanup)
            self.status = Status(chaos.status, self.ctx.recorder)
            self.status.watch(self.obs.generator, self.obs.collector)
            self.warm = WarmUp(self.ctx, self.prepared.job, self.obs, self.status).run()
        except BaseException:
            self.closed = True
            self._undo.close()
            raise

    def _cleanup(self) -> None:
        """Stop the faults, the load, the job and the observers, once."""
        if not self._cleaned:
            self._cleaned = True
            self.obs.cleanup(self.prepared.job)

    # -- one schedule ---------------------------------------------------------------------------
    def segment(self, spec: RunSpec, inputs: RunInputs) -> ChaosRun:
        """Play one schedule (``inputs.planned``) on the running job and judge its window (see the module
        docstring); an error leaves the history broken (its faults healed) and goes up."""
        if self.closed or self.warm is None or self.broken:
            raise RuntimeError(f"one history #{self.number} cannot take another schedule: "
                               f"{self.broken or 'it is closed'}")
        armed = time.time()
        # the history's baseline, before its first fault, is what an aimed fault's own would have been
        planned = relabelled(inputs.planned, self.windows, max(0.0, self.warm.steady + AIMED_ARM_AFTER - armed))
        ctx = replace(self.ctx, spec=spec, inputs=replace(inputs, planned=planned))
        obs, job = self.obs, self.prepared.job
        obs.scheduler = fault_scheduler(ctx, obs.faults, planned)
        try:
            WarmUp(ctx, job, obs, self.status)._check_reach()  # a job in local mode: no cluster fault reaches it
            phase = SegmentLoad(ctx, job, self.topics, obs, self.status)
            load = phase.run(armed)
            window = self._closed_window(ctx, phase, planned)
            ctx.recorder.record(Kind.HISTORY_WINDOW, "", **window.detail())
            self.since, self.windows = window.end, self.windows + 1
            view = self._view(ctx, window, load, armed)
        except BaseException as exc:
            self.broken = self.broken or f"the schedule failed: {first_line(exc)}"
            raise
        finally:
            obs.scheduler.stop()
            self.planned += planned
            self.fault_errors += obs.scheduler.errors
        self.last_view = view
        self.broken = self._why_broken(view)
        return view

    def _closed_window(self, ctx: RunContext, phase: SegmentLoad, planned: list[PlannedFault]) -> Window:
        """The schedule's window, cut where its end stands: at the last committed micro-batch, its outputs read
        (:meth:`_await_window`), and its faults still over on what was read (:meth:`SegmentLoad.confirmed`);
        else the schedule goes on and the window is cut again later."""
        labels = tuple(p.label for p in planned)
        while True:
            window = Window(self.windows, " + ".join(labels) or "no fault", self.since, self._cut(), labels)
            self._await_window(ctx, window)
            if phase.confirmed():
                return window
            phase.resume()

    def _cut(self) -> float:
        """Where the window being closed ends: the plan of the last committed micro-batch (less
        :data:`CUT_MARGIN_S`), from the checkpoint, else from Spark's progress; never before it began."""
        obs = self.obs
        planned: float | None = None
        if obs.checkpoint.found:
            done = obs.checkpoint.watcher.latest_committed_batch()
            planned = obs.checkpoint.watcher.planned_time(done) if done is not None else None
        if planned is None:
            starts = [b["t_start"] for b in obs.progress.batches if "t_start" in b]
            planned = max(starts) if starts else time.time()
        return max(self.since, planned - CUT_MARGIN_S)

    def _committed_at(self) -> float:
        """When the last committed micro-batch committed (from the checkpoint; now when unknown)."""
        watcher = self.obs.checkpoint.watcher
        done = watcher.latest_committed_batch() if self.obs.checkpoint.found else None
        at = watcher.commit_time(done) if done is not None else None
        return time.time() if at is None else min(at, time.time())

    def _await_window(self, ctx: RunContext, window: Window) -> None:
        """Give the window's outputs time to be read: until none of its records is missing (from
        :data:`OUTPUT_GRACE_S` after the last commit), or the missing ones stopped coming for ``settle_seconds``
        -- not the job's outputs: a job that drops records keeps writing the next window's --, or
        ``drain_timeout``."""
        obs, spec = self.obs, ctx.spec
        validation = Validation(ctx.inputs.oracle, spec.guarantee)
        grace = self._committed_at() + OUTPUT_GRACE_S
        missing: list[float] = [math.inf, time.time()]  # the fewest missing so far, and since when

        def in_() -> bool:
            obs.progress.poll()
            check_user_code(obs.generator, obs.collector)
            obs.supervisor.check()
            if time.time() < grace:
                return False
            report = validation.check(obs.history(ctx, self.prepared.job, self.topics).focused(window)).report
            if report is None or report.resolution != "record" or report.lost == 0:
                return True
            if report.lost < missing[0]:
                missing[:] = [report.lost, time.time()]
            return time.time() - missing[1] > spec.settle_seconds

        poll_until(in_, spec.drain_timeout)

    def _view(self, ctx: RunContext, window: Window, load: LoadResult, armed: float) -> ChaosRun:
        """The window judged as a view of the whole history so far."""
        obs = self.obs
        if obs.collector.failure is not None:
            raise obs.collector.failure
        assert self.warm is not None
        history = Verdict(ctx, Phases(topics=self.topics, prepared=self.prepared, obs=obs, warm=self.warm,
                                      load=load)).history()
        facts = replace(history.facts, load=LoadFacts(ctx.spec.duration, f"one schedule of one history (#{self.number},"
                                                      f" window {window.index})", load.ended,
                                                      round(time.time() - armed, 3)))
        view = replace(history, facts=facts).focused(window)
        return judge(view, judged_by(ctx.spec, ctx.inputs))

    def _why_broken(self, view: ChaosRun) -> str | None:
        """Why the job cannot take another schedule after ``view``'s, or None."""
        job, obs = self.prepared.job, self.obs
        # a step whose moment never came left the job as it was (its skip is no error here); a fault that failed
        # to be injected, confirmed or healed left it in a state nobody knows
        errors = [f"{f.label}: {e}" for f in view.fault_records for e in f.errors]
        if errors:
            return f"faults did not happen as planned: {errors[0]}"
        if not job.alive and not obs.supervisor.will_restart():
            return f"the job's driver is down (exit code {job.returncode})"
        if query_terminated(view.history.timeline):
            return "the streaming query terminated"
        if view.lost:
            return f"the schedule lost {view.lost} record(s)"
        if any(f.recovered is False for f in uncovered(view.faults)):
            return "the job did not recover from the schedule's faults"
        return None

    # -- the end --------------------------------------------------------------------------------
    def close(self) -> ChaosRun | None:
        """End the load, drain, and judge the whole history (None: it never reached steady state, or judging
        it failed: the failure is kept in :attr:`broken`); everything started is stopped. Idempotent."""
        if self.closed:
            return self.whole
        self.closed = True
        try:
            if self.warm is not None:
                self.whole = self._judged_whole()
        except Exception as exc:  # the schedules were judged; the whole history's account is what is lost
            self.broken = self.broken or f"judging the whole history failed: {exc}"
        finally:
            self._undo.close()
        return self.whole

    def _judged_whole(self) -> ChaosRun:
        # the whole history's plan and fault errors are every schedule's
        ctx = replace(self.ctx, inputs=replace(self.inputs, planned=self.planned))
        obs, job = self.obs, self.prepared.job
        obs.scheduler = fault_scheduler(ctx, obs.faults, [])
        obs.scheduler.errors = list(self.fault_errors)
        assert self.warm is not None
        try:
            obs.generator.stop()
            ctx.phases[Phase.LOAD_END] = time.time()
            ctx.recorder.record(Kind.LOAD_END)
            Drain(ctx, job, self.topics, obs, self.status).run()
        finally:
            self._cleanup()
        obs.progress.poll()
        tail = Window(self.windows, "after the last schedule", self.since)
        ctx.recorder.record(Kind.HISTORY_WINDOW, "", **tail.detail())
        load = LoadResult(ended=f"one history of {self.windows} schedule(s)")
        history = Verdict(ctx, Phases(topics=self.topics, prepared=self.prepared, obs=obs, warm=self.warm,
                                   load=load)).run()
        return judge(history, judged_by(ctx.spec, ctx.inputs))


def last_seen(live: OneHistory) -> History | None:
    """What an ended history's job was last seen doing, for what it left outside its directory: the whole
    history once judged, else the last window's (None: neither)."""
    last = live.whole or live.last_view
    return None if last is None else last.history


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def query_terminated(timeline: Iterable[TimelineEvent]) -> bool:
    """Whether the job's streaming query terminated after it last started."""
    marks = [e for e in sorted(timeline, key=lambda e: e.t) if e.kind in (Kind.QUERY_STARTED, Kind.QUERY_TERMINATED)]
    return bool(marks) and marks[-1].kind == Kind.QUERY_TERMINATED
