"""Phase 7: the verdict's input -- the run's history (what it recorded and every fact the report shows about
how it went, typed), which the one judge (:func:`pytest_streamchaos.analysis.judge.judge`) judges by the run's
plan. This phase computes no verdict itself."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_streamchaos.client_stats import samples_by_client
from pytest_streamchaos.events import Phase
from pytest_streamchaos.facts import (
    CollectorStats,
    GeneratorStats,
    JobFacts,
    LoadFacts,
    RunFacts,
    RunSetup,
    SinkQuery,
)
from pytest_streamchaos.history import History
from pytest_streamchaos.observe.outputs import NoIds, Outputs
from pytest_streamchaos.observe.rows import output_rows
from pytest_streamchaos.observe.sinks import query_sinks
from pytest_streamchaos.runner.context import RunContext
from pytest_streamchaos.runner.phases.job import PreparedJob, delay_specs
from pytest_streamchaos.runner.phases.load import LoadResult
from pytest_streamchaos.runner.phases.observers import Observers
from pytest_streamchaos.runner.phases.topics import RunTopics
from pytest_streamchaos.runner.phases.warmup import WarmUpResult
from pytest_streamchaos.workload.joined import JoinedGenerators


@dataclass(frozen=True)
class Phases:
    """What the earlier phases of a run made, as the verdict reads it."""

    topics: RunTopics
    prepared: PreparedJob
    obs: Observers
    warm: WarmUpResult
    load: LoadResult


class Verdict:
    """The run's :class:`~pytest_streamchaos.history.History` (:meth:`run`), for the one judge
    (:func:`~pytest_streamchaos.analysis.judge.judge`)."""

    def __init__(self, ctx: RunContext, done: Phases) -> None:
        self.ctx = ctx
        self.done = done

    def run(self) -> History:
        """The history, the collector's notes among its warnings; an output that turned out unreadable raises."""
        ctx, d = self.ctx, self.done
        if d.obs.collector.lost_to_retention:
            ctx.warnings.append(
                f"{d.obs.collector.lost_to_retention} outputs were deleted by the broker before the collector read "
                "them (retention): their ids count as lost. Check the output topic's retention settings")
        if isinstance(d.obs.collector, Outputs):
            ctx.warnings.extend(d.obs.collector.notes)
        failure = d.obs.collector.failure  # an output that turned out unreadable after the load (not a table)
        if failure is not None:
            raise failure
        return self.history()

    def history(self) -> History:
        """The run's history with its facts."""
        ctx, d = self.ctx, self.done
        obs, job = d.obs, d.prepared.job
        facts = RunFacts(
            setup=self._setup(), job=self._job(), load=self._load(), generators=self._generators(),
            collector=self._collector(), poisoned_ids=list(obs.faults.poison.poisoned if obs.faults.poison else []),
            fault_errors=list(obs.scheduler.errors), warnings=list(ctx.warnings),
            sinks=[SinkQuery(q.name, q.query_id, str(q.kind), q.description, q.path, list(q.writes))
                   for q in query_sinks(obs.progress.batches, obs.progress.writes)],
            sink_note=obs.sinks.note,
            outputs_without_ids=[name for name, ids in ctx.inputs.output_ids.items() if isinstance(ids, NoIds)],
            delays=delay_specs(ctx.inputs.planned, ctx.chaos.cluster.effective_conf, job, d.prepared.job_kafka),
            client_samples=samples_by_client(obs.generator, obs.collector),
            transaction_markers=None if obs.sinks.progress_only else dict(obs.collector.transaction_markers),
            output_rows=output_rows(obs.collector, self._own_outputs()) if ctx.spec.capture_rows else None)
        return obs.history(ctx, job, d.topics, facts)

    def _own_outputs(self) -> dict[str, str]:
        """The run's own output topics by what the test calls them (none when the test named its outputs)."""
        t = self.done.topics
        if self.ctx.spec.outputs is not None:
            return {}
        return {topic: name for topic, name in ((t.out_topic, "output"), (t.side_topic, "late output")) if topic}

    def _setup(self) -> RunSetup:
        """The run's arguments, its stack's settings and the timeouts it set, as they were."""
        ctx, d = self.ctx, self.done
        chaos, spec = ctx.chaos, ctx.spec
        return RunSetup(
            test=chaos.nodeid, seed=chaos.seed, arguments={**spec.__dict__, "end_on_recovery": d.load.end_on_recovery},
            planned_faults=[p.label for p in ctx.inputs.planned], spark_conf=dict(d.prepared.job.effective_conf),
            cluster_conf=dict(chaos.cluster.effective_conf), kafka_conf=dict(chaos.kafka.effective_conf),
            timeouts=list(d.prepared.delay_choices))

    def _job(self) -> JobFacts:
        """The job as it ran: its arguments, directory, log, master, launches, checkpoint."""
        ctx, d = self.ctx, self.done
        job, obs = d.prepared.job, d.obs
        return JobFacts(args=list(job.args), workdir=str(job.workdir),
                        log=str(job.log_path), master=d.warm.local_master or ctx.chaos.cluster.master_url,
                        launches=len(job.launches), restarts_by_supervisor=obs.supervisor.restarts,
                        checkpoint=obs.checkpoint.checkpoint_dir, checkpoint_storage=ctx.storage.kind,
                        state_store=obs.checkpoint.state_store())

    def _load(self) -> LoadFacts:
        ctx = self.ctx
        ran = ctx.phases.get(Phase.LOAD_END, 0.0) - ctx.phases.get("warmup_end", 0.0)
        return LoadFacts(planned_s=ctx.spec.duration, why=ctx.inputs.load_why, ended=self.done.load.ended,
                         ran_s=round(ran, 3))

    def _generators(self) -> dict[str, GeneratorStats]:
        """What each input's generator counted, by input topic."""
        gen, inputs = self.done.obs.generator, self.done.topics.inputs
        parts = gen.parts if isinstance(gen, JoinedGenerators) else [gen]
        return {topic: GeneratorStats.of(g.stats()) for topic, g in zip(inputs, parts, strict=False)}

    def _collector(self) -> CollectorStats:
        c = self.done.obs.collector
        return CollectorStats(count=c.count, malformed=c.malformed, lost_to_retention=c.lost_to_retention,
                              retention_gaps=list(c.retention_gaps), errors=list(c.errors[-20:]))
