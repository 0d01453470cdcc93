"""The topic family: Kafka's own operations on the job's topics, as operators and retention perform them,
through Kafka's admin API -- the partitions reassigned (their leaders or replicas moved), partitions added,
the topic deleted and created again, records deleted before the job read them.

These are the operations behind the Kafka source's correctness reports: a reassignment during a batch
(SPARK-41375: the source saw no partitions and re-read everything from earliest), partitions that change
under a query (SPARK-53560), offsets that vanish -- a topic deleted and recreated, retention deleting unread
records -- which the source reports as data loss (``failOnDataLoss``, true by default) or skips. Each
fault's ``fault_injected`` event carries the admin API's view before and after it (partitions, replicas,
leaders, each partition's log start and end offsets); a fault that destroys records says which
(``destroyed``: the offset ranges per partition, and when), so the run's ``damage`` check counts the
records the job had not read (the gap) and says whether the job failed loudly or went on without them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict

from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.context import FaultContext, having
from pytest_streamchaos.faults.kind import FaultKind, H, SearchTarget
from pytest_streamchaos.faults.moments import BETWEEN_BATCHES, OFFSETS_LOGGED, OUTPUT_VISIBLE_UNCOMMITTED, TASKS_RUNNING
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError, number
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import KafkaCluster, PartitionView
from pytest_streamchaos.stack.capabilities import TopicAdmin

#: how long a topic operation's effect may take to show in the admin API's view (a replica to catch up)
SETTLE_S = 60.0
#: the moments a topic operation can be aimed at: between the job's steps, where it reads its input
TOPIC_MOMENTS = (BETWEEN_BATCHES, OFFSETS_LOGGED, TASKS_RUNNING)


def topic_name(ctx: FaultContext, planned: PlannedFault) -> str:
    """The job's topic a fault acts on: its input, or (``topic='output'``) its output topic."""
    if planned.spec.params.get("topic", "input") == "output":
        if ctx.output_topic is None:
            raise ValueError("topic='output': the job's output is not a Kafka topic of this run")
        return str(ctx.output_topic)
    return str(ctx.input_topic)


class PartitionSeen(TypedDict):
    """One partition as the admin API shows it: leader, replicas, in-sync replicas, [log start, end offset]."""

    leader: int
    replicas: list[int]
    isr: list[int]
    offsets: list[int]


#: a topic as the admin API shows it, by partition (JSON keys)
TopicSeen = dict[str, PartitionSeen]


def view(ctx: FaultContext, topic: str) -> TopicSeen:
    """The admin API's view of ``topic`` now: each partition's leader and replicas, log start and end offset."""
    states = ctx.kafka.partition_states(topic) or {}
    offsets = ctx.brokers(TopicAdmin).topic_offsets(topic) or {}
    return {str(p): {"leader": s.leader, "replicas": list(s.replicas), "isr": list(s.isr),
                     "offsets": list(offsets.get(p, (-1, -1)))} for p, s in sorted(states.items())}


def _ranges(offsets: Mapping[int, tuple[int, int]]) -> dict[str, list[int]]:
    """The non-empty offset ranges ``[start, end)`` per partition (JSON keys)."""
    return {str(p): [lo, hi] for p, (lo, hi) in sorted(offsets.items()) if hi > lo}


