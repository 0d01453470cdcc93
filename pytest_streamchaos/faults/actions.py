"""What each fault mark does to the running stack, and how aimed faults find their moment.

The actions only use the stack interface (cluster / broker / job handles), so a container backend
can provide the same operations. Each action's ``inject`` returns a handle its ``heal`` gets back.

``inject`` returns as soon as the fault has taken effect -- the signal sent, the rule installed, the
broker taken down -- and waits for nothing more: the scheduler stamps the injection time when it
returns. An action whose effect is confirmed later (a killed group reaped, a paused group all
stopped) has ``confirm(planned, handle)``, which waits for that; the scheduler records the wait
apart, as ``confirmed`` seconds in the ``fault_injected`` event's detail.
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from pytest_streamchaos.faults import network as net
from pytest_streamchaos.faults.scheduler import Aim, MomentDetector, Recorder
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.faults.toxics import ToxicFault, toxic_fault
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import (
    CheckpointView,
    Endpoint,
    ExecutorRef,
    HdfsCluster,
    JobHandle,
    KafkaCluster,
    LinkProxy,
    LinkScope,
    SparkCluster,
)

_SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}

#: How long ``confirm`` waits for a killed group to be gone / a paused group to be stopped.
CONFIRM_KILL_S = 10.0
CONFIRM_DRIVER_KILL_S = 15.0
CONFIRM_PAUSE_S = 5.0


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
    hdfs: HdfsCluster[Any] | None = None  #: the HDFS of a run with ``checkpoint="hdfs"``, else None

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

    def watch(self, kind: str, target: str, predicate: Callable[[], Any], timeout: float = 90.0) -> None:
        """Record ``kind`` on the timeline when ``predicate()`` first holds (polled in the
        background, given up silently after ``timeout``: the metrics show what did not happen)."""
        recorder = self.recorder
        if recorder is None:
            return

        def probe() -> Any:
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
    """A generator ``poison`` predicate that poisons the next ``n`` records whenever a
    ``poison_records`` fault fires (ids are assigned as records are produced, so the fault cannot
    name them in advance)."""

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


class _Resolving:
    """Remembers which instance each occurrence hit (e.g. 'busiest' -> worker 1) for the timeline."""

    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx
        self.resolved: dict[int, Any] = {}

    def _name(self, planned: PlannedFault, prefix: str) -> str:
        return f"{prefix}-{self.resolved.get(id(planned), '?')}"


def _sig(planned: PlannedFault) -> int:
    return _SIGNALS[planned.spec.params.get("signal", "SIGKILL")]


def busiest_worker(cluster: SparkCluster) -> int:
    """The worker running the most executors (ties: the lowest index)."""
    counts = [len(cluster.executors(i)) if w.alive else -1 for i, w in enumerate(cluster.workers)]
    return int(np.argmax(counts)) if counts else 0


def _worker_index(ctx: FaultContext, planned: PlannedFault) -> int:
    idx = planned.spec.index
    if isinstance(idx, int):
        if idx >= len(ctx.cluster.workers):
            raise IndexError(f"index={idx}: the cluster has {len(ctx.cluster.workers)} workers")
        return idx
    return busiest_worker(ctx.cluster)


class KillWorker(_Resolving):

    def target(self, planned: PlannedFault) -> str:
        return self._name(planned, "worker")

    def inject(self, planned: PlannedFault) -> int:
        i = _worker_index(self.ctx, planned)
        self.resolved[id(planned)] = i
        self.ctx.cluster.kill_worker(i, _sig(planned), wait=False)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        """The worker's whole group (its executors too) is gone."""
        self.ctx.cluster.wait_gone(self.ctx.cluster.workers[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        w = self.ctx.cluster.restart_worker(i)
        port = getattr(w, "port", None)
        self.ctx.watch("worker_registered", f"worker-{i}",
                       lambda: any(a.get("port") == port for a in self.ctx.cluster.alive_workers()))


class KillExecutor:
    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

    def target(self, planned: PlannedFault) -> str:
        return f"executor@worker-{_worker_index(self.ctx, planned)}"

    def inject(self, planned: PlannedFault) -> ExecutorRef:
        i = _worker_index(self.ctx, planned)
        found = self.ctx.cluster.executors(i)
        if not found:
            raise RuntimeError(f"worker-{i} runs no executor to kill")
        self.ctx.cluster.signal_executor(found[0], _sig(planned))
        return found[0]

    def confirm(self, planned: PlannedFault, executor: ExecutorRef) -> None:
        """The executor is gone (the worker reaps it: poll, it is not our child)."""
        c = self.ctx.cluster
        poll(lambda: c.executor_state(executor) is None, CONFIRM_KILL_S, interval=0.02, clock=time.time,
             on_timeout=lambda _: TimeoutError(f"executor {executor} still running {CONFIRM_KILL_S:g}s after the "
                                               "signal"))

    def heal(self, planned: PlannedFault, executor: ExecutorRef) -> None:
        """Nothing: the master relaunches a lost executor by itself."""


class KillDriver:
    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

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


class KillMaster(_Resolving):

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
        return self._name(planned, "master")

    def inject(self, planned: PlannedFault) -> int:
        i = self._index(planned)
        self.resolved[id(planned)] = i
        self.ctx.cluster.kill_master(i, _sig(planned), wait=False)
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


def brokers_of(ctx: FaultContext, planned: PlannedFault) -> list[int]:
    """The broker(s) a Kafka fault hits: a broker id, or a role (default ``leader``) of a partition of
    the job's input (``topic='output'``: its output) as the cluster reports it now."""
    idx = planned.spec.index if planned.spec.index is not None else "leader"
    kafka = ctx.kafka
    if isinstance(idx, int):
        if idx not in kafka.broker_ids:
            raise ValueError(f"index={idx}: the broker ids are {kafka.broker_ids}")
        return [idx]
    if idx == "all":
        return list(kafka.broker_ids)
    if idx == "controller":
        controller = kafka.controller_id()
        if controller is None:
            raise RuntimeError("the KRaft quorum has no active controller now")
        return [controller]
    topic = ctx.output_topic if planned.spec.params.get("topic") == "output" else ctx.input_topic
    if topic is None:
        raise ValueError("topic='output': the job's output is not a Kafka topic of this run")
    partition = int(planned.spec.params.get("partition", 0))
    if idx == "follower":
        followers = kafka.followers_of(topic, partition)
        if not followers:
            raise RuntimeError(f"{topic}[{partition}] has no in-sync follower (a cluster of one broker?)")
        return [followers[0]]
    return [kafka.leader_of(topic, partition)]


def _broker_names(ids: list[int]) -> str:
    return ",".join(f"broker-{b}" for b in ids)


class KillBroker(_Resolving):
    """SIGKILL (or SIGTERM) of broker JVMs; started again on heal (same ports and log directory)."""

    def target(self, planned: PlannedFault) -> str:
        got = self.resolved.get(id(planned))
        return _broker_names(got) if got else "broker-?"

    def inject(self, planned: PlannedFault) -> list[int]:
        ids = brokers_of(self.ctx, planned)
        self.resolved[id(planned)] = ids
        for b in ids:
            self.ctx.kafka.kill_broker(b, _sig(planned), wait=False)
        return ids

    def confirm(self, planned: PlannedFault, ids: list[int]) -> None:
        """Every killed broker's JVM is gone."""
        for b in ids:
            self.ctx.kafka.wait_gone(b, CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, ids: list[int]) -> None:
        for b in ids:
            self.ctx.kafka.restart_broker(b, wait=False)


class IsolateBroker(_Resolving):
    """A broker cut from the other brokers (replication, the KRaft quorum) while the job's clients and
    the harness still reach it: iptables rules on its peer ports and on the connections it opens to
    its peers (:func:`pytest_streamchaos.faults.network.BrokerCut`)."""

    def target(self, planned: PlannedFault) -> str:
        got = self.resolved.get(id(planned))
        return _broker_names(got) if got else "broker-?"

    def inject(self, planned: PlannedFault) -> net.FaultGroup:
        ids = brokers_of(self.ctx, planned)
        self.resolved[id(planned)] = ids
        kafka = self.ctx.kafka
        cuts = [net.BrokerCut(kafka.peer_ports(b), [p for o in kafka.broker_ids if o != b for p in kafka.peer_ports(o)],
                              kafka.node_mark(b), unmarked_reason=kafka.link_scope.unscoped_reason()) for b in ids]
        group = net.FaultGroup(cuts, [f"broker-{b}" for b in ids])
        group.inject()
        return group

    def confirm(self, planned: PlannedFault, group: net.FaultGroup) -> dict[str, Any]:
        """A connect to the broker's peer port goes unanswered (the cut is in effect)."""
        return group.measure()

    def check(self, planned: PlannedFault, group: net.FaultGroup) -> str | None:
        return group.stopped_acting()

    def heal(self, planned: PlannedFault, group: net.FaultGroup) -> None:
        group.heal()


class Pause:
    """SIGSTOP of a target's process group; SIGCONT on heal."""

    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

    def target(self, planned: PlannedFault) -> str:
        return str(planned.spec.target)

    def inject(self, planned: PlannedFault) -> tuple[str, Any]:
        t = planned.spec.target
        c = self.ctx.cluster
        if t == "worker":
            i = _worker_index(self.ctx, planned)
            c.pause_worker(i, wait=False)
            return ("worker", i)
        if t == "executor":
            found = c.executors(_worker_index(self.ctx, planned))
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


def job_proxies(ctx: FaultContext, target: str) -> list[LinkProxy]:
    """The Toxiproxy proxies of the job's links to ``target`` (``kafka``: every broker and the bootstrap
    port; ``broker-<id>``: that broker's), [] when the stack has none."""
    base, _, idx = target.partition("-")
    if base not in ("kafka", "broker") or ctx.kafka is None:
        return []
    if base == "broker" and int(idx or 0) not in ctx.kafka.broker_ids:
        raise ValueError(f"target {target!r}: brokers are {[f'broker-{b}' for b in ctx.kafka.broker_ids]}")
    return list(ctx.kafka.job_links(None if base == "kafka" else [int(idx)]))


def link_endpoints(ctx: FaultContext, target: str) -> list[Endpoint]:
    """The endpoints (and so the ports) a network fault on ``target`` acts on."""
    base, _, idx = target.partition("-")
    if base in ("kafka", "broker"):  # the job's client links only: replication and the quorum are not the job's
        proxies = job_proxies(ctx, target)
        if proxies:  # the job reaches the brokers through these: their listen ports are its links
            return [Endpoint(p.name, "broker", "127.0.0.1", {"kafka": p.listen_port}) for p in proxies]
        eps = [Endpoint(e.name, e.role, e.host, {"kafka": e.ports["kafka"]}) for e in ctx.kafka.endpoints()
               if base == "kafka" or e.name == target]
        if not eps:
            raise ValueError(f"target {target!r}: brokers are {[e.name for e in ctx.kafka.endpoints()]}")
        return eps
    if base == "master":
        return [ctx.cluster.active_master().endpoint()]
    if base == "worker":
        i = int(idx or 0)
        return [ctx.cluster.workers[i].endpoint()]
    if base == "zookeeper":
        return [e for e in ctx.cluster.endpoints() if e.role == "zookeeper"]
    if base == "driver":
        conf = ctx.job.effective_conf
        return [Endpoint("driver", "driver", host=ctx.cluster.driver_host, ports={
            "rpc": int(conf["spark.driver.port"]), "blockmanager": int(conf["spark.driver.blockManager.port"])})]
    raise ValueError(f"unknown network target {target!r}")


class NetworkAction:
    """network_delay / packet_loss / network_partition / bandwidth_limit on a link's ports."""

    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

    def target(self, planned: PlannedFault) -> str:
        return str(planned.spec.target)

    def build(self, planned: PlannedFault) -> net.LinkFault:
        s = planned.spec
        eps = link_endpoints(self.ctx, str(s.target))
        # only the ports peers connect to (not web UIs): that is the link the fault is about
        ports = net.ports_of(*eps, names=[n for e in eps for n in e.ports if n != "webui"])
        sides = self.ctx.cluster.link_sides() if self.ctx.cluster is not None else []
        if sides:
            return self._in_namespaces(planned, sides, eps, ports)
        proxies = job_proxies(self.ctx, str(s.target))
        # through Toxiproxy where the job's Kafka links have proxies (no loss toxic there: iptables on
        # the proxies' ports, which only the job's clients use)
        fault = (toxic_fault(s.kind, s.params, proxies) if proxies and s.kind != "packet_loss"
                 else self._fault(s.kind, s.params, ports))
        # the job's connections only: the generator and the collector use the same broker ports and
        # must keep seeing the broker while the job cannot (docs/architecture.md, the observer)
        mark = self.ctx.link_scope.job_mark()
        if mark is None or fault.scope_limit():
            return fault
        return fault.only_marked(*mark)

    def _in_namespaces(self, planned: PlannedFault, sides: list[tuple[str, str]], eps: list[Endpoint],
                       ports: frozenset[int]) -> net.FaultGroup:
        """The fault in the namespace of each node on the job's side of the link (``on``: one node
        only), on the packets each peer host sends into it (a link to several hosts, such as the
        brokers, is one fault per host with that host's ports): each node loses its side of the
        link, as on a network."""
        s = planned.spec
        on = s.params.get("on")
        chosen = [(n, ns) for n, ns in sides if on is None or n == on]
        if not chosen:
            raise ValueError(f"on={on!r}: the job's nodes are {[n for n, _ in sides]}")
        hosts = sorted({e.host for e in eps})
        faults, nodes, labels = [], [], []
        for node, ns in chosen:
            for host in hosts:
                host_ports = net.ports_of(*[e for e in eps if e.host == host]) & ports
                faults.append(self._fault(s.kind, s.params, host_ports).in_namespace(ns, host))
                nodes.append(node)
                labels.append(node if len(hosts) == 1 else f"{node}<-{host}")
        return net.FaultGroup(faults, nodes, labels)

    @staticmethod
    def _fault(kind: str, params: dict[str, Any], ports: frozenset[int]) -> net.NetworkFault:
        if kind == "network_delay":
            # every packet of the link, either way, is held ``ms``: a heartbeat and its reply are
            # both late, as with netem on both hosts of a link (PGVal's packet delay)
            return net.NetworkDelay(ports, params["ms"], params.get("jitter_ms", 0), direction="both")
        if kind == "packet_loss":
            return net.PacketLoss(ports, params["percent"])
        if kind == "network_partition":
            return net.Partition(ports)
        if kind == "bandwidth_limit":
            return net.BandwidthLimit(ports, params["kbit"])
        raise ValueError(kind)

    def inject(self, planned: PlannedFault) -> net.LinkFault:
        fault = self.build(planned)
        fault.inject()
        return fault

    def confirm(self, planned: PlannedFault, fault: net.LinkFault) -> dict[str, Any]:
        """Probe the link under the fault: what it measured (``measured_delay_ms``,
        ``measured_loss``) goes into the ``fault_injected`` event; not in effect raises. The probe
        gets half the fault's duration, so that it never holds the fault past its heal. ``scope``
        says whose connections the fault acts on: ``job`` (the harness's own clients are spared) or
        ``all`` (the observer shares the fault: no job group on this host, with the reason)."""
        measured = fault.measure(None if planned.heal_after is None else planned.heal_after / 2)
        if isinstance(fault, net.FaultGroup):
            return {**measured, "scope": "namespace", "nodes": fault.nodes}
        if isinstance(fault, ToxicFault):  # only the job's clients connect through the proxies
            return {**measured, "scope": "job", "mechanism": "toxiproxy"}
        if fault.conn_mark is not None:
            return {**measured, "scope": "job"}
        scope = self.ctx.link_scope
        why = fault.scope_limit() if scope.job_mark() is not None else scope.unscoped_reason()
        return {**measured, "scope": "all", "scope_reason": why}

    def check(self, planned: PlannedFault, fault: net.LinkFault) -> str | None:
        """While active: why the fault stopped acting (delayer died, rule gone), or None."""
        return fault.stopped_acting()

    def heal(self, planned: PlannedFault, fault: net.LinkFault) -> None:
        fault.heal()


class PoisonRecords:
    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

    def target(self, planned: PlannedFault) -> str:
        return "generator"

    def inject(self, planned: PlannedFault) -> None:
        if self.ctx.poison is None:
            raise RuntimeError("the generator has no poison schedule")
        self.ctx.poison.add(int(planned.spec.params.get("count", 1)))

    def heal(self, planned: PlannedFault, handle: None) -> None:
        """Nothing to heal."""


def actions_for(ctx: FaultContext) -> dict[str, Any]:
    """One action object per fault kind, bound to this run's stack."""
    netw = NetworkAction(ctx)
    return {
        "kill_worker": KillWorker(ctx),
        "kill_executor": KillExecutor(ctx),
        "kill_driver": KillDriver(ctx),
        "kill_master": KillMaster(ctx),
        "kill_broker": KillBroker(ctx),
        "isolate_broker": IsolateBroker(ctx),
        "pause": Pause(ctx),
        "network_delay": netw,
        "packet_loss": netw,
        "network_partition": netw,
        "bandwidth_limit": netw,
        "poison_records": PoisonRecords(ctx),
        **hdfs_actions(ctx),
    }


# -- aimed moments -------------------------------------------------------------------------------

POLL_S = 0.005
#: how many micro-batches an aimed fault tries before it fires anyway and reports ``missed``
MAX_AIM_ATTEMPTS = 5
#: without a broker's append stamp, output that reached the collector this long after a batch was planned
#: is taken to be that batch's (the previous batch's output is read a little late)
ARRIVAL_SLACK_S = 0.06


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
    """The phase of micro-batch ``batch`` now (:data:`~pytest_streamchaos.faults.scheduler.PHASES`)."""
    if batch is None:
        return "idle"
    done = ctx.aimed()[0].latest_committed_batch()
    if done is not None and done >= batch:
        return "committed"
    return "sink_written" if written_since_planned(ctx, batch) else "running"


def wait_uncommitted_output(ctx: FaultContext):
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
                return Aim("uncommitted_output", n, phase, phase == "sink_written", attempts)
            job.resume()
            return None

        return _aim_until(aimed, stop, deadline)

    return wait


def wait_tasks_running(ctx: FaultContext):
    """Moment detector: a micro-batch is executing (planned in ``offsets/``, not committed) and the
    chosen worker runs an executor, so its tasks are in flight. The phase is taken at that instant;
    a batch that committed meanwhile is retried like a missed output moment."""

    def wait(planned: PlannedFault, stop: threading.Event, deadline: float) -> Aim | None:
        attempts, tried = 0, None

        def aimed() -> Aim | None:
            nonlocal attempts, tried
            n = ctx.aimed()[0].uncommitted_batch()
            if n is None or n == tried or not ctx.cluster.executors(_worker_index(ctx, planned)):
                return None
            attempts, tried = attempts + 1, n
            phase = batch_phase(ctx, n)
            hit = phase in ("running", "sink_written")
            return Aim("tasks_running", n, phase, hit, attempts) if hit or attempts >= MAX_AIM_ATTEMPTS else None

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


def moments_for(ctx: FaultContext) -> dict[str, MomentDetector]:
    return {"uncommitted_output": wait_uncommitted_output(ctx), "tasks_running": wait_tasks_running(ctx)}


# -- HDFS ----------------------------------------------------------------------------------------


class _HdfsAction:
    """Base of the HDFS faults: the run's HDFS, or a failure saying how to get one."""

    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

    def _hdfs(self) -> HdfsCluster[Any]:
        if self.ctx.hdfs is None:
            raise RuntimeError("this run has no HDFS: an HDFS fault needs chaos.run(..., checkpoint=\"hdfs\")")
        return self.ctx.hdfs

    def _watch_registered(self, hdfs: HdfsCluster[Any], datanodes: list[int]) -> None:
        """Record when each of ``datanodes`` has registered with the NameNode (polled in the
        background by ``ctx.watch``, from the heal on)."""
        for i in datanodes:
            self.ctx.watch("datanode_registered", f"datanode-{i}", functools.partial(hdfs.datanode_registered, i))


class HdfsKillNamenode(_HdfsAction):
    """kill_namenode: signal the NameNode; heal restarts it on the same ports and name dir."""

    def target(self, planned: PlannedFault) -> str:
        return "namenode"

    def inject(self, planned: PlannedFault) -> None:
        self._hdfs().kill_namenode(_sig(planned), wait=False)

    def confirm(self, planned: PlannedFault, handle: None) -> None:
        hdfs = self._hdfs()
        hdfs.wait_gone(hdfs.namenode, CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, handle: None) -> None:
        hdfs = self._hdfs()
        hdfs.restart_namenode(wait=False)
        # a new NameNode starts in safe mode and knows no DataNode: each registers again and reports
        # its blocks, then the NameNode leaves safe mode
        self.ctx.watch("namenode_safemode_exit", "namenode", hdfs.out_of_safemode)
        self._watch_registered(hdfs, list(range(len(hdfs.datanodes))))


class HdfsPauseNamenode(_HdfsAction):
    """pause_namenode: SIGSTOP the NameNode (clients hang, DataNodes miss heartbeat replies)."""

    def target(self, planned: PlannedFault) -> str:
        return "namenode"

    def inject(self, planned: PlannedFault) -> None:
        self._hdfs().pause_namenode(wait=False)

    def confirm(self, planned: PlannedFault, handle: None) -> None:
        hdfs = self._hdfs()
        hdfs.wait_paused(hdfs.namenode, CONFIRM_PAUSE_S)

    def heal(self, planned: PlannedFault, handle: None) -> None:
        self._hdfs().resume_namenode()


class HdfsKillDatanode(_HdfsAction):
    """kill_datanode: signal DataNode ``index`` (default 0); record when the NameNode declares it
    dead; heal (with restart_after) starts it again on its ports and data dir."""

    def _index(self, planned: PlannedFault) -> int:
        i = planned.spec.index if isinstance(planned.spec.index, int) else 0
        n = len(self._hdfs().datanodes)
        if i >= n:
            raise IndexError(f"index={i}: the HDFS cluster has {n} DataNodes")
        return i

    def target(self, planned: PlannedFault) -> str:
        return f"datanode-{self._index(planned)}"

    def inject(self, planned: PlannedFault) -> int:
        hdfs, i = self._hdfs(), self._index(planned)
        hdfs.kill_datanode(i, _sig(planned), wait=False)
        self.ctx.watch("datanode_dead", f"datanode-{i}", lambda: f"datanode-{i}" in hdfs.state().dead,
                       timeout=hdfs.dead_after_s + 30)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        hdfs = self._hdfs()
        hdfs.wait_gone(hdfs.datanodes[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        hdfs = self._hdfs()
        hdfs.restart_datanode(i, wait=False)
        self._watch_registered(hdfs, [i])


def hdfs_actions(ctx: FaultContext) -> dict[str, Any]:
    """The HDFS fault kinds' actions (they fail, saying why, in a run without HDFS)."""
    return {"kill_namenode": HdfsKillNamenode(ctx), "pause_namenode": HdfsPauseNamenode(ctx),
            "kill_datanode": HdfsKillDatanode(ctx)}
