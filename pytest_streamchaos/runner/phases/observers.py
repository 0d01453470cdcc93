"""Phase 3: what watches and hits the job, built around it (nothing started yet): the collector of
its outputs, the load generator, its Spark progress, the checkpoint and sink watchers, the Kafka
events, the fault scheduler and the driver's supervisor."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pytest_streamchaos.facts import RunFacts
from pytest_streamchaos.faults.context import FaultContext, PoisonSchedule
from pytest_streamchaos.faults.moments import after_fire, detectors
from pytest_streamchaos.faults.registry import actions_for, generator_conf, kind_of
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.history import History
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.from_progress import outputs_from_progress
from pytest_streamchaos.observe.kafka_events import KafkaWatcher
from pytest_streamchaos.observe.output_names import output_path
from pytest_streamchaos.observe.outputs import Outputs, collector_for
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.observe.storage import Place
from pytest_streamchaos.records import TimelineEvent, Trace
from pytest_streamchaos.runner.context import Reader, RunContext, Sender, Status
from pytest_streamchaos.runner.phases.job import PreparedJob
from pytest_streamchaos.runner.phases.topics import RunTopics
from pytest_streamchaos.runner.phases.tracking import CheckpointTracker, SinkJudge
from pytest_streamchaos.runner.supervisor import DriverSupervisor
from pytest_streamchaos.stack.base import JobHandle
from pytest_streamchaos.workload.generator import Generator
from pytest_streamchaos.workload.joined import JoinedGenerators


class Startable(Protocol):
    """One of the observers: started once the job runs."""

    def start(self) -> object: ...


@dataclass
class Observers:
    """What :class:`WireObservers` built around the job, and (``started``) which of it is running."""

    collector: Reader
    generator: Sender
    progress: SparkProgress
    checkpoint: CheckpointTracker
    sinks: SinkJudge
    kafka_events: KafkaWatcher
    faults: FaultContext
    scheduler: FaultScheduler
    supervisor: DriverSupervisor
    started: list = field(default_factory=list)

    def start(self, what: Startable) -> None:
        """Start ``what`` (one of the observers) and note it for :meth:`cleanup`."""
        what.start()
        self.started.append(what)

    def cleanup(self, job: JobHandle) -> None:
        """Whatever happened: stop the faults, the load if it runs, the job, and the collector if it
        was started (even when stopping the job fails)."""
        self.scheduler.stop()
        if self.generator in self.started and self.generator.running:
            self.generator.stop()
        try:
            job.stop()
        finally:
            if self.kafka_events in self.started:
                self.kafka_events.stop()
            if self.collector in self.started:
                self.collector.stop(drain_timeout=10.0)

    def history(self, ctx: RunContext, job: JobHandle, topics: RunTopics, facts: RunFacts | None = None) -> History:
        """What the run recorded so far, as the analysis takes it: the records, outputs, micro-batches,
        timeline and phases, the run's topics, and ``facts`` (none while the run goes on)."""
        inputs = topics.inputs
        sent = self.generator.sent()
        # nothing readable: outputs estimated from Spark's progress, for the recovery metrics only
        outputs = (outputs_from_progress(sent, self.progress.batches, len(inputs), inputs[0])
                   if self.sinks.progress_only else self.collector.outputs())
        events: list[TimelineEvent] = [*ctx.recorder.events(), *job.timeline, *self.progress.timeline]
        trace = Trace(sent=sent, outputs=outputs, batches=list(self.progress.batches), timeline=events,
                      phases=dict(ctx.phases), trigger_seconds=ctx.spec.trigger_seconds,
                      continuous=ctx.spec.real_time)
        return History(trace, topics=topics.typed(ctx.spec), facts=facts or RunFacts(),
                       per_record=not self.sinks.progress_only)


def fault_scheduler(ctx: RunContext, faults: FaultContext, planned: list) -> FaultScheduler:
    """The scheduler of ``planned`` faults on the run's timeline, with every kind's action and moment
    detector bound to ``faults``."""
    return FaultScheduler(planned, actions_for(faults), ctx.recorder, detectors(faults),
                          after_fire=after_fire(faults, lambda p: kind_of(p.spec).stops_driver(p.spec)))


