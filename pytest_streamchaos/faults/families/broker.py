"""The broker family: a Kafka broker killed, or cut from the other brokers while its clients still
reach it. Which broker: a role of a partition of the job's topics (its leader, a follower), the
active KRaft controller, all of them, or a broker id."""

from __future__ import annotations

import dataclasses
import signal
import time
from typing import Any, ClassVar

from pytest_streamchaos.faults.context import CONFIRM_KILL_S, FaultContext, signal_of
from pytest_streamchaos.faults.kind import KILL_ARGS, FaultKind, H, Kill, SearchTarget
from pytest_streamchaos.faults.moments import BETWEEN_BATCHES, OFFSETS_LOGGED, OUTPUT_VISIBLE_UNCOMMITTED, TASKS_RUNNING
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError, number
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.history import Aim
from pytest_streamchaos.netem import rules as net
from pytest_streamchaos.netem.features import network_features
from pytest_streamchaos.stack.base import NetFaultError
from pytest_streamchaos.stack.capabilities import BrokerIsolation, BrokerKill, PartitionLeaders

#: which broker a broker fault hits: a role of a partition of the job's topics, or a broker id
BROKER_ROLES = ("leader", "follower", "controller", "all")
BROKER_ARGS = {
    "topic": "whose partition's 'leader' / 'follower' is meant: 'input' (default) or 'output'",
    "partition": "that partition (default 0)",
}


def check_broker_args(kind: str, params: dict[str, Any]) -> None:
    """``topic`` and ``partition`` of a broker role, if given."""
    if "topic" in params and params["topic"] not in ("input", "output"):
        raise FaultSpecError(f"@{kind}: topic={params['topic']!r} must be 'input' or 'output'")
    if "partition" in params:
        number(kind, "partition", params["partition"], integer=True)


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
    leaders = ctx.brokers(PartitionLeaders)
    if idx == "follower":
        followers = leaders.followers_of(topic, partition)
        if not followers:
            raise RuntimeError(f"{topic}[{partition}] has no in-sync follower (a cluster of one broker?)")
        return [followers[0]]
    return [leaders.leader_of(topic, partition)]


#: a metadata answer about a killed leader's partition shows the leadership as it was at the kill only if it
#: comes well before the broker is fenced (the session timeout: 4 s on the stack's KRaft cluster, 9 s by
#: Kafka's default): one that came later (a request the client first sent to the killed broker, measured
#: at 4.0 s) tells nothing, and the kill is judged on the lookup before it alone
AFTER_KILL_EVIDENCE_S = 1.0


@dataclasses.dataclass
class LeaderKill:
    """An aimed leader kill: its partition, whether the killed broker led it at the kill (led by it when
    the kill was sent, a live broker; still led by it right after), and when the kill was sent."""

    topic: str
    partition: int
    leading: bool
    sent_at: float


def led_partition(ctx: FaultContext, planned: PlannedFault) -> tuple[str, int] | None:
    """The partition whose leader a broker fault aims at (``index`` 'leader', the default), or None."""
    if planned.spec.index not in (None, "leader"):
        return None
    topic = ctx.output_topic if planned.spec.params.get("topic") == "output" else ctx.input_topic
    return None if topic is None else (topic, int(planned.spec.params.get("partition", 0)))


def leader_now(ctx: FaultContext, topic: str, partition: int) -> int | None:
    """The leader of ``topic``/``partition`` in a fresh metadata answer (None: none now, or no answer)."""
    state = (ctx.kafka.partition_states(topic) or {}).get(partition)
    return None if state is None or state.leader < 0 else state.leader


def broker_names(ids: list[int]) -> str:
    return ",".join(f"broker-{b}" for b in ids)


class _OnBrokers(FaultKind[H]):
    """Remembers which brokers each occurrence hit (a role resolves when it is injected)."""

    roles: ClassVar[tuple[str, ...]] = BROKER_ROLES

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.resolved: dict[int, list[int]] = {}

    def target(self, planned: PlannedFault) -> str:
        got = self.resolved.get(id(planned))
        return broker_names(got) if got else "broker-?"

    def _brokers(self, planned: PlannedFault) -> list[int]:
        ids = brokers_of(self.ctx, planned)
        self.resolved[id(planned)] = ids
        return ids


