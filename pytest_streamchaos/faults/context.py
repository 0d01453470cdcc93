"""What a fault may act on during one run (:class:`FaultContext`), and the helpers several families share.

The runner builds one context per run from the stack's interface (``stack/base.py``): the Spark
cluster, the brokers (what a fault does to them beyond that interface is the capability its kind
``needs``: :meth:`FaultContext.spark`, :meth:`FaultContext.brokers`), the job's driver, the run's storage
services (the stack's HDFS, the object store: :meth:`FaultContext.store`), the
views of the query's checkpoint and of its output that aimed faults read, and the recorder of what the system
did in reaction. Every fault kind (:mod:`.kind`) gets it; none reaches the stack any other way.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from pytest_streamchaos import storages
from pytest_streamchaos.events import Kind, StrEnum
from pytest_streamchaos.faults.timeline import PlannedFault, Recorder
from pytest_streamchaos.poll import poll
from pytest_streamchaos.protocols import StorageService
from pytest_streamchaos.stack.base import CheckpointView, JobHandle, KafkaCluster, LinkScope, SparkCluster

_SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}

#: How long ``confirm`` waits for a killed group to be gone / a paused group to be stopped.
CONFIRM_KILL_S = 10.0
CONFIRM_DRIVER_KILL_S = 15.0
CONFIRM_PAUSE_S = 5.0

C = TypeVar("C")


def having(cluster: object, capability: type[C]) -> C:
    """``cluster`` as ``capability``; an error naming both where it lacks it (a kind that did not declare it in
    its ``needs``: the run checks those when it is planned, so a declared one is always there)."""
    if not isinstance(cluster, capability):
        raise TypeError(f"{type(cluster).__name__} lacks the capability {capability.__name__}: the fault kind "
                        "must name it in its needs (stack/capabilities.py), so that the run refuses it when planned")
    return cluster


class OutputSeen(Protocol):
    """What the aimed faults read of the run's output (``observe.collector.Collector``)."""

    @property
    def last_written(self) -> float | None:
        """When the newest output read was written (its broker's append time), or None."""
        ...

    @property
    def last_arrival(self) -> float | None:
        """When the newest output was read, or None."""
        ...


