"""The process family: Spark's processes killed or frozen -- a worker (and its executors), one
executor, the driver, a master -- and ``pause``, a SIGSTOP of a target's process group (also a
broker's) until the heal's SIGCONT. Every signal goes through the stack's interface."""

from __future__ import annotations

import signal
import time
from typing import Any

from pytest_streamchaos.faults.context import (
    CONFIRM_DRIVER_KILL_S,
    CONFIRM_KILL_S,
    CONFIRM_PAUSE_S,
    FaultContext,
    signal_of,
    worker_index,
)
from pytest_streamchaos.faults.families.broker import (
    BROKER_ARGS,
    BROKER_ROLES,
    brokers_of,
    brokers_refused,
    check_broker_args,
)
from pytest_streamchaos.faults.kind import FaultKind, Kill
from pytest_streamchaos.faults.moments import TASKS_RUNNING, UNCOMMITTED_OUTPUT
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import ExecutorRef, KafkaCluster, SparkCluster


def _daemons_refused(what: str, cluster: SparkCluster) -> str | None:
    """The refusal of a fault on the cluster's daemons where the plugin did not start them."""
    if cluster.host_access:
        return None
    return (f"{what} needs the cluster's daemons as processes, and this cluster was attached (the plugin did not "
            "start it; its API cannot stop them): run the test on the cluster the plugin starts, or leave it out")


