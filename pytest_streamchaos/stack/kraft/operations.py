"""Kafka's own operations on a topic, as an operator (or retention) performs them, through Kafka's admin API:
partitions added (CreatePartitions), records deleted below an offset (DeleteRecords, what retention does),
partitions reassigned (AlterPartitionReassignments) and their preferred leaders elected, each partition's log
start and end offsets (ListOffsets), and what the cluster's ACLs let this client do.

Everything goes through the harness's own listener (never the job's links). The reassignment is the one
operation the Python client (confluent-kafka / librdkafka) does not have: it runs Kafka's own
``kafka-reassign-partitions`` tool of the brokers' release (its jars resolved once per machine, like the
brokers'), as an operator would. Each operation returns once every broker's own metadata shows its result,
so a client asking any broker right after sees it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_streamchaos.machine import artifacts, commands
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.kraft.admin import REQUEST_TIMEOUT_S, KafkaAdmin, PartitionState, future_error, states_of

if TYPE_CHECKING:
    from confluent_kafka.admin import OffsetSpec

#: Kafka's reassignment tool (``bin/kafka-reassign-partitions.sh``)
REASSIGN_TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
#: a small JVM: one admin request and out (C1 only, serial GC, as the stack's other short JVMs)
TOOL_JAVA_OPTS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx192m", "-Xss512k")
#: how long a topic operation may take to show on every broker
SETTLE_TIMEOUT_S = 30.0


def retriable(exc: Exception) -> bool:
    """Whether a partition's admin answer says "ask again": a new leader whose high watermark has not caught up
    (OFFSET_NOT_AVAILABLE, not flagged retriable by the client), a leadership moving -- among them a broker that
    has not yet learnt the leader epoch the client asks with (UNKNOWN_LEADER_EPOCH, seen right after a leader
    move while leaders flapped; Kafka's own clients retry it) --, a topic being created."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc.args else None
    if not isinstance(err, KafkaError):
        return False
    again = (KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
             KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.FENCED_LEADER_EPOCH,
             KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT)
    return bool(err.retriable()) or err.code() in again


class TopicOperations:
    """Kafka's admin operations on one cluster's topics (``admin``: the harness's client of it; ``java``: the
    JVM that runs Kafka's own tools, found on first use when None)."""

    def __init__(self, admin: KafkaAdmin, java: Callable[[], str], progress: Callable[[str], None] | None = None
                 ) -> None:
        self.admin = admin
        self._java = java
        self.progress = progress

    def offsets(self, topic: str, timeout: float = REQUEST_TIMEOUT_S) -> dict[int, tuple[int, int]] | None:
        """(log start offset, end offset) of each partition of ``topic`` (None: the cluster does not know it).
        A retriable answer -- a new leader whose high watermark has not caught up yet, right after a leadership
        change -- is asked again until ``timeout``."""
        from confluent_kafka.admin import OffsetSpec

        parts = self.admin.partitions(topic, timeout)
        if parts is None:
            return None
        low, high = (self._offsets_of(topic, parts, spec, timeout) for spec in (OffsetSpec.earliest(),
                                                                                 OffsetSpec.latest()))
        return {p: (low[p], high[p]) for p in sorted(parts)}

    def _offsets_of(self, topic: str, parts: Iterable[int], spec: OffsetSpec, timeout: float) -> dict[int, int]:
        def asked() -> dict[int, int] | None:
            return self._list_offsets(topic, parts, spec)

        found = poll(asked, timeout, interval=0.2,
                     on_timeout=lambda _: StackError(f"{topic}: no offsets within {timeout:g}s"))
        return found or {}

    def _list_offsets(self, topic: str, parts: Iterable[int], spec: OffsetSpec) -> dict[int, int] | None:
        """One ListOffsets of every partition; None when an answer is retriable (asked again)."""
        from confluent_kafka import KafkaException, TopicPartition

        futures = self.admin.client().list_offsets({TopicPartition(topic, p): spec for p in parts},
                                                   request_timeout=REQUEST_TIMEOUT_S)
        try:
            return {tp.partition: int(f.result(REQUEST_TIMEOUT_S).offset) for tp, f in futures.items()}
        except KafkaException as exc:
            if retriable(exc):
                return None
            raise StackError(f"{topic}: ListOffsets failed: {exc}") from None

    def add_partitions(self, topic: str, total: int, timeout: float = SETTLE_TIMEOUT_S) -> None:
        """Grow ``topic`` to ``total`` partitions; return once every broker lists them, each with a leader."""
        from confluent_kafka.admin import NewPartitions

        err = future_error(self.admin.client().create_partitions([NewPartitions(topic, total)],
                                                                  request_timeout=REQUEST_TIMEOUT_S)[topic])
        if err is not None:
            raise StackError(f"cannot grow topic {topic!r} to {total} partitions: {err}")
        self._settled(topic, lambda s: len(s) == total and all(p.leader >= 0 for p in s.values()),
                      f"{total} partitions, each with a leader", timeout)

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """Delete every record of each partition below its offset in ``before`` (what retention does to
        old segments, at once and exactly); the partitions' new log start offsets."""
        from confluent_kafka import TopicPartition

        asked = [TopicPartition(topic, p, off) for p, off in sorted(before.items())]
        futures = self.admin.client().delete_records(asked, request_timeout=REQUEST_TIMEOUT_S)
        out = {}
        for tp, f in futures.items():
            try:
                out[tp.partition] = int(f.result(REQUEST_TIMEOUT_S).low_watermark)
            except Exception as exc:  # KafkaException: the partition's error
                raise StackError(f"cannot delete the records of {topic}[{tp.partition}] below {tp.offset}: "
                                 f"{exc}") from None
        return out

    def reassign(self, topic: str, replicas: Mapping[int, Sequence[int]], workdir: Path) -> str:
        """Submit a reassignment of ``topic``'s partitions to ``replicas`` (partition -> broker ids, the
        first the preferred leader) with Kafka's own ``kafka-reassign-partitions --execute``; its output.
        Returns once the controller accepted it (moving data to a new replica goes on after)."""
        jars = artifacts.resolve(artifacts.kafka_tools_jars(), self.progress)
        plan = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": list(r)}
                                             for p, r in sorted(replicas.items())]}
        workdir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix="reassign-", suffix=".json", dir=workdir)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(plan, f)
            argv = [self._java(), *TOOL_JAVA_OPTS, "-cp", os.pathsep.join(map(str, jars)), REASSIGN_TOOL,
                    "--bootstrap-server", self.admin.bootstrap_servers, "--reassignment-json-file", name, "--execute"]
            out = commands.run(argv, timeout=90, error=StackError,
                               fix="check that the cluster answers at its bootstrap address and that this client "
                                   "may alter the cluster (ACL: ALTER on the cluster)")
        finally:
            Path(name).unlink(missing_ok=True)
        if "Successfully started" not in out:
            raise StackError(f"kafka-reassign-partitions did not start the reassignment of {topic}: "
                             f"{out.strip()[-400:]}")
        return out

    def tool_refused(self) -> str | None:
        """Why Kafka's reassignment tool cannot run here (its jars could not be fetched), or None once they are in
        the cache (fetched now on first use)."""
        try:
            artifacts.resolve(artifacts.kafka_tools_jars(), self.progress)
        except StackError as exc:
            return f"Kafka's reassignment tool could not be fetched: {exc}"
        return None

    def elect_preferred(self, topic: str, partitions: Sequence[int]) -> None:
        """Move each partition's leadership to its preferred replica (the first of its replicas) now."""
        from confluent_kafka import ElectionType, TopicPartition

        fut = self.admin.client().elect_leaders(ElectionType.PREFERRED,
                                                [TopicPartition(topic, p) for p in partitions])
        try:
            results = fut.result(REQUEST_TIMEOUT_S)
        except Exception as exc:  # KafkaException: the request failed as a whole
            raise StackError(f"preferred leader election of {topic} {list(partitions)} failed: {exc}") from None
        for tp, err in (results or {}).items():
            # ELECTION_NOT_NEEDED: the preferred replica leads already
            if err is not None and "ELECTION_NOT_NEEDED" not in str(err) and "not needed" not in str(err).lower():
                raise StackError(f"preferred leader election of {tp.topic}[{tp.partition}] failed: {err}")

    def refused(self, operations: Sequence[str]) -> str | None:
        """Which of ``operations`` (names of Kafka's ACL operations: ``ALTER``, ``DELETE``, ``CREATE``...) the
        cluster's ACLs deny this client on the cluster resource, as one line; None when it may do them all
        (a cluster without an authorizer allows everything)."""
        try:
            got = self.admin.client().describe_cluster(include_authorized_operations=True).result(REQUEST_TIMEOUT_S)
        except Exception as exc:  # KafkaException: it did not answer
            return f"the cluster did not say what this client may do ({exc})"
        allowed = getattr(got, "authorized_operations", None)
        if allowed is None:  # not reported: no authorizer
            return None
        names = {getattr(op, "name", str(op)) for op in allowed}
        if "ALL" in names:
            return None
        missing = [op for op in operations if op not in names]
        return None if not missing else f"the cluster's ACLs deny this client {', '.join(missing)} on the cluster"

    def _settled(self, topic: str, done: Callable[[dict[int, PartitionState]], bool], what: str,
                 timeout: float) -> None:
        """Poll until every broker's own metadata of ``topic`` satisfies ``done``."""
        def settled() -> bool:
            views = [states_of(v, topic) for v in self.admin.broker_views(topic)]
            return all(v is not None and done(v) for v in views)

        poll(settled, timeout, interval=0.1,
             on_timeout=lambda _: StackError(f"topic {topic!r}: not every broker shows {what} after {timeout:g}s"))



