"""Phase 6: the drain -- the load has stopped; the run goes on until the job has committed every
input offset and its outputs settle."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_streamchaos.analysis.oracle import IdentityOracle
from pytest_streamchaos.events import Kind, Phase
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.records import BatchProgress
from pytest_streamchaos.runner.context import PHASE_POLL_S, RunContext, Status, check_user_code, poll_until
from pytest_streamchaos.runner.phases.observers import ObservedPhase, Observers
from pytest_streamchaos.runner.phases.topics import RunTopics
from pytest_streamchaos.stack.base import JobHandle

#: how long a caught-up query without state must run no micro-batch before the drain calls it idle
#: (:func:`query_idle`): it plans no batch without new input, and the input's end offsets are committed, so
#: once its checkpoint shows no batch running nothing more comes; the margin covers the checkpoint's
#: commit of one batch and the planning of the next, which Spark writes one after the other
STATELESS_IDLE_S = 0.25


@dataclass
class DrainResult:
    """How the drain ended."""

    #: when the job had committed every input offset (None: it never did)
    caught_up_at: float | None = None
    #: what ended it: ``ids`` (every acknowledged id came out), ``settled`` (no output for
    #: ``settle_seconds``), ``idle`` (the query ran no micro-batch), ``exited`` (the job is down for
    #: good) or ``timeout`` (``drain_timeout`` passed)
    ended: str = "timeout"


class DownSince:
    """A job that is down (exited, not restarted): when it was first seen down, and whether no
    output came for ``settle_seconds`` since (output still in flight when it died is read)."""

    def __init__(self, settle_seconds: float) -> None:
        self.settle_seconds = settle_seconds
        self.seen_at: float | None = None  #: when the job was first seen down

    def settled(self, last_output: float | None) -> bool:
        """Whether the output settled, the last one at ``last_output`` (None: none yet)."""
        now = time.time()
        if self.seen_at is None:
            self.seen_at = now
        last = max(last_output or 0.0, self.seen_at)
        return now - last > self.settle_seconds


class Drain(ObservedPhase):
    """Until the job has committed every input offset (it caught up), then until the outputs
    settle (no new output for ``settle_seconds``, every acknowledged id came out, or -- unless the
    test gave ``settle_seconds`` -- the query idle, :meth:`_query_idle`). A job that
    has exited by now stays down (the faults are healed: no restart is coming), so its outputs
    only need to settle: waiting out the drain timeout for it would change nothing but the time."""

    def __init__(self, ctx: RunContext, job: JobHandle, topics: RunTopics, obs: Observers, status: Status) -> None:
        super().__init__(ctx, job, topics, obs, status)
        self.result = DrainResult()
        self.down = DownSince(ctx.spec.settle_seconds)
        self._ends: dict[str, dict[int, int]] = {}  # input topic -> partition -> end offset at the drain's start

    def run(self) -> DrainResult:
        s, began = self.ctx.spec, time.time()
        self._ends = {t: input_end_offsets(self.topics.bootstrap, t) for t in self.topics.inputs}
        # the drain's timeout counts from its start, the end offsets' round trips included
        ended = poll_until(self._ended, s.drain_timeout - (time.time() - began), PHASE_POLL_S)
        if ended is not None:
            self.result.ended = ended
        else:
            what = ("the outputs to settle" if self.result.caught_up_at
                    else f"the job to commit the input's end offsets {self._ends}")
            if not self.obs.checkpoint.found:
                what += " (the query's checkpoint was not found: pass its path in args or conf)"
            self.ctx.warnings.append(f"drain_timeout={s.drain_timeout:g}s passed while waiting for {what}; "
                                     "inputs still in flight then are reported as lost")
        self.ctx.phases[Phase.DRAIN_END] = time.time()
        self.ctx.recorder.record(Kind.DRAIN_END)
        return self.result

    def _ended(self) -> str | None:
        """One look during the drain: what ended it, or None."""
        ctx, obs, job, r = self.ctx, self.obs, self.job, self.result
        obs.progress.poll()
        check_user_code(obs.generator, obs.collector)
        obs.checkpoint.find(obs.progress)
        if r.caught_up_at is None and all(committed_past(obs.checkpoint.watcher, t, e) for t, e in self._ends.items()):
            r.caught_up_at = time.time()
            ctx.recorder.record(Kind.CAUGHT_UP, "", t=r.caught_up_at)
        obs.supervisor.check()
        if (r.caught_up_at is None and not job.alive and not obs.supervisor.will_restart()
                and self.down.settled(obs.sinks.last_output(obs.collector, obs.progress))):
            ctx.warnings.append(f"the job had exited (code {job.returncode}) before it caught up, and nothing "
                                "restarts it after the load: inputs it did not output are reported as lost")
            return "exited"
        if r.caught_up_at is not None:
            ended = self._settled(r.caught_up_at)
            if ended:
                return ended
        self.status("drain", ctx.spec.drain_timeout)
        return None

    def _settled(self, caught_up_at: float) -> str | None:
        """After the job caught up: whether its outputs are complete or settled (how), else None."""
        s, inputs, obs = self.ctx.spec, self.ctx.inputs, self.obs
        collector, oracle = obs.collector, inputs.oracle
        if (isinstance(collector, Collector) and isinstance(oracle, IdentityOracle)
                and oracle.filter is None and collector.ids_seen >= obs.generator.acked):
            return "ids"
        checkpoint = obs.checkpoint
        # a real-time query's batch always runs: its settle window counts from its output alone
        watcher = checkpoint.watcher if checkpoint.found and inputs.real_time is None else None
        if watcher is not None and watcher.uncommitted_batch() is not None:
            return None  # a batch that runs may still write (a stateful query's no-data batch closing windows)
        last = max(obs.sinks.last_output(collector, obs.progress) or 0.0, caught_up_at, last_commit(watcher))
        if time.time() - last > s.settle_seconds:
            return "settled"
        if not inputs.settle_pinned and self._query_idle(caught_up_at):
            return "idle"
        return None

    def _query_idle(self, caught_up_at: float) -> bool:
        """:func:`query_idle` of the job's query now."""
        checkpoint, batches = self.obs.checkpoint, self.obs.progress.batches
        stateless = (checkpoint.found and self.ctx.inputs.real_time is None
                     and one_stateless_query(batches))
        return query_idle(time.time(), caught_up_at, [b["t_end"] for b in batches],
                          checkpoint.watcher if checkpoint.found else None, self.ctx.spec.trigger_seconds,
                          stateless=stateless)


