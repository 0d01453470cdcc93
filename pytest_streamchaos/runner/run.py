"""One run from start to verdict: the phases of :mod:`.phases` called in order, and everything they
started stopped on every exit path."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlparse

from pytest_streamchaos import storages
from pytest_streamchaos.errors import StackError
from pytest_streamchaos.faults.registry import release
from pytest_streamchaos.history import History
from pytest_streamchaos.observe.storage import RunStorage
from pytest_streamchaos.protocols import BucketStore, StorageService
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
from pytest_streamchaos.spark import s3a
from pytest_streamchaos.stack.capabilities import KafkaLinks


class Run:
    """One run of ``chaos.run``: a directory of its own (a run that failed must not hand its
    checkpoint to the next) and :meth:`execute`, the whole life cycle up to the run's history (which its
    caller judges by the run's plan: :func:`~pytest_streamchaos.analysis.judge.judge`)."""

    def __init__(self, chaos: RunOwner, spec: RunSpec, inputs: RunInputs) -> None:
        self.chaos = chaos
        self.spec = spec
        self.inputs = inputs
        n, chaos.started = chaos.started, chaos.started + 1
        self.dir: Path = chaos.workdir / f"run{n}"
        self.dir.mkdir(parents=True, exist_ok=True)
        #: names the run's own topics (unique per run: nothing of an earlier run is ever read)
        self.tag = f"{uuid.uuid4().hex[:10]}"

    def execute(self) -> History:
        """Topics, then (:meth:`_with_topics`) the job, its observers, warm-up, load, drain and
        history; the topics and the job's Kafka port are given back whatever happens."""
        ctx = RunContext(chaos=self.chaos, spec=self.spec, inputs=self.inputs, dir=self.dir,
                         storage=run_storage(self.chaos, self.spec, self.inputs, self.dir, self.tag), tag=self.tag)
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

    def _with_topics(self, ctx: RunContext, topics: RunTopics) -> History:
        """One run inside the topics' lifetime: prepare the job, wire the observers and the fault
        scheduler around it, drive it through the phases, always clean up, then gather its history."""
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


def run_storage(chaos: RunOwner, spec: RunSpec, inputs: RunInputs, directory: Path, tag: str) -> RunStorage:
    """Where a run's checkpoint is: the run's ``directory``, or the service of its storage (the stack's HDFS,
    started on first use by its fixture); and the services of the storages whose URLs the job names (the
    object store of a job naming ``s3a://``: started, its buckets created, its settings in the job's conf)."""
    storage = storages.get(spec.checkpoint)
    run = (RunStorage.local(directory) if storage.fixture is None else
           RunStorage.on_service(storage, _service(chaos, storage, f"checkpoint={storage.name!r}"), tag))
    for other in storages.named_by_url():
        urls = [u for u, _ in inputs.urls if urlparse(u).scheme in other.schemes]
        if other is not storage and not urls:
            continue
        named = f"the job names {urls[0]} ({dict(inputs.urls)[urls[0]]})" if urls else ""
        service = run.service if other is storage else _service(chaos, other, named)
        if other is not storage and service is not None:
            run.reach(other, service)
        for bucket in dict.fromkeys(urlparse(u).netloc for u in urls):
            if s3a.literal(bucket) and isinstance(service, BucketStore):
                service.ensure_bucket(bucket)
    return run


def _service(chaos: RunOwner, storage: storages.CheckpointStorage, why: str) -> StorageService:
    """The started service of ``storage`` (its fixture), or a :class:`RunError` naming the fix where this
    backend has none."""
    fix = (f"use checkpoint={storages.DEFAULT!r}" if why.startswith("checkpoint=") else
           "run it on the local backend (--chaos-backend local, or @pytest.mark.chaos(backend=\"local\"))")
    if chaos.fixture is None:
        raise RunError(f"{why} needs {storage.service()}, which this backend does not have: {fix}")
    try:
        service = chaos.fixture(str(storage.fixture))
    except StackError as exc:
        raise RunError(f"{why} needs {storage.service()}: {exc}; {fix}") from None
    if not isinstance(service, StorageService):  # a fixture that is not the entry's service: the registry's bug
        raise TypeError(f"the fixture {storage.fixture!r} gave {service!r}, not a StorageService")
    return service