class ObservedPhase:
    """A phase that runs the job under the observers' eyes (the load, the drain): what each is given."""

    def __init__(self, ctx: RunContext, job: JobHandle, topics: RunTopics, obs: Observers, status: Status) -> None:
        self.ctx = ctx
        self.job = job
        self.topics = topics
        self.obs = obs
        self.status = status


class WireObservers:
    """Builds the :class:`Observers` of a prepared job (the test's oracle is left as it is: the run's
    checkers bind it to the run's topics, from its history)."""

    def __init__(self, ctx: RunContext, topics: RunTopics, prepared: PreparedJob) -> None:
        self.ctx = ctx
        self.topics = topics
        self.prepared = prepared

    def run(self) -> Observers:
        ctx, t, job = self.ctx, self.topics, self.prepared.job
        poison = PoisonSchedule()
        collector = self._collector(job.workdir)
        generator = self._generator(poison)
        progress = job.progress
        watcher = CheckpointWatcher(ctx.storage.place(ctx.storage.checkpoint))
        faults = FaultContext(cluster=ctx.chaos.cluster, kafka=ctx.chaos.kafka, job=job,
                              input_topic=t.inputs[0], output_topic=t.out_topic, checkpoint=watcher,
                              collector=collector, poison=poison, stores=ctx.storage.services(),
                              recorder=ctx.recorder, prepared=self.prepared.prepared, seed=ctx.chaos.seed)
        obs: Observers
        # the faults acting now are the current scheduler's (one history plays a scheduler per schedule)
        supervisor = DriverSupervisor(job, ctx.recorder.record, enabled=ctx.spec.supervise,
                                      hold=lambda: obs.scheduler.acting_on_driver())
        kafka_events = KafkaWatcher(ctx.chaos.kafka, t.watched(), ctx.recorder)
        obs = Observers(collector=collector, generator=generator, progress=progress,
                        checkpoint=CheckpointTracker(ctx, watcher, self.prepared.checkpoint_roots, job),
                        sinks=SinkJudge(ctx, job, t.out_topic), kafka_events=kafka_events, faults=faults,
                        scheduler=fault_scheduler(ctx, faults, ctx.inputs.planned), supervisor=supervisor)
        return obs

    def _collector(self, workdir: Path) -> Reader:
        ctx, t = self.ctx, self.topics
        # an aggregate oracle reads each output's key, window and value (it carries no ids)
        oracle = ctx.inputs.oracle
        opts = oracle.collector_options() if hasattr(oracle, "collector_options") else {}
        if ctx.spec.outputs is None:
            return Collector(t.bootstrap, t.outputs(), id_reader=ctx.inputs.id_reader, **opts)
        def place(name: str) -> Place | None:
            path = output_path(name)
            return None if path is None else ctx.storage.output(path, workdir)

        return Outputs([collector_for(name, ids, t.bootstrap, place(name), **opts)
                        for name, ids in ctx.inputs.output_ids.items()])

    def _generator(self, poison: PoisonSchedule) -> Sender:
        s, inputs = self.ctx.spec, self.ctx.inputs
        producer = generator_conf(p.spec for p in inputs.planned)  # what the plan's faults need of it
        parts = []
        for i, topic in enumerate(self.topics.inputs):
            factory = inputs.factories.get(topic) if s.inputs is not None else None
            count = s.input_counts[i] if s.input_counts is not None and i < len(s.input_counts) else None
            parts.append(Generator(self.topics.bootstrap, topic, s.rate * s.send_pace, key_space=s.key_space,
                                   skew=s.skew, record_size=s.record_size, late_fraction=s.late_fraction,
                                   poison=poison if i == 0 else 0, seed=self.ctx.chaos.seed, record_factory=factory,
                                   annotate=inputs.annotate or None, what=f"inputs[{topic!r}] factory",
                                   max_records=count, event_origin=s.event_origin, event_rate=s.rate,
                                   producer_config=producer or None))
        return parts[0] if len(parts) == 1 else JoinedGenerators(parts)