class KillWorker(Kill):
    name = "kill_worker"
    doc = "kill a Spark worker and its executors (process group)"
    roles = ("busiest",)
    moments = (TASKS_RUNNING,)

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.resolved: dict[int, int] = {}  # which worker each occurrence hit ('busiest' -> 1)

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    @classmethod
    def refused_by_cluster(cls, spec: FaultSpec, cluster: SparkCluster) -> str | None:
        return _daemons_refused("the loss of a worker (a YARN NodeManager)", cluster)

    def target(self, planned: PlannedFault) -> str:
        return f"worker-{self.resolved.get(id(planned), '?')}"

    def inject(self, planned: PlannedFault) -> int:
        i = worker_index(self.ctx, planned)
        self.resolved[id(planned)] = i
        self.ctx.cluster.kill_worker(i, signal_of(planned), wait=False)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        """The worker's whole group (its executors too) is gone."""
        self.ctx.cluster.wait_gone(self.ctx.cluster.workers[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        w = self.ctx.cluster.restart_worker(i)
        port = getattr(w, "port", None)
        self.ctx.watch("worker_registered", f"worker-{i}",
                       lambda: any(a.get("port") == port for a in self.ctx.cluster.alive_workers()))


class KillExecutor(Kill):
    name = "kill_executor"
    doc = "kill one executor JVM (its worker stays)"
    roles = ("busiest",)
    moments = (TASKS_RUNNING,)

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    def target(self, planned: PlannedFault) -> str:
        return f"executor@worker-{worker_index(self.ctx, planned)}"

    def inject(self, planned: PlannedFault) -> ExecutorRef:
        i = worker_index(self.ctx, planned)
        found = self.ctx.cluster.executors(i)
        if not found:
            raise RuntimeError(f"worker-{i} runs no executor to kill")
        self.ctx.cluster.signal_executor(found[0], signal_of(planned))
        return found[0]

    def confirm(self, planned: PlannedFault, executor: ExecutorRef) -> None:
        """The executor is gone (the worker reaps it: poll, it is not our child)."""
        c = self.ctx.cluster
        poll(lambda: c.executor_state(executor) is None, CONFIRM_KILL_S, interval=0.02, clock=time.time,
             on_timeout=lambda _: TimeoutError(f"executor {executor} still running {CONFIRM_KILL_S:g}s after the "
                                               "signal"))

    def heal(self, planned: PlannedFault, executor: ExecutorRef) -> None:
        """Nothing: the master relaunches a lost executor by itself."""


class KillDriver(Kill):
    name = "kill_driver"
    doc = ("kill the driver (JVM and Python children); restart it from the checkpoint "
           "after restart_after (default 0)")
    moments = (UNCOMMITTED_OUTPUT,)
    default_restart_after = 0.0  # like --supervise: a killed driver comes back (from the same checkpoint)

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


class KillMaster(Kill):
    name = "kill_master"
    doc = "kill a Spark master (the active one by default)"
    roles = ("active", "standby")

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.resolved: dict[int, int] = {}

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    @classmethod
    def refused_by_cluster(cls, spec: FaultSpec, cluster: SparkCluster) -> str | None:
        return _daemons_refused("a master's kill (YARN's ResourceManager)", cluster)

    def _index(self, planned: PlannedFault) -> int:
        masters = self.ctx.cluster.masters
        idx = planned.spec.index
        if isinstance(idx, int):
            return idx
        active = self.ctx.cluster.active_master()
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
        self.ctx.cluster.kill_master(i, signal_of(planned), wait=False)
        masters = self.ctx.cluster.masters
        if len(masters) > 1:  # HA: record when a standby has taken over
            killed = masters[i]

            def failed_over() -> str | None:
                new = self.ctx.cluster.active_master()
                return new.name if new is not killed else None

            self.ctx.watch("master_failover", "master", failed_over)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        """The master's group is gone."""
        self.ctx.cluster.wait_gone(self.ctx.cluster.masters[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        self.ctx.cluster.restart_master(i)


#: what ``pause`` can freeze; the first three are the cluster's JVMs
PAUSE_TARGETS = ("worker", "executor", "master", "driver", "broker")


class Pause(FaultKind):
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
        return target

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_broker_args(cls.name, params)

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return spec.target in PAUSE_TARGETS[:3]

    @classmethod
    def stops_driver(cls, spec: FaultSpec) -> bool:
        return spec.target == "driver"

    @classmethod
    def refused_by_cluster(cls, spec: FaultSpec, cluster: SparkCluster) -> str | None:
        if spec.target in ("worker", "master"):
            return _daemons_refused(f"a pause of a {spec.target}", cluster)
        if spec.target == "executor" and cluster.master_url == "yarn":
            return ("a pause of an executor on YARN: its API kills a container (kill_executor) but cannot freeze "
                    "one; pause the driver (client mode) or run the test on Spark standalone")
        return None

    @classmethod
    def refused_by_kafka(cls, spec: FaultSpec, kafka: KafkaCluster) -> str | None:
        return brokers_refused("a pause of a broker", kafka) if spec.target == "broker" else None

    def target(self, planned: PlannedFault) -> str:
        return str(planned.spec.target)

    def inject(self, planned: PlannedFault) -> tuple[str, Any]:
        t = planned.spec.target
        c = self.ctx.cluster
        if t == "worker":
            i = worker_index(self.ctx, planned)
            c.pause_worker(i, wait=False)
            return ("worker", i)
        if t == "executor":
            found = c.executors(worker_index(self.ctx, planned))
            if not found:
                raise RuntimeError("no executor to pause")
            c.signal_executor(found[0], signal.SIGSTOP)
            return ("executor", found[0])
        if t == "driver":
            self.ctx.job.pause(wait=False)
            return ("driver", None)
        if t == "master":
            i = planned.spec.index if isinstance(planned.spec.index, int) else c.masters.index(c.active_master())
            c.pause_master(i, wait=False)
            return ("master", i)
        if t == "broker":  # connections stay open, nothing answers
            ids = brokers_of(self.ctx, planned)
            for b in ids:
                self.ctx.kafka.pause_broker(b, wait=False)
            return ("broker", ids)
        raise ValueError(f"pause: unknown target {t!r}")

    def confirm(self, planned: PlannedFault, handle: tuple[str, Any]) -> None:
        """Every process of the paused group is stopped (SIGSTOP delivery is asynchronous)."""
        kind, h = handle
        c = self.ctx.cluster
        if kind == "worker":
            c.wait_paused(c.workers[h], CONFIRM_PAUSE_S)
        elif kind == "master":
            c.wait_paused(c.masters[h], CONFIRM_PAUSE_S)
        elif kind == "driver":
            self.ctx.job.wait_paused(CONFIRM_PAUSE_S)
        elif kind == "broker":
            for b in h:
                self.ctx.kafka.wait_paused(b, CONFIRM_PAUSE_S)
        else:  # an executor
            poll(lambda: c.executor_state(h) in ("stopped", None), CONFIRM_PAUSE_S, interval=0.02, clock=time.time,
                 on_timeout=lambda _: TimeoutError(f"executor {h} not stopped {CONFIRM_PAUSE_S:g}s after SIGSTOP"))

    def heal(self, planned: PlannedFault, handle: tuple[str, Any]) -> None:
        kind, h = handle
        c = self.ctx.cluster
        if kind == "worker":
            c.resume_worker(h)
        elif kind == "executor":
            try:
                c.signal_executor(h, signal.SIGCONT)
            except ProcessLookupError:
                pass
        elif kind == "broker":
            for b in h:
                self.ctx.kafka.resume_broker(b)
        elif kind == "driver":
            self.ctx.job.resume()
        elif kind == "master":
            c.resume_master(h)


KINDS = (KillWorker, KillExecutor, KillDriver, KillMaster, Pause)