class KillBroker(_OnBrokers[list[int]], Kill[list[int]]):
    """SIGKILL (or SIGTERM) of broker JVMs; started again on heal (same ports and log directory)."""

    name = "kill_broker"
    doc = ("kill a Kafka broker's JVM (SIGKILL: a lost machine) and start it again after "
           "restart_after/duration; index: 'leader' (default) of a partition of the job's input (or "
           "output: topic='output'), 'follower', 'controller' (the active KRaft controller), 'all', "
           "or a broker id")
    args = {**KILL_ARGS, **BROKER_ARGS}
    needs = (BrokerKill, PartitionLeaders)
    moments = (TASKS_RUNNING, BETWEEN_BATCHES, OFFSETS_LOGGED, OUTPUT_VISIBLE_UNCOMMITTED)
    takes_down = "broker"
    # the leader of partition 0 of the job's input, of its output (docs/explore.md: the broker phases)
    search_targets = (SearchTarget("input_leader", "leader", serves="input"),
                      SearchTarget("output_leader", "leader", {"topic": "output"}, serves="output"))

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.led: dict[int, LeaderKill] = {}  #: each aimed leader kill, by occurrence

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        super().check_params(params)  # the kill's signal
        check_broker_args(cls.name, params)

    def inject(self, planned: PlannedFault) -> list[int]:
        ids = self._brokers(planned)  # an aimed leader: looked up now, when its moment has come
        part = led_partition(self.ctx, planned) if planned.spec.when is not None else None
        if part is not None:  # a leader the metadata still names after an earlier kill is dead, not leading
            self.led[id(planned)] = LeaderKill(*part, ids[0] in self.ctx.brokers(BrokerKill).alive_brokers(),
                                             time.time())
        for b in ids:
            self.ctx.brokers(BrokerKill).kill_broker(b, signal_of(planned), wait=False)
        return ids

    def confirm(self, planned: PlannedFault, ids: list[int]) -> dict[str, object] | None:
        """Every killed broker's JVM is gone. An aimed leader kill first asks who leads its partition
        right after the signal (milliseconds: a SIGKILLed broker is fenced only after the session
        timeout, seconds): the killed broker still, so it led across the kill, or another one -- the
        leader moved between the lookup and the kill."""
        led = self.led.get(id(planned))
        after = None
        if led is not None and led.leading and signal_of(planned) == signal.SIGKILL:
            # (SIGTERM: a controlled shutdown moves the leadership away on purpose, before the JVM exits)
            after = leader_now(self.ctx, led.topic, led.partition)
            if time.time() - led.sent_at <= AFTER_KILL_EVIDENCE_S:
                led.leading = after == ids[0]
            else:  # answered too late to tell the leadership at the kill from the election after it
                after = None
        for b in ids:
            self.ctx.brokers(BrokerKill).wait_gone(b, CONFIRM_KILL_S)
        return None if led is None else {"leader": ids[0], "leader_after_kill": after,
                                         "partition": f"{led.topic}[{led.partition}]"}

    def landed(self, planned: PlannedFault, ids: list[int], aim: Aim) -> Aim:
        """An aimed leader kill hit only when the killed broker led the partition at the kill (see
        :meth:`confirm`); a leader that moved meanwhile is a miss, retried like any missed moment."""
        led = self.led.get(id(planned))
        return aim if led is None or led.leading else dataclasses.replace(aim, hit=False)

    def heal(self, planned: PlannedFault, ids: list[int]) -> None:
        for b in ids:
            self.ctx.brokers(BrokerKill).restart_broker(b, wait=False)


class IsolateBroker(_OnBrokers[net.FaultGroup]):
    """A broker cut from the other brokers (replication, the KRaft quorum) while the job's clients and
    the harness still reach it: iptables rules on its peer ports and on the connections it opens to
    its peers (:class:`pytest_streamchaos.netem.rules.BrokerCut`)."""

    name = "isolate_broker"
    doc = ("cut a Kafka broker from the other brokers (replication and the KRaft quorum) while clients still "
           "reach it, for duration")
    args = BROKER_ARGS
    needs = (BrokerIsolation, PartitionLeaders)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_broker_args(cls.name, params)

    @classmethod
    def needs_host_network(cls, spec: FaultSpec) -> bool:
        return True  # iptables rules on the broker's peer ports and on its marked connections

    @classmethod
    def unavailable(cls, spec: FaultSpec) -> str | None:
        # (the mark itself comes from the stack, BrokerIsolation.node_mark: BrokerCut refuses to act without)
        return network_features().missing("drop", cls.name)

    def inject(self, planned: PlannedFault) -> net.FaultGroup:
        ids = self._brokers(planned)
        kafka, why = self.ctx.brokers(BrokerIsolation), self.ctx.link_scope.unscoped_reason()
        if any(kafka.node_mark(b) is None for b in ids):
            raise NetFaultError(f"{self.name} needs the broker's connections told apart, which needs the job group "
                                f"({why}): run as root on a host with cgroup v2 and iptables")
        others = self.ctx.kafka.broker_ids
        cuts = [net.BrokerCut(kafka.peer_ports(b), [p for o in others if o != b for p in kafka.peer_ports(o)],
                              kafka.node_mark(b), unmarked_reason=why) for b in ids]
        group = net.FaultGroup(cuts, [f"broker-{b}" for b in ids])
        group.inject()
        return group

    def confirm(self, planned: PlannedFault, group: net.FaultGroup) -> dict[str, object]:
        """A connect to the broker's peer port goes unanswered (the cut is in effect)."""
        return group.measure()

    def check(self, planned: PlannedFault, group: net.FaultGroup) -> str | None:
        return group.stopped_acting()

    def heal(self, planned: PlannedFault, group: net.FaultGroup) -> None:
        group.heal()


KINDS = (KillBroker, IsolateBroker)
