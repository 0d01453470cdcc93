"""One run from start to verdict: the phases of :mod:`.phases` called in order, and everything they
started stopped on every exit path."""

from __future__ import annotations

import uuid
from pathlib import Path

from pytest_streamchaos import storages
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.faults.registry import release
from pytest_streamchaos.observe.storage import RunStorage
from pytest_streamchaos.runner.context import RunContext, RunOwner, Status
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.kafka_port import check_kafka_port
from pytest_streamchaos.runner.phases.drain import Drain
from pytest_streamchaos.runner.phases.job import PrepareJob
from pytest_streamchaos.runner.phases.load import LoadPhase
from pytest_streamchaos.runner.phases.observers import WireObservers
from pytest_streamchaos.runner.phases.topics import MakeTopics, RunTopics
from pytest_streamchaos.runner.phases.verdict import Phases, Verdict
from pytest_streamchaos.runner.phases.warmup import WarmUp
from pytest_streamchaos.runner.spec import RunInputs, RunSpec
from pytest_streamchaos.stack.capabilities import KafkaLinks


class Run:
    """One run of ``chaos.run``: a directory of its own (a run that failed must not hand its
    checkpoint to the next) and :meth:`execute`, the whole life cycle."""

    def __init__(self, chaos: RunOwner, spec: RunSpec, inputs: RunInputs) -> None:
        self.chaos = chaos
        self.spec = spec
        self.inputs = inputs
        n, chaos.started = chaos.started, chaos.started + 1
        self.dir: Path = chaos.workdir / f"run{n}"
        self.dir.mkdir(parents=True, exist_ok=True)
        #: names the run's own topics (unique per run: nothing of an earlier run is ever read)
        self.tag = f"{uuid.uuid4().hex[:10]}"

    def execute(self) -> ChaosRun:
        """Topics, then (:meth:`_with_topics`) the job, its observers, warm-up, load, drain and
        verdict; the topics and the job's Kafka port are given back whatever happens."""
        ctx = RunContext(chaos=self.chaos, spec=self.spec, inputs=self.inputs, dir=self.dir,
                         storage=run_storage(self.chaos, self.spec, self.dir, self.tag), tag=self.tag)
        topics_phase = MakeTopics(self.chaos.kafka, self.spec, self.tag)
        topics = topics_phase.run()
        if self.spec.kafka_port:
            self.chaos.kafka.listen(self.spec.kafka_port)
        try:
            if self.spec.kafka_port:  # the job's side of the port answers Kafka, or the run says why not
                kafka = self.chaos.kafka
                check_kafka_port(self.spec.kafka_port, kafka.job_links() if isinstance(kafka, KafkaLinks) else [])
            return self._with_topics(ctx, topics)
        finally:
            if self.spec.kafka_port:
                self.chaos.kafka.unlisten(self.spec.kafka_port)
            topics_phase.forget(topics)

    def _with_topics(self, ctx: RunContext, topics: RunTopics) -> ChaosRun:
        """One run inside the topics' lifetime: prepare the job, wire the observers and the fault
        scheduler around it, drive it through the phases, always clean up, then judge."""
        prepared = PrepareJob(ctx, topics).run()
        try:
            job = prepared.job
            obs = WireObservers(ctx, topics, prepared).run()
            status = Status(self.chaos.status, ctx.recorder)
            status.watch(obs.generator, obs.collector)
            try:
                warm = WarmUp(ctx, job, obs, status).run()
                load = LoadPhase(ctx, job, topics, obs, status).run(warm.steady)
                Drain(ctx, job, topics, obs, status).run()
            finally:
                obs.cleanup(job)
            obs.progress.poll()
            return Verdict(ctx, Phases(topics=topics, prepared=prepared, obs=obs, warm=warm, load=load)).run()
        finally:  # what the faults made ready for the job (a mount under its checkpoint), once the job is gone
            ctx.warnings.extend(release(prepared.prepared))


def run_storage(chaos: RunOwner, spec: RunSpec, directory: Path, tag: str) -> RunStorage:
    """Where a run's checkpoint is: the run's ``directory``, or the service of its storage (the stack's HDFS,
    started on first use by its fixture)."""
    storage = storages.get(spec.checkpoint)
    if storage.fixture is None:
        return RunStorage.local(directory)
    if chaos.fixture is None:
        raise RunError(f"checkpoint={storage.name!r} needs {storage.service()}, which this backend does not have "
                       f"(the docker backend runs none): use checkpoint={storages.DEFAULT!r}")
    return RunStorage.on_service(storage, chaos.fixture(storage.fixture), tag)