class TopicAdministration:
    """The topic operations of the stack interface (:class:`~..base.KafkaCluster`) for a cluster with a
    :class:`TopicOperations` (``topic_ops``): mixed into the stack's KRaft cluster and an attached Kafka."""

    topic_ops: TopicOperations
    reassign_dir: Path  #: where a reassignment's plan file is written while the tool runs

    def partition_views(self, topic: str) -> list[Mapping[int, PartitionState] | None]:
        return [states_of(v, topic) for v in self.topic_ops.admin.broker_views(topic)]

    def topic_offsets(self, topic: str) -> dict[int, tuple[int, int]] | None:
        return self.topic_ops.offsets(topic)

    def add_partitions(self, topic: str, total: int) -> None:
        self.topic_ops.add_partitions(topic, total)

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        return self.topic_ops.delete_records(topic, before)

    def reassign_partitions(self, topic: str, replicas: Mapping[int, Sequence[int]]) -> str:
        return self.topic_ops.reassign(topic, replicas, self.reassign_dir)

    def elect_preferred_leaders(self, topic: str, partitions: Sequence[int]) -> None:
        self.topic_ops.elect_preferred(topic, partitions)

    def reassignment_refused(self) -> str | None:
        return self.topic_ops.tool_refused()

    def administration_refused(self, operations: Sequence[str]) -> str | None:
        return self.topic_ops.refused(operations)
