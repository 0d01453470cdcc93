"""The process family: Spark's processes killed or frozen -- a worker (and its executors), one
executor, the driver, a master -- and ``pause``, a SIGSTOP of a target's process group (also a
broker's) until the heal's SIGCONT. Every signal goes through the capability of the stack each kind
declares it needs (:mod:`pytest_streamchaos.stack.capabilities`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, TypeAlias

from pytest_streamchaos.events import Kind, StrEnum
from pytest_streamchaos.faults.context import (
    CONFIRM_DRIVER_KILL_S,
    CONFIRM_KILL_S,
    CONFIRM_PAUSE_S,
    FaultContext,
    signal_of,
    worker_index,
)
from pytest_streamchaos.faults.families.broker import BROKER_ARGS, BROKER_ROLES, brokers_of, check_broker_args
from pytest_streamchaos.faults.gate_moments import gate_of, held_worker
from pytest_streamchaos.faults.kind import FaultKind, H, Kill
from pytest_streamchaos.faults.moments import (
    BETWEEN_BATCHES,
    OFFSETS_LOGGED,
    OUTPUT_VISIBLE_UNCOMMITTED,
    STATE_COMMIT,
    TASKS_RUNNING,
    UNCOMMITTED_OUTPUT,
)
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import ExecutorRef
from pytest_streamchaos.stack.capabilities import (
    ActiveMaster,
    BrokerPause,
    ExecutorKill,
    ExecutorPause,
    MasterKill,
    MasterPause,
    PartitionLeaders,
    SubmittedDrivers,
    WorkerKill,
    WorkerPause,
)

#: the moments a fault on an executor can aim at (the gate's: docs/explore.md)
EXECUTOR_MOMENTS = (TASKS_RUNNING, BETWEEN_BATCHES, OFFSETS_LOGGED, OUTPUT_VISIBLE_UNCOMMITTED, STATE_COMMIT)


def target_worker(ctx: FaultContext, planned: PlannedFault) -> int:
    """The worker a fault on executors hits: the one whose executor the checkpoint gate holds when the
    fault was aimed at that hold (a task at its state store's commit, or an explored step's task finishing its
    output), else :func:`worker_index`'s."""
    aimed_at_hold = planned.spec.when == STATE_COMMIT or (planned.spec.when == TASKS_RUNNING
                                                          and planned.spec.anchor is not None)
    if aimed_at_hold and not isinstance(planned.spec.index, int):
        held = held_worker(ctx.cluster, gate_of(ctx.prepared))
        if held is not None:
            return held
    return worker_index(ctx, planned)


class _OnExecutors(Kill[H]):
    """A kill of executors (one, or a worker's): the busiest worker's unless ``index`` says, aimed at
    the micro-batch phases; remembers which worker each occurrence hit ('busiest' -> 1)."""

    roles = ("busiest",)
    moments = EXECUTOR_MOMENTS
    takes_down = "executor"
    search_targets = ("busiest",)

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.resolved: dict[int, int] = {}

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True


