"""The moments an aimed fault (``when=...``) waits for, and where in the micro-batch cycle it landed.

A fault kind names the moments it can aim at (``FaultKind.moments``); each moment here is a
:class:`Moment`: its name, one line saying what it is, and a detector factory. A detector, bound to a
run's :class:`~.context.FaultContext`, watches the query's checkpoint (``offsets/N`` written when
batch N is planned, ``commits/N`` once its sink finished) and the output's stamps, and returns an
:class:`Aim` once the moment has come -- the scheduler injects at once -- or None when it did not come
in time. A new moment is one more entry in :data:`MOMENTS`. The micro-batch phases of the schedule search
(``output_visible_uncommitted``, ``between_batches``, ``offsets_logged``, ``state_commit``) are landed
by the checkpoint gate (:mod:`.gate_moments`), which the run preloads into the job when one is planned.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.context import FaultContext, worker_index
from pytest_streamchaos.faults.gate_moments import Gate, gate_of, gated_moment, no_state_commit
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.history import Aim  # where a fault landed is history: the analysis reads it
from pytest_streamchaos.poll import poll

#: the micro-batch phases an aimed fault can land in, in cycle order: nothing planned beyond the last
#: commit; offsets logged and tasks running with nothing written yet; output written, not committed;
#: committed
PHASES = ("idle", "running", "sink_written", "committed")

POLL_S = 0.005
#: how many micro-batches an aimed fault tries before it fires anyway and reports ``missed``
MAX_AIM_ATTEMPTS = 5
#: without a broker's append stamp, output that reached the collector this long after a batch was planned
#: is taken to be that batch's (the previous batch's output is read a little late)
ARRIVAL_SLACK_S = 0.06


#: a moment detector: ``(planned, stop, deadline)`` -> an :class:`Aim` once the moment came (the
#: scheduler injects at once), or None when it did not come before ``deadline`` or ``stop``
MomentDetector = Callable[[PlannedFault, threading.Event, float], "Aim | None"]


@dataclass(frozen=True)
class Moment:
    """A moment an aimed fault can wait for: its ``name`` (the mark's ``when=``), what it is, and the
    factory of its detector for one run."""

    name: str
    description: str
    detector: Callable[[FaultContext], MomentDetector]


def written_since_planned(ctx: FaultContext, batch: int) -> bool:
    """Whether output written after ``batch`` was planned has been seen: that batch's sink has written
    (the previous batch's output was flushed before its commit, which precedes this batch's offsets)."""
    checkpoint, collector = ctx.aimed()
    started = checkpoint.planned_time(batch)
    if started is None:
        return False
    written = collector.last_written
    if written is not None:
        return written > started
    last = collector.last_arrival
    return last is not None and last > started + ARRIVAL_SLACK_S


def batch_phase(ctx: FaultContext, batch: int | None) -> str:
    """The phase of micro-batch ``batch`` now (:data:`PHASES`)."""
    if batch is None:
        return "idle"
    done = ctx.aimed()[0].latest_committed_batch()
    if done is not None and done >= batch:
        return "committed"
    return "sink_written" if written_since_planned(ctx, batch) else "running"


def wait_uncommitted_output(ctx: FaultContext) -> MomentDetector:
    """Moment detector: micro-batch N's output is visible in the output topic, but N is not yet in
    the checkpoint's ``commits/``. When it sees the output it freezes the driver (SIGSTOP of its
    group) and takes the batch's phase: a frozen driver cannot commit, so the kill that follows lands
    exactly in the window where at-least-once sinks duplicate. If the commit won the race it resumes
    the driver and tries the next batch; after :data:`MAX_AIM_ATTEMPTS` it fires anyway, ``missed``."""

    def wait(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        cp, job = ctx.aimed()[0], ctx.job
        attempts = 0

        def aimed() -> Aim | None:
            nonlocal attempts
            n = cp.uncommitted_batch()
            if n is None or not written_since_planned(ctx, n):
                return None
            job.pause()
            attempts += 1
            phase = batch_phase(ctx, n)
            if phase == "sink_written" or attempts >= MAX_AIM_ATTEMPTS:
                return Aim(UNCOMMITTED_OUTPUT, n, phase, phase == "sink_written", attempts)
            job.resume()
            return None

        return _aim_until(aimed, stop, deadline)

    return wait


def wait_tasks_running(ctx: FaultContext) -> MomentDetector:
    """Moment detector: a micro-batch is executing (planned in ``offsets/``, not committed) and the
    chosen worker runs an executor, so its tasks are in flight. The phase is taken at that instant;
    a batch that committed meanwhile is retried like a missed output moment."""

    def wait(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        attempts, tried = 0, None

        def aimed() -> Aim | None:
            nonlocal attempts, tried
            n = ctx.aimed()[0].uncommitted_batch()
            if n is None or n == tried or not ctx.cluster.executors(worker_index(ctx, planned)):
                return None
            attempts, tried = attempts + 1, n
            phase = batch_phase(ctx, n)
            hit = phase in ("running", "sink_written")
            return Aim(TASKS_RUNNING, n, phase, hit, attempts) if hit or attempts >= MAX_AIM_ATTEMPTS else None

        return _aim_until(aimed, stop, deadline)

    return wait


def _aim_until(aimed: Callable[[], Aim | None], stop: threading.Event, deadline: float) -> Aim | None:
    """Poll ``aimed`` every :data:`POLL_S` until it finds the moment (its :class:`Aim`), ``stop`` is set
    or ``deadline`` (on ``time.time()``) passes (None then)."""

    def found() -> Aim | bool | None:
        if stop.is_set() or time.time() >= deadline:
            return True  # given up: never aimed past the deadline
        return aimed()

    try:
        got = poll(found, deadline - time.time(), lambda _: TimeoutError(), interval=POLL_S, clock=time.time)
    except TimeoutError:
        return None
    return got if isinstance(got, Aim) else None


UNCOMMITTED_OUTPUT = "uncommitted_output"
TASKS_RUNNING = "tasks_running"
#: the micro-batch phases the checkpoint gate lands (docs/explore.md): the search's phase names
OUTPUT_VISIBLE_UNCOMMITTED = "output_visible_uncommitted"
BETWEEN_BATCHES = "between_batches"
OFFSETS_LOGGED = "offsets_logged"
STATE_COMMIT = "state_commit"


def gated(phase: str) -> Callable[[FaultContext], MomentDetector]:
    """The detector factory of a moment the checkpoint gate lands (``faults.gate_moments``): the run's gate
    holds the thread that renames the phase's checkpoint file, the fault fires while it holds (a hit by
    construction). A run without the gate (an HDFS checkpoint: its renames are RPCs) polls
    ``output_visible_uncommitted`` as :data:`UNCOMMITTED_OUTPUT`; the other gated phases are refused
    before such a run starts (``FaultKind.refused_by_run``), so they never wait here in vain."""

    def factory(ctx: FaultContext) -> MomentDetector:
        gate = gate_of(ctx.prepared)
        if gate is not None and ctx.checkpoint is not None:
            held = _recording_hold(ctx, gate, gated_moment(gate, ctx.checkpoint, phase, holds=gate.holds))
            return _saying_why_not(ctx, held) if phase == STATE_COMMIT else held
        if phase == OUTPUT_VISIBLE_UNCOMMITTED:
            return wait_uncommitted_output(ctx)

        def never(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
            return None

        return never

    return factory

#: every moment an aimed fault can wait for, by name
MOMENTS: dict[str, Moment] = {m.name: m for m in (
    Moment(UNCOMMITTED_OUTPUT, "a micro-batch's output is visible and the batch is not committed yet (the driver is "
                               "frozen until the fault fires)", wait_uncommitted_output),
    Moment(TASKS_RUNNING, "a micro-batch is planned, not committed, and the chosen worker runs an executor (a step "
           "of an explored schedule: an executor's task held by the checkpoint gate before renaming its output)",
           lambda ctx: tasks_running(ctx)),
    Moment(OUTPUT_VISIBLE_UNCOMMITTED, "batch N's sink is done and commits/N not written: the driver's thread is "
           "held by the checkpoint gate before that rename (polled as uncommitted_output on HDFS)",
           gated(OUTPUT_VISIBLE_UNCOMMITTED)),
    Moment(BETWEEN_BATCHES, "commits/N written, batch N+1 not planned: the driver held by the checkpoint gate after "
           "that rename (a local checkpoint)", gated(BETWEEN_BATCHES)),
    Moment(OFFSETS_LOGGED, "offsets/N written, no task of batch N yet: the driver held by the checkpoint gate after "
           "that rename (a local checkpoint)", gated(OFFSETS_LOGGED)),
    Moment(STATE_COMMIT, "a task committing its state store's next version (N.delta; RocksDB: N.changelog, or N.zip "
           "without changelog checkpointing): the executor's task held by the checkpoint gate before that rename (a "
           "local checkpoint, a stateful job)", gated(STATE_COMMIT)),
)}


def _recording_hold(ctx: FaultContext, gate: Gate, wait: MomentDetector) -> MomentDetector:
    """``wait``, recording each hold of the gate on the run's timeline (``checkpoint_held``: the log and
    batch of the held rename, before or after it, the held process and thread, and the file) -- the
    evidence of where the fault landed, beside the aim."""

    def recorded(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        found = wait(planned, stop, deadline)
        if found is not None and gate.holds and ctx.recorder is not None:
            h = gate.holds[-1]
            ctx.recorder.record(Kind.CHECKPOINT_HELD, f"{h.log}/{h.batch}", t=h.t, log=h.log, when=h.when,
                                batch=h.batch, pid=h.pid, thread=h.thread, path=h.path)
        return found

    return recorded


def _saying_why_not(ctx: FaultContext, wait: MomentDetector) -> MomentDetector:
    """``wait`` for a state store commit; when it never came, the run's timeline says why, if the
    checkpoint tells (``moment_unreachable``: the query keeps no state, or its state store's files are
    not ones the gate knows)."""

    def waited(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        found = wait(planned, stop, deadline)
        why = no_state_commit(ctx.checkpoint) if found is None else None
        if why is not None and ctx.recorder is not None:
            ctx.recorder.record(Kind.MOMENT_UNREACHABLE, STATE_COMMIT, reason=why)
        return found

    return waited


def tasks_running(ctx: FaultContext) -> MomentDetector:
    """The ``tasks_running`` detector: polled for a mark's fault (:func:`wait_tasks_running`); for a step of
    an explored schedule, when the run has the checkpoint gate, gated (a task held before renaming its
    output: nothing of the batch is visible yet)."""
    polled = wait_tasks_running(ctx)
    gate = gate_of(ctx.prepared)
    if gate is None or ctx.checkpoint is None:
        return polled
    gated_wait = _recording_hold(ctx, gate, gated_moment(gate, ctx.checkpoint, TASKS_RUNNING, holds=gate.holds))

    def wait(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        step = getattr(getattr(planned, "spec", None), "anchor", None) is not None
        return (gated_wait if step else polled)(planned, stop, deadline)

    return wait


def after_fire(ctx: FaultContext, stops_driver: Callable[[PlannedFault], bool]) -> Callable[[PlannedFault], None]:
    """What lets the job go on once an aimed fault took effect: the checkpoint gate's held thread is
    released; a driver the polled output moment froze (SIGSTOP) is resumed, unless the fault was one
    that stops the driver itself (a kill of it: it is gone, and its heal restarts it)."""
    gate = gate_of(ctx.prepared)

    def release(planned: PlannedFault) -> None:
        if gate is not None:
            gate.release()
        elif planned.spec.when in (UNCOMMITTED_OUTPUT, OUTPUT_VISIBLE_UNCOMMITTED) and not stops_driver(planned):
            ctx.job.resume()

    return release


def detectors(ctx: FaultContext) -> dict[str, MomentDetector]:
    """Every moment's detector, bound to one run."""
    return {name: m.detector(ctx) for name, m in MOMENTS.items()}
