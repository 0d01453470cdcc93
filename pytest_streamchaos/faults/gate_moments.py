"""Moments landed by the checkpoint gate instead of by polling (issue 33; docs/explore.md).

The gate (``stack/checkpoint_gate.py``) holds the job's thread inside the rename that moves a
checkpoint file into place, so a fault fired while it holds lands exactly at a micro-batch phase:

====================================  ============================  =====================================
phase (``search.schedule.PHASES``)    gate rule                     what holds
====================================  ============================  =====================================
``output_visible_uncommitted``        ``commits before N``          the driver, its sink done for batch N
``between_batches``                   ``commits after N``           the driver, batch N committed
``offsets_logged``                    ``offsets after N``           the driver, no task of batch N yet
``state_commit``                      ``state before N+1``          an executor's task, committing its
                                                                    state store's version N+1
                                                                    (``N+1.delta``, ``.changelog``,
                                                                    ``.zip``: docs/explore.md)
``tasks_running``                     ``task before``               an executor's task finishing its output
                                                                    (a shuffle file, a file task's commit)
====================================  ============================  =====================================

:func:`gated_moment` is a :data:`~pytest_streamchaos.faults.scheduler.MomentDetector`: it arms the
gate for the first batch ``>= base + anchor`` (``base``: the batch planned when it armed), waits for
the hold and reports the :class:`Aim` -- a hit by construction, as the held thread cannot pass the
rename until the gate lets it (a killed one never does); for ``state_commit`` the held thread must be one
a task waits for (its own, or the pool Spark 4's checksum file manager renames a task's files in; a state
store file renamed by any other thread -- a snapshot uploaded in the background -- is reported as a miss in
phase ``state_upload``). The thread stays held after the detector
returns: the fault is injected at once, and :meth:`Gate.release` (or ``disarm`` at the end of the run)
lets it go. The gate holds one thread per arming, so a driver restarted by the fault replays the
batch without being held again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.history import Aim
from pytest_streamchaos.poll import poll
from pytest_streamchaos.protocols import Gate, Held
from pytest_streamchaos.stack.base import CheckpointView, SparkCluster

#: a moment detector (``faults.moments.MomentDetector``; not imported from there: that module registers these)
MomentDetector = Callable[[PlannedFault, threading.Event, float], "Aim | None"]

#: where a run keeps its checkpoint gate among what was made ready before the job started
#: (``FaultContext.prepared``); absent when the run has none (no gated moment planned, or the checkpoint
#: is not on this host's file system)
GATE_KEY = "checkpoint_gate"

#: phase -> (checkpoint log, before / after its rename, the log's number minus the batch id; None: the
#: file has no batch number, the batch is the one planned when the hold comes)
GATED: dict[str, tuple[str, str, int | None]] = {
    "output_visible_uncommitted": ("commits", "before", 0),
    "between_batches": ("commits", "after", 0),
    "offsets_logged": ("offsets", "after", 0),
    "state_commit": ("state", "before", 1),  # a stateful batch N commits state store version N + 1
    # a job that neither shuffles nor writes files (a stateless Kafka-to-Kafka job) renames nothing in its
    # tasks: there the moment is polled (faults/actions.py's tasks_running)
    "tasks_running": ("task", "before", None),
}


def base_batch(checkpoint: CheckpointView) -> int:
    """The batch the anchors count from: the one planned and not committed now, else the next one."""
    planned = checkpoint.uncommitted_batch()
    if planned is not None:
        return planned
    done = checkpoint.latest_committed_batch()
    return 0 if done is None else done + 1


def _planned(checkpoint: CheckpointView, batch: int, stop: threading.Event, deadline: float) -> bool:
    """Wait until ``batch`` is planned; False when ``stop`` or ``deadline`` comes first."""
    def due() -> bool:
        return stop.is_set() or time.time() >= deadline or base_batch(checkpoint) >= batch

    try:
        poll(due, max(0.0, deadline - time.time()), lambda _: TimeoutError(), interval=0.005, clock=time.time)
    except TimeoutError:
        return False
    return base_batch(checkpoint) >= batch


def gated_moment(gate: Gate, checkpoint: CheckpointView, phase: str, anchor: int = 0,
                 holds: list[Held] | None = None) -> MomentDetector:
    """A moment detector for ``phase`` (a key of :data:`GATED`) through ``gate``; each hold is appended
    to ``holds`` when given (the fault's target may be the held process: an executor's pid)."""
    if phase not in GATED:
        raise ValueError(f"the checkpoint gate cannot land phase {phase!r}; it lands {', '.join(GATED)}")
    log, when, shift = GATED[phase]

    def wait(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        # a step of an explored schedule carries its own anchor (relative to the step before it)
        step_anchor = getattr(getattr(planned, "spec", None), "anchor", None)
        first = base_batch(checkpoint) + (anchor if step_anchor is None else step_anchor)
        if shift is None and first > base_batch(checkpoint) and not _planned(checkpoint, first, stop, deadline):
            return None  # a task's file names no batch: arm once the anchored batch is planned
        # the tracked query's checkpoint only: another query of the job commits the same batch numbers
        gate.arm(log, when, 0 if shift is None else first + shift, checkpoint.checkpoint_dir)
        held = gate.wait_held(max(0.0, deadline - time.time()), stop)
        if held is None:
            gate.disarm()
            return None
        if holds is not None:
            holds.append(held)
        batch = held.batch - shift if shift is not None else checkpoint.uncommitted_batch()
        return Aim(phase, first if batch is None else batch, *landed(phase, held), 1)

    return wait


def landed(phase: str, held: Held) -> tuple[str, bool]:
    """The phase a hold landed the fault in, and whether it is ``phase``: the gate holds only the renames
    of the phase's file, so it is, except that a state store's file renamed by a thread no task waits for
    (RocksDB's snapshot, uploaded in the background: ``state_upload``) is not a task committing its state."""
    if phase == "state_commit" and held.in_task is False:
        return "state_upload", False
    return phase, True


#: where Spark records a query's state store provider, in every offsets entry's metadata
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


def no_state_commit(checkpoint: Any) -> str | None:
    """Why a task never committed a state store version the gate holds, as the query's checkpoint tells
    (``observe.checkpoints.CheckpointWatcher.state_store``): it keeps no state, or its state store is
    one whose files the gate does not know. None when its state store is one the gate holds."""
    try:
        if checkpoint.state_store() is not None:
            return None
        done = checkpoint.latest_committed_batch()
        entry = checkpoint.offsets(done) if done is not None else None
    except (AttributeError, OSError, ValueError):
        return None
    provider = (((entry or {}).get("metadata") or {}).get("conf") or {}).get(PROVIDER_CONF)
    where = f"under {checkpoint.checkpoint_dir}/state"
    if provider is None or provider.endswith((".HDFSBackedStateStoreProvider", ".RocksDBStateStoreProvider")):
        return f"the query keeps no state (no state store version {where}): a state store commit never comes"
    return (f"the query's state store, {provider}, wrote no version file the checkpoint gate knows {where} "
            "(N.delta, N.changelog, N.zip): its commits cannot be held")


#: the phases only the gate lands (no poll sees them): a run that cannot have the gate refuses them
GATE_ONLY = ("between_batches", "offsets_logged", "state_commit")


def needs_gate(specs: Iterable[FaultSpec]) -> bool:
    """Whether a plan of fault ``specs`` needs the checkpoint gate preloaded into the job: a fault aimed at
    a phase it lands. A mark's ``tasks_running`` stays polled (a job that renames nothing in its tasks --
    a stateless Kafka-to-Kafka job -- would never be held); a step of an explored schedule aimed there is
    gated (the poll fires on ``offsets/N``, or late: its phase is not the one the search asked for)."""
    return any(s.when in GATED and (s.when != "tasks_running" or s.anchor is not None) for s in specs)


class RunGate:
    """The run's gate as what was made ready before the job started (``FaultContext.prepared[GATE_KEY]``):
    closed (disarmed, its directory removed) once the run is over."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def release(self) -> None:
        self.gate.close()


def gate_of(prepared: Mapping[str, object]) -> Gate | None:
    """The run's checkpoint gate (from ``FaultContext.prepared``), or None."""
    found = prepared.get(GATE_KEY) if prepared else None
    return found.gate if isinstance(found, RunGate) else None


def held_worker(cluster: SparkCluster, gate: Gate | None) -> int | None:
    """The worker whose executor the gate holds now (a task at a state store's commit or finishing its
    output): a fault on an executor hits the one that is in the phase, not the busiest. None when the
    gate holds no executor's thread."""
    if gate is None or not gate.holds:
        return None
    pid = gate.holds[-1].pid
    for i in range(len(cluster.workers)):
        if any(e.pid == pid for e in cluster.executors(i)):
            return i
    return None