@dataclass
class FaultContext:
    """Handles of everything a fault may hit during one run. The runner gives all of them; a unit
    test of one fault may pass None for what that fault does not touch."""

    cluster: SparkCluster
    kafka: KafkaCluster  #: the session cluster, not the per-test view
    job: JobHandle
    input_topic: str
    output_topic: str | None = None  #: the job's output topic (None: its output is not Kafka)
    checkpoint: CheckpointView | None = None  #: the aimed faults' view of the query's checkpoint
    collector: OutputSeen | None = None  #: the aimed faults' view of the output
    poison: PoisonSchedule | None = None
    recorder: Recorder | None = None  #: for what the system did in reaction
    #: the services of the run's storages by storage name (its checkpoint's, and the ones the job reaches by URL:
    #: the stack's HDFS, the object store); what a fault does to one is the protocol its storage names
    stores: Mapping[str, StorageService] = field(default_factory=dict)
    #: what the kinds of the plan made ready before the job started (their ``before_job``), by kind name
    prepared: Mapping[str, object] = field(default_factory=dict)
    #: the run's workload seed (stable per test id unless the test gives one): a fault that draws at random draws
    #: from it with its occurrence (:meth:`draws`), so a run repeats its faults' draws and two tests' differ
    seed: int = 0

    def draws(self, occurrence: int) -> int:
        """The seed of one fault occurrence's random draws: the run's seed and the occurrence, mixed."""
        return self.seed * 1_000_003 + occurrence

    def spark(self, capability: type[C]) -> C:
        """The run's Spark cluster as one of its capabilities (:mod:`pytest_streamchaos.stack.capabilities`)."""
        return having(self.cluster, capability)

    def brokers(self, capability: type[C]) -> C:
        """The run's Kafka cluster as one of its capabilities."""
        return having(self.kafka, capability)

    def store(self, protocol: type[C]) -> C:
        """The run's storage service that is a ``protocol`` (``HdfsCluster``, ``ObjectStoreService``: what its
        entry in :data:`pytest_streamchaos.storages.STORAGES` names); an error naming the storages the run has
        when none is (a fault kind refuses a run without its storage before it starts)."""
        found = [s for s in self.stores.values() if isinstance(s, protocol)]
        if not found:
            entry = storages.with_protocol(protocol)
            if entry is None:
                raise RuntimeError(f"this run has no {protocol.__name__}")
            raise RuntimeError(f"this run has no {entry.title}: an {entry.title} fault needs chaos.run(..., "
                               f"setup=JobSetup(checkpoint=\"{entry.name}\"))")
        return found[0]

    @property
    def link_scope(self) -> LinkScope:
        """Whose connections network faults act on (the job's where the stack can tell them apart)."""
        return (self.cluster if self.cluster is not None else self.kafka).link_scope

    def aimed(self) -> tuple[CheckpointView, OutputSeen]:
        """The checkpoint and output views an aimed fault reads; an error naming what is missing."""
        if self.checkpoint is None or self.collector is None:
            raise RuntimeError("an aimed fault needs the run's checkpoint and output views (FaultContext's "
                               "checkpoint= and collector=)")
        return self.checkpoint, self.collector

    def watch(self, kind: Kind | StrEnum, target: str, predicate: Callable[[], object], timeout: float = 90.0) -> None:
        """Record ``kind`` on the timeline when ``predicate()`` first holds (polled in the
        background, given up silently after ``timeout``: the metrics show what did not happen)."""
        recorder = self.recorder
        if recorder is None:
            return

        def probe() -> object:
            try:
                return predicate()
            except Exception:  # a master between lives answers nothing; keep polling
                return None

        def run() -> None:
            try:
                got = poll(probe, timeout, lambda _: TimeoutError(kind), interval=0.2, clock=time.time)
            except TimeoutError:
                return
            # a string result names the target more precisely
            recorder.record(kind, got if isinstance(got, str) else target)

        threading.Thread(target=run, name=f"watch-{kind}", daemon=True).start()


class PoisonSchedule:
    """A generator ``poison`` predicate that poisons the next ``n`` records whenever a poison fault
    fires (ids are assigned as records are produced, so the fault cannot name them in advance)."""

    def __init__(self) -> None:
        self._pending = 0
        self._lock = threading.Lock()
        self.poisoned: list[int] = []

    def add(self, n: int) -> None:
        with self._lock:
            self._pending += n

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        mask = np.zeros(len(ids), dtype=np.bool_)
        with self._lock:
            if self._pending and len(ids):
                k = min(self._pending, len(ids))
                mask[:k] = True
                self._pending -= k
                self.poisoned.extend(int(i) for i in ids[:k])
        return mask


def signal_of(planned: PlannedFault) -> int:
    """The signal a kill sends: the mark's ``signal`` (SIGKILL by default)."""
    return _SIGNALS[planned.spec.params.get("signal", "SIGKILL")]


def busiest_worker(cluster: SparkCluster) -> int:
    """The worker running the most executors (ties: the lowest index)."""
    counts = [len(cluster.executors(i)) if w.alive else -1 for i, w in enumerate(cluster.workers)]
    return int(np.argmax(counts)) if counts else 0


def worker_index(ctx: FaultContext, planned: PlannedFault) -> int:
    """The worker a fault hits: its int ``index``, else the busiest one."""
    idx = planned.spec.index
    if isinstance(idx, int):
        if idx >= len(ctx.cluster.workers):
            raise IndexError(f"index={idx}: the cluster has {len(ctx.cluster.workers)} workers")
        return idx
    return busiest_worker(ctx.cluster)