class _OnTopic(FaultKind[H]):
    """A Kafka operation on one of the job's topics (``topics``: which it may be), through the admin API:
    refused before the run where the cluster's ACLs deny it the ``operations`` it needs on the cluster (what
    it needs on the topic, made by the run, Kafka's answer to the operation names)."""

    topics: ClassVar[tuple[str, ...]] = ("input",)
    #: Kafka's ACL operations on the cluster resource the fault needs
    operations: ClassVar[tuple[str, ...]] = ()
    takes_down = "other"
    #: the search aims it at the job's input
    search_targets: ClassVar[tuple[str | SearchTarget, ...]] = (SearchTarget("input", serves="input"),)
    #: a Kafka operation is not undone: the topic stays as the operation left it
    permanent_always: ClassVar[bool] = True

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        topic = params.setdefault("topic", "input")
        if topic not in cls.topics:
            raise FaultSpecError(f"@{cls.name}: topic={topic!r} must be {' or '.join(map(repr, cls.topics))} (the "
                                 "job's own topic of that role)")

    @classmethod
    def parse(cls, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> FaultSpec:
        spec = super().parse(args, kwargs)
        if cls.permanent_always and (spec.duration is not None or spec.every is not None):
            raise FaultSpecError(f"@{cls.name} cannot be undone (Kafka cannot take it back): leave out "
                                 f"{'duration' if spec.duration is not None else 'every'}; the fault is permanent")
        return spec

    @classmethod
    def permanent(cls, spec: FaultSpec) -> bool:
        return cls.permanent_always

    needs = (TopicAdmin,)

    @classmethod
    def refused_by_kafka(cls, spec: FaultSpec, kafka: KafkaCluster) -> str | None:
        why = having(kafka, TopicAdmin).administration_refused(cls.operations) if cls.operations else None
        if why is None:
            return None
        return (f"it acts through Kafka's admin API ({', '.join(cls.operations)} on the cluster), and {why}: run it on "
                "the Kafka the plugin starts (without --chaos-kafka-bootstrap), grant this client those ACLs, or "
                "leave the fault out")

    def target(self, planned: PlannedFault) -> str:
        return topic_name(self.ctx, planned)


@dataclass
class Moved:
    """A submitted reassignment: the topic, its assignment before and the one asked for, partition -> broker
    ids (the first the preferred leader), and the admin API's view before it."""

    topic: str
    before: dict[int, list[int]]
    target: dict[int, list[int]]
    view_before: TopicSeen = field(default_factory=dict)


def rotated(replicas: Sequence[int]) -> list[int]:
    """The replica list with its next replica first: the preferred leader moves, the replicas stay."""
    return [*replicas[1:], *replicas[:1]]


def moved_to(replicas: Sequence[int], brokers: Sequence[int], load: Mapping[int, int]) -> list[int] | None:
    """The replica list with its first replica (the preferred leader) replaced by the least loaded broker that
    holds none of it (``load``: replicas per broker), None when every broker holds one."""
    spare = sorted((b for b in brokers if b not in replicas), key=lambda b: (load.get(b, 0), b))
    return None if not spare else [spare[0], *replicas[1:]]


class ReassignPartitions(_OnTopic[Moved]):
    """``reassign_partitions``: the partitions of the job's topic reassigned with Kafka's own
    ``kafka-reassign-partitions`` (the admin API's AlterPartitionReassignments), then their preferred leaders
    elected, so that each partition's leadership moves. ``move='leaders'`` (default): each partition's replica
    list rotated (the same brokers, another one first); ``move='replicas'``: each partition's preferred
    leader's replica moved to a broker that held none (its data copied there; needs more brokers than the
    topic's replication factor). Healed after ``duration`` (the assignment before, its leaders elected), else
    permanent, as an operator's reassignment is."""

    name = "reassign_partitions"
    doc = ("reassign the partitions of the job's topic (Kafka's kafka-reassign-partitions) and elect their "
           "preferred leaders: the leaders move (move='leaders', default) or a replica moves to another broker "
           "(move='replicas'); back after duration, else permanent")
    args = {"topic": "the job's 'input' (default) or 'output' topic",
            "move": "'leaders' (default: each partition's replicas rotated, another replica leads) or 'replicas' "
                    "(the leading replica moved to a broker without one: its data copied)",
            "partition": "only this partition (default: all of the topic's)"}
    topics = ("input", "output")
    operations = ("ALTER",)  # AlterPartitionReassignments and ElectLeaders: ALTER on the cluster
    permanent_always = False
    moments = (*TOPIC_MOMENTS, OUTPUT_VISIBLE_UNCOMMITTED)
    # nothing is taken down: every broker stays, the leadership moves (the search folds none of its cells)
    takes_down = "other"
    search_targets = (SearchTarget("input_leaders", serves="input"),
                      SearchTarget("output_leaders", params={"topic": "output"}, serves="output"))

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        super().check_params(params)
        if params.setdefault("move", "leaders") not in ("leaders", "replicas"):
            raise FaultSpecError(f"@{cls.name}: move={params['move']!r} must be 'leaders' or 'replicas'")
        if "partition" in params:
            number(cls.name, "partition", params["partition"], integer=True)

    @classmethod
    def permanent(cls, spec: FaultSpec) -> bool:
        return spec.duration is None

    @classmethod
    def refused_by_kafka(cls, spec: FaultSpec, kafka: KafkaCluster) -> str | None:
        brokers = len(kafka.broker_ids)
        if brokers < 2:
            return f"a reassignment needs at least 2 brokers, and the cluster has {brokers}: --chaos-kafka-brokers 3"
        if spec.params.get("move") == "replicas" and kafka.replication >= brokers:
            return (f"move='replicas' moves a replica to a broker that holds none, and the run's topics have "
                    f"{kafka.replication} replicas on {brokers} brokers (every broker holds one): run with "
                    f"--chaos-kafka-brokers {kafka.replication + 1}, or move='leaders'")
        return super().refused_by_kafka(spec, kafka) or having(kafka, TopicAdmin).reassignment_refused()

    def inject(self, planned: PlannedFault) -> Moved:
        kafka, topic = self.ctx.kafka, topic_name(self.ctx, planned)
        states = kafka.partition_states(topic) or {}
        wanted = planned.spec.params.get("partition")
        before = {p: list(s.replicas) for p, s in states.items() if wanted is None or p == wanted}
        if not before:
            raise ValueError(f"{topic} has no partition {wanted}")
        moved = Moved(topic, before, self._target(planned, before, states), view(self.ctx, topic))
        self.ctx.brokers(TopicAdmin).reassign_partitions(topic, moved.target)
        if planned.spec.params.get("move") == "replicas":  # the new replica catches up first: elect then
            threading.Thread(target=self._lead_when_complete, args=(moved,), name=f"{self.name}-complete",
                             daemon=True).start()
        return moved

    def _target(self, planned: PlannedFault, before: dict[int, list[int]], states: Mapping[int, PartitionView]
                ) -> dict[int, list[int]]:
        if planned.spec.params.get("move") != "replicas":
            return {p: rotated(r) for p, r in before.items()}
        load: dict[int, int] = {}
        for s in states.values():
            for b in s.replicas:
                load[b] = load.get(b, 0) + 1
        out = {}
        for p, r in before.items():
            target = moved_to(r, self.ctx.kafka.broker_ids, load)
            if target is None:
                raise ValueError(f"{planned.spec.params.get('topic')}[{p}] has a replica on every broker: nothing to "
                                 "move it to")
            load[target[0]] = load.get(target[0], 0) + 1
            out[p] = target
        return out

    def _complete(self, moved: Moved) -> bool:
        """Whether every broker's view shows the reassignment done: the asked replicas, in order, all in sync,
        and each partition led by its preferred replica."""
        return all(states is not None and _in_sync(states, moved.target)
                   and all(states[p].leader == r[0] for p, r in moved.target.items())
                   for states in self.ctx.brokers(TopicAdmin).partition_views(moved.topic))

    def _lead_when_complete(self, moved: Moved) -> None:
        """(move='replicas') once every new replica is in sync, its preferred leader elected."""
        try:
            self._await_in_sync(moved)
            self.ctx.brokers(TopicAdmin).elect_preferred_leaders(moved.topic, sorted(moved.target))
        except Exception:  # the confirmation reports what did not complete
            pass

    def confirm(self, planned: PlannedFault, moved: Moved) -> dict[str, object]:
        """The preferred leaders elected (a rotation completes at once; a moved replica's partition is elected
        again once it is in sync), then: the admin API shows the new assignment, in sync, with its preferred
        leaders leading; the time it first did is ``reassignment_completed`` on the timeline. The election is
        here, not in :meth:`inject`: the fault's time is stamped when ``inject`` returns, and the leaders it
        moves must be seen moving after it (a CI run saw both elections stamped before the fault's time when
        they were made in ``inject``)."""
        self.ctx.brokers(TopicAdmin).elect_preferred_leaders(moved.topic, sorted(moved.target))
        poll(lambda: self._complete(moved), SETTLE_S, interval=0.1, clock=time.time,
             on_timeout=lambda _: TimeoutError(f"the reassignment of {moved.topic} to {moved.target} did not "
                                               f"complete within {SETTLE_S:g}s: "
                                               f"{view(self.ctx, moved.topic)}"))
        if self.ctx.recorder is not None:
            self.ctx.recorder.record(Kind.REASSIGNMENT_COMPLETED, moved.topic, assignment=_json(moved.target))
        return {"move": planned.spec.params.get("move"), "assignment_before": _json(moved.before),
                "assignment_after": _json(moved.target), "before": moved.view_before,
                "after": view(self.ctx, moved.topic)}

    def heal(self, planned: PlannedFault, moved: Moved) -> None:
        """The assignment before, its preferred leaders elected once it is in sync."""
        back, admin = Moved(moved.topic, moved.target, moved.before), self.ctx.brokers(TopicAdmin)
        admin.reassign_partitions(moved.topic, back.target)
        self._await_in_sync(back)
        admin.elect_preferred_leaders(moved.topic, sorted(back.target))

    def _await_in_sync(self, moved: Moved) -> None:
        poll(lambda: self._in_sync(moved), SETTLE_S, interval=0.2, clock=time.time,
             on_timeout=lambda _: TimeoutError(f"{moved.topic}: the replicas {moved.target} not in sync within "
                                               f"{SETTLE_S:g}s"))

    def _in_sync(self, moved: Moved) -> bool:
        """Whether every partition has the asked replicas, in order, all in sync (the cluster's view)."""
        return _in_sync(self.ctx.kafka.partition_states(moved.topic) or {}, moved.target)


def _in_sync(states: Mapping[int, PartitionView], target: Mapping[int, Sequence[int]]) -> bool:
    """Whether every partition of ``target`` has its replicas, in order, all in sync, in ``states``."""
    return all(p in states and list(states[p].replicas) == list(r) and set(states[p].isr) >= set(r)
               for p, r in target.items())


def _json(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(assignment.items())}


class Grown(TypedDict):
    """What ``add_partitions`` did: the topic, its partition count before, the count asked for, its view before."""

    topic: str
    partitions_before: int
    count: int
    before: TopicSeen


class Recreated(TypedDict):
    """What ``recreate_topic`` destroyed: per partition, ``[log start, None]`` (open-ended: bounded by the
    deletion's time ``destroyed_at``), and the topic's view before."""

    topic: str
    destroyed: dict[str, list[int | None]]
    destroyed_at: float
    before: TopicSeen


class Expired(TypedDict):
    """What ``expire_records`` destroyed: per partition, the offset range ``[start, end)`` deleted, when, the
    topic's view before, and each partition's log start after."""

    topic: str
    destroyed: dict[str, list[int]]
    destroyed_at: float
    before: TopicSeen
    log_start_after: dict[str, int]


class AddPartitions(_OnTopic[Grown]):
    """``add_partitions(count=N)``: the job's input grows to ``count`` partitions (default: one more) while it
    runs (permanent:
    Kafka never removes a partition). The generator's producer refreshes its metadata every second in such a
    run, so that its records reach the new partitions at once; the run's ``damage`` check says how many of
    the new partitions' records the job read, and from which offset it started reading them."""

    name = "add_partitions"
    doc = ("grow the job's input topic to count partitions (Kafka's CreatePartitions; permanent): the new "
           "partitions' records, whether and from where the job read them, are in the verdict")
    args = {"topic": "the job's 'input' (default)",
            "count": "the partition count the topic grows to (default: one more than it has)"}
    moments = TOPIC_MOMENTS

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        super().check_params(params)
        if "count" in params:
            number(cls.name, "count", params["count"], minimum=2, integer=True)

    @classmethod
    def refused_by_topic(cls, spec: FaultSpec, partitions: int) -> str | None:
        count = int(spec.params.get("count", partitions + 1))
        if count > partitions:
            return None
        return (f"count={count} does not grow the input: it has {partitions} partition{'s' * (partitions != 1)} "
                f"(chaos.run(partitions={partitions})); give count > {partitions}, the partition count it grows to")

    @classmethod
    def generator_conf(cls, spec: FaultSpec) -> dict[str, object]:
        # librdkafka asks for the topic's metadata every 5 minutes by default: a producer that has not yet
        # looked would keep writing to the old partitions for the whole run
        return {"topic.metadata.refresh.interval.ms": 1000}

    def inject(self, planned: PlannedFault) -> Grown:
        topic = topic_name(self.ctx, planned)
        before = view(self.ctx, topic)
        count = int(planned.spec.params.get("count", len(before) + 1))
        self.ctx.brokers(TopicAdmin).add_partitions(topic, count)
        return {"topic": topic, "partitions_before": len(before), "count": count, "before": before}

    def confirm(self, planned: PlannedFault, done: Grown) -> dict[str, object]:
        after = view(self.ctx, done["topic"])
        if len(after) != done["count"]:
            raise RuntimeError(f"{done['topic']} has {len(after)} partitions after growing to {done['count']}")
        return {**done, "added": sorted(set(map(int, after)) - set(map(int, done["before"]))), "after": after}


class RecreateTopic(_OnTopic[Recreated]):
    """``recreate_topic``: the job's input deleted and created again at once with as many partitions (permanent:
    its records are gone, its offsets start at 0 again). What the job had not read of it is the gap: the job
    fails loudly on the offsets that went back (``failOnDataLoss=true``, Spark's default) or goes on without
    those records."""

    name = "recreate_topic"
    doc = ("delete the job's input topic and create it again with as many partitions (its records gone, offsets "
           "from 0): the job fails loudly or loses the records it had not read, counted")
    args = {"topic": "the job's 'input' (default)"}
    operations = ("CREATE",)  # the topic's creation (its deletion: DELETE on the topic)
    moments = TOPIC_MOMENTS

    def inject(self, planned: PlannedFault) -> Recreated:
        kafka, topic = self.ctx.kafka, topic_name(self.ctx, planned)
        before = view(self.ctx, topic)
        states = kafka.partition_states(topic) or {}
        offsets = self.ctx.brokers(TopicAdmin).topic_offsets(topic) or {}
        replication = len(next(iter(states.values())).replicas) if states else None
        kafka.delete_topic(topic)
        deleted = time.time()
        if self.ctx.recorder is not None:
            self.ctx.recorder.record(Kind.TOPIC_DELETED, topic, t=deleted)
        kafka.create_topic(topic, partitions=len(states), replication=replication)
        # every record acknowledged before the deletion was in the old topic, also those after the offsets were
        # read: the ranges are open-ended, bounded by the deletion's time
        return {"topic": topic, "destroyed": {str(p): [lo, None] for p, (lo, _) in sorted(offsets.items())},
                "destroyed_at": deleted, "before": before}

    def confirm(self, planned: PlannedFault, done: Recreated) -> dict[str, object]:
        after = view(self.ctx, done["topic"])
        if len(after) != len(done["before"]):
            raise RuntimeError(f"{done['topic']} came back with {len(after)} partitions, not {len(done['before'])}")
        return {**done, "after": after}


class ExpireRecords(_OnTopic[Expired]):
    """``expire_records``: what retention does to records the job has not read yet, at once and exactly:
    every record of the job's input up to each partition's end offset now is deleted (the admin API's
    DeleteRecords; permanent). The job fails loudly on offsets that are gone (``failOnDataLoss=true``) or goes
    on without them; the gap is counted."""

    name = "expire_records"
    doc = ("delete every record of the job's input up to its end offsets now (Kafka's DeleteRecords: retention, "
           "at once; permanent): the job fails loudly or loses the records it had not read, counted")
    args = {"topic": "the job's 'input' (default)"}
    moments = TOPIC_MOMENTS

    def inject(self, planned: PlannedFault) -> Expired:
        admin, topic = self.ctx.brokers(TopicAdmin), topic_name(self.ctx, planned)
        before = view(self.ctx, topic)
        offsets = admin.topic_offsets(topic) or {}
        starts = admin.delete_records(topic, {p: hi for p, (_, hi) in offsets.items()})
        return {"topic": topic, "destroyed": _ranges(offsets), "destroyed_at": time.time(), "before": before,
                "log_start_after": {str(p): o for p, o in sorted(starts.items())}}

    def confirm(self, planned: PlannedFault, done: Expired) -> dict[str, object]:
        after = view(self.ctx, done["topic"])
        short = [p for p, (_, hi) in done["destroyed"].items() if (after[p]["offsets"][0] if p in after else 0) < hi]
        if short:
            raise RuntimeError(f"{done['topic']}: partitions {short} still hold records below the deleted offsets")
        return {**done, "after": after}


KINDS = (ReassignPartitions, AddPartitions, RecreateTopic, ExpireRecords)