class KillWorker(_OnExecutors[int]):
    name = "kill_worker"
    doc = "kill a Spark worker and its executors (process group)"
    needs = (WorkerKill,)

    def target(self, planned: PlannedFault) -> str:
        return f"worker-{self.resolved.get(id(planned), '?')}"

    def inject(self, planned: PlannedFault) -> int:
        i = target_worker(self.ctx, planned)
        self.resolved[id(planned)] = i
        self.ctx.spark(WorkerKill).kill_worker(i, signal_of(planned), wait=False)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        """The worker's whole group (its executors too) is gone."""
        self.ctx.spark(WorkerKill).wait_gone(self.ctx.cluster.workers[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        w = self.ctx.spark(WorkerKill).restart_worker(i)
        port = getattr(w, "port", None)
        self.ctx.watch(Kind.WORKER_REGISTERED, f"worker-{i}",
                       lambda: any(a.get("port") == port for a in self.ctx.cluster.alive_workers()))


class KillExecutor(_OnExecutors[ExecutorRef]):
    name = "kill_executor"
    doc = "kill one executor JVM (its worker stays)"
    needs = (ExecutorKill,)

    def target(self, planned: PlannedFault) -> str:
        return f"executor@worker-{self.resolved.get(id(planned), '?')}"

    def inject(self, planned: PlannedFault) -> ExecutorRef:
        i = target_worker(self.ctx, planned)
        self.resolved[id(planned)] = i
        found = self.ctx.cluster.executors(i)
        if not found:
            raise RuntimeError(f"worker-{i} runs no executor to kill")
        self.ctx.spark(ExecutorKill).kill_executor(found[0], signal_of(planned))
        return found[0]

    def confirm(self, planned: PlannedFault, executor: ExecutorRef) -> None:
        """The executor is gone (the worker reaps it: poll, it is not our child)."""
        c = self.ctx.cluster
        poll(lambda: c.executor_state(executor) is None, CONFIRM_KILL_S, interval=0.02, clock=time.time,
             on_timeout=lambda _: TimeoutError(f"executor {executor} still running {CONFIRM_KILL_S:g}s after the "
                                               "signal"))

    def heal(self, planned: PlannedFault, executor: ExecutorRef) -> None:
        """Nothing: the master relaunches a lost executor by itself."""


class KillDriver(Kill[int | None]):
    name = "kill_driver"
    doc = ("kill the driver (JVM and Python children); restart it from the checkpoint "
           "after restart_after (default 0)")
    moments = (UNCOMMITTED_OUTPUT, OUTPUT_VISIBLE_UNCOMMITTED, BETWEEN_BATCHES, OFFSETS_LOGGED, TASKS_RUNNING)
    takes_down = "driver"
    default_restart_after = 0.0  # like --supervise: a killed driver comes back (from the same checkpoint)
    needs = (SubmittedDrivers,)  # under Spark Connect the job's process is a client; the driver is the server

    @classmethod
    def stops_driver(cls, spec: FaultSpec) -> bool:
        return True

    def target(self, planned: PlannedFault) -> str:
        return "driver"

    def inject(self, planned: PlannedFault) -> int | None:
        pid = self.ctx.job.pid
        # the whole group: JVM and its Python children (also when SIGSTOPped); reaped in confirm
        self.ctx.job.kill(wait=False)
        return pid

    def confirm(self, planned: PlannedFault, pid: int | None) -> None:
        """Every process of the driver's group is gone."""
        self.ctx.job.wait_gone(CONFIRM_DRIVER_KILL_S)

    def heal(self, planned: PlannedFault, pid: int | None) -> None:
        self.ctx.job.restart()


class KillMaster(Kill[int]):
    name = "kill_master"
    doc = "kill a Spark master (the active one by default)"
    roles = ("active", "standby")
    needs = (MasterKill, ActiveMaster)

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.resolved: dict[int, int] = {}

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    def _index(self, planned: PlannedFault) -> int:
        masters = self.ctx.cluster.masters
        idx = planned.spec.index
        if isinstance(idx, int):
            return idx
        active = self.ctx.spark(ActiveMaster).active_master()
        ai = masters.index(active)
        if idx == "standby":
            others = [i for i in range(len(masters)) if i != ai]
            if not others:
                raise RuntimeError("index='standby' needs HA (--chaos-ha): there is one master")
            return others[0]
        return ai

    def target(self, planned: PlannedFault) -> str:
        return f"master-{self.resolved.get(id(planned), '?')}"

    def inject(self, planned: PlannedFault) -> int:
        i = self._index(planned)
        self.resolved[id(planned)] = i
        self.ctx.spark(MasterKill).kill_master(i, signal_of(planned), wait=False)
        masters = self.ctx.cluster.masters
        if len(masters) > 1:  # HA: record when a standby has taken over
            killed = masters[i]

            def failed_over() -> str | None:
                new = self.ctx.spark(ActiveMaster).active_master()
                return new.name if new is not killed else None

            self.ctx.watch(Kind.MASTER_FAILOVER, "master", failed_over)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        """The master's group is gone."""
        self.ctx.spark(MasterKill).wait_gone(self.ctx.cluster.masters[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        self.ctx.spark(MasterKill).restart_master(i)


class PauseTarget(StrEnum):
    """What ``pause`` can freeze (``@pause(target=...)``); the first three are the cluster's JVMs."""

    WORKER = "worker"
    EXECUTOR = "executor"
    MASTER = "master"
    DRIVER = "driver"
    BROKER = "broker"


#: what ``pause`` can freeze, in the order its refusal names them
PAUSE_TARGETS = tuple(PauseTarget)
#: the targets that are the cluster's JVMs
_CLUSTER_TARGETS = (PauseTarget.WORKER, PauseTarget.EXECUTOR, PauseTarget.MASTER)
#: what a pause of each target needs of the cluster (a driver's pause is the job handle's own)
PAUSE_NEEDS: dict[PauseTarget, tuple[type, ...]] = {
    PauseTarget.WORKER: (WorkerPause,), PauseTarget.EXECUTOR: (ExecutorPause,),
    PauseTarget.MASTER: (MasterPause, ActiveMaster), PauseTarget.DRIVER: (),
    PauseTarget.BROKER: (BrokerPause, PartitionLeaders)}


@dataclass(frozen=True)
class PausedWorker:
    """A ``pause`` handle: worker ``index`` frozen."""

    index: int


@dataclass(frozen=True)
class PausedMaster:
    """A ``pause`` handle: master ``index`` frozen."""

    index: int


@dataclass(frozen=True)
class PausedExecutor:
    """A ``pause`` handle: this executor frozen (its worker runs on)."""

    executor: ExecutorRef


@dataclass(frozen=True)
class PausedDriver:
    """A ``pause`` handle: the job's driver frozen (through the job's own handle)."""


@dataclass(frozen=True)
class PausedBrokers:
    """A ``pause`` handle: these brokers frozen (their connections stay open, nothing answers)."""

    ids: tuple[int, ...]


#: what a ``pause`` froze, as its ``confirm`` and ``heal`` get it back
Paused: TypeAlias = PausedWorker | PausedMaster | PausedExecutor | PausedDriver | PausedBrokers


class Pause(FaultKind[Paused]):
    """SIGSTOP of a target's process group; SIGCONT on heal."""

    name = "pause"
    doc = "SIGSTOP a target's process group (container pause), SIGCONT on heal"
    args = {"target": "'worker', 'executor', 'driver', 'master' or 'broker'", **BROKER_ARGS}
    required = ("target",)
    roles = ("busiest", "active", *BROKER_ROLES)

    @classmethod
    def check_target(cls, target: str | None) -> str | None:
        if target not in PAUSE_TARGETS:
            raise FaultSpecError(f"@{cls.name}: target={target!r} must be one of 'worker', 'executor', 'driver', "
                                 "'master', 'broker'")
        return str(target)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_broker_args(cls.name, params)

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return spec.target in _CLUSTER_TARGETS

    @classmethod
    def stops_driver(cls, spec: FaultSpec) -> bool:
        return spec.target == PauseTarget.DRIVER

    @classmethod
    def capabilities(cls, spec: FaultSpec) -> tuple[type, ...]:
        return PAUSE_NEEDS[PauseTarget(spec.target)]

    def target(self, planned: PlannedFault) -> str:
        return str(planned.spec.target)

    def inject(self, planned: PlannedFault) -> Paused:
        t = PauseTarget(planned.spec.target)
        if t == PauseTarget.WORKER:
            i = worker_index(self.ctx, planned)
            self.ctx.spark(WorkerPause).pause_worker(i, wait=False)
            return PausedWorker(i)
        if t == PauseTarget.EXECUTOR:
            found = self.ctx.cluster.executors(worker_index(self.ctx, planned))
            if not found:
                raise RuntimeError("no executor to pause")
            self.ctx.spark(ExecutorPause).pause_executor(found[0])
            return PausedExecutor(found[0])
        if t == PauseTarget.DRIVER:
            self.ctx.job.pause(wait=False)
            return PausedDriver()
        if t == PauseTarget.MASTER:
            i = planned.spec.index if isinstance(planned.spec.index, int) else \
                self.ctx.cluster.masters.index(self.ctx.spark(ActiveMaster).active_master())
            self.ctx.spark(MasterPause).pause_master(i, wait=False)
            return PausedMaster(i)
        ids = brokers_of(self.ctx, planned)  # a broker: connections stay open, nothing answers
        for b in ids:
            self.ctx.brokers(BrokerPause).pause_broker(b, wait=False)
        return PausedBrokers(tuple(ids))

    def confirm(self, planned: PlannedFault, handle: Paused) -> None:
        """Every process of the paused group is stopped (SIGSTOP delivery is asynchronous)."""
        c = self.ctx.cluster
        if isinstance(handle, PausedWorker):
            self.ctx.spark(WorkerPause).wait_paused(c.workers[handle.index], CONFIRM_PAUSE_S)
        elif isinstance(handle, PausedMaster):
            self.ctx.spark(MasterPause).wait_paused(c.masters[handle.index], CONFIRM_PAUSE_S)
        elif isinstance(handle, PausedDriver):
            self.ctx.job.wait_paused(CONFIRM_PAUSE_S)
        elif isinstance(handle, PausedBrokers):
            for b in handle.ids:
                self.ctx.brokers(BrokerPause).wait_paused(b, CONFIRM_PAUSE_S)
        else:
            h = handle.executor
            poll(lambda: c.executor_state(h) in ("stopped", None), CONFIRM_PAUSE_S, interval=0.02, clock=time.time,
                 on_timeout=lambda _: TimeoutError(f"executor {h} not stopped {CONFIRM_PAUSE_S:g}s after SIGSTOP"))

    def heal(self, planned: PlannedFault, handle: Paused) -> None:
        if isinstance(handle, PausedWorker):
            self.ctx.spark(WorkerPause).resume_worker(handle.index)
        elif isinstance(handle, PausedExecutor):
            self.ctx.spark(ExecutorPause).resume_executor(handle.executor)
        elif isinstance(handle, PausedBrokers):
            for b in handle.ids:
                self.ctx.brokers(BrokerPause).resume_broker(b)
        elif isinstance(handle, PausedDriver):
            self.ctx.job.resume()
        else:
            self.ctx.spark(MasterPause).resume_master(handle.index)


KINDS = (KillWorker, KillExecutor, KillDriver, KillMaster, Pause)