def one_stateless_query(batches: list[BatchProgress]) -> bool:
    """The job ran one streaming query (one query id in its progress), and none of its micro-batches had a
    state operator: Spark plans a batch of it only for new input (a no-data batch is a stateful query's, to
    emit what its watermark finalised). With a second query (a console query beside the real one) a batch of
    the other may be running unseen; a job whose progress shows none tells nothing."""
    ids = {b.get("id") for b in batches}
    return len(ids) == 1 and None not in ids and not any(b.get("stateOperators") for b in batches)


def last_commit(watcher: CheckpointWatcher | None) -> float:
    """When the query last committed a micro-batch (0.0: never, or no checkpoint to tell by). The drain's settle
    window counts from it too: a batch that ran after the last input (a no-data batch closing windows) writes its
    output before its commit, and another may follow it."""
    done = watcher.latest_committed_batch() if watcher is not None else None
    return (watcher.commit_time(done) or 0.0) if watcher is not None and done is not None else 0.0


def query_idle(now: float, caught_up_at: float, batch_ends: Iterable[float], watcher: CheckpointWatcher | None,
               trigger_seconds: float, stateless: bool = False) -> bool:
    """The job has committed every input and then run no micro-batch for two triggers (at least 1 s; a single
    query without state, ``stateless`` and its checkpoint given: :data:`STATELESS_IDLE_S`): it has
    nothing left to write. A sink writes a batch's output before Spark commits the batch, and a stateful query
    emits what the watermark finalises in a no-data batch right after the last data batch; what was written is
    read to the output's end offsets when the collector stops. A batch its checkpoint shows planned and not yet
    committed is running, however long since the last one ended: a restarted stateful query's no-data batch
    after its backlog took longer than that (its Python state function), and ending the run in it lost every
    session it was closing (``batch_ends``: the progress events' ends, which come only when a batch is over).
    A job whose output comes later (an asynchronous sink) needs ``settle_seconds`` given."""
    if watcher is not None and watcher.uncommitted_batch() is not None:
        return False
    last = max([caught_up_at, *batch_ends, last_commit(watcher)])
    idle = STATELESS_IDLE_S if stateless and watcher is not None else max(1.0, 2 * trigger_seconds)
    return now - last >= idle


def input_end_offsets(bootstrap_servers: str, topic: str, timeout: float = 10.0) -> dict[int, int]:
    """The end offset (high watermark) of every partition of ``topic`` now."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "streamchaos-drain",
                  "enable.auto.commit": False})
    try:
        parts = c.list_topics(topic, timeout=timeout).topics[topic].partitions
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1] for p in parts}
    finally:
        c.close()


def committed_past(watcher: CheckpointWatcher, topic: str, ends: dict[int, int]) -> bool:
    """True when the latest committed micro-batch read ``topic`` up to ``ends`` (every partition).

    Reads the checkpoint's offsets log entry of the newest committed batch; the Kafka source offset
    (Spark's connector and ours alike) is ``{topic: {partition: next_offset}}``."""
    n = watcher.latest_committed_batch()
    if n is None:
        return not any(ends.values())
    entry = watcher.offsets(n)
    if entry is None:
        return False
    for src in entry["sources"]:
        if isinstance(src, dict) and topic in src:
            got = {int(p): int(o) for p, o in src[topic].items()}
            return all(got.get(p, 0) >= end for p, end in ends.items())
    return False
