"""Phase 7: the verdict -- what the run recorded, judged against the oracle and the declared
guarantee, with everything the report shows about how the run went in ``meta``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pytest_streamchaos.analysis.delay_class import delay_outcomes
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.validate import exactly_once_check
from pytest_streamchaos.client_stats import observer_report
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.sinks import query_sinks
from pytest_streamchaos.records import Trace
from pytest_streamchaos.runner.context import Reader, RunContext, Sender
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
    """Judges the run (:meth:`run`): a :class:`~pytest_streamchaos.analysis.result.ChaosRun` with its ``meta``."""

    def __init__(self, ctx: RunContext, done: Phases) -> None:
        self.ctx = ctx
        self.done = done

    def run(self) -> ChaosRun:
        ctx, d = self.ctx, self.done
        collector = d.obs.collector
        trace = d.obs.trace(ctx, d.prepared.job, d.topics.inputs)
        if collector.lost_to_retention:
            ctx.warnings.append(
                f"{collector.lost_to_retention} outputs were deleted by the broker before the collector read them "
                "(retention): their ids count as lost. Check the output topic's retention settings")
        run = ChaosRun.from_trace(trace, ctx.inputs.oracle, ctx.spec.guarantee, ctx.inputs.params,
                                  per_record=not d.obs.sinks.progress_only)
        run.meta.update(self._run_meta())
        run.meta.update(self._observed_meta(trace))
        return run

    def _run_meta(self) -> dict[str, Any]:
        """The run's arguments, its stack and its job as they were."""
        ctx, d = self.ctx, self.done
        chaos, job, spec = ctx.chaos, d.prepared.job, ctx.spec
        return {
            "test": chaos.nodeid,
            "seed": chaos.seed,
            "run": {**spec.__dict__, "end_on_recovery": d.load.end_on_recovery},
            "faults": [p.label for p in ctx.inputs.planned],
            "fault_errors": d.obs.scheduler.errors,
            "topics": d.topics.describe(spec),
            "spark_conf": job.effective_conf,
            "cluster_conf": dict(chaos.cluster.effective_conf),
        }

    def _observed_meta(self, trace: Trace) -> dict[str, Any]:
        """What the observers saw: the load, the outputs, the driver, the checkpoint, the faults' effects."""
        ctx, d = self.ctx, self.done
        chaos, job, obs, collector = ctx.chaos, d.prepared.job, d.obs, d.obs.collector
        return {
            "generator": obs.generator.stats(),
            "collector": {"count": collector.count, "malformed": collector.malformed,
                          "lost_to_retention": collector.lost_to_retention,
                          "retention_gaps": collector.retention_gaps, "errors": collector.errors[-20:]},
            "poisoned_ids": obs.faults.poison.poisoned if obs.faults.poison else [],
            "driver_launches": len(job.launches),
            "driver_restarts_by_supervisor": obs.supervisor.restarts,
            "job_log": str(job.log_path),
            "warnings": ctx.warnings,
            "checkpoint": obs.checkpoint.checkpoint_dir,
            "checkpoint_storage": ctx.storage.kind,
            "job_args": list(job.args),
            "job_workdir": str(job.workdir),
            "spark_master_used": d.warm.local_master or chaos.cluster.master_url,
            "load": {"planned_s": ctx.spec.duration, "why": ctx.inputs.load_why, "ended": d.load.ended,
                     "ran_s": round(ctx.phases.get("load_end", 0.0) - ctx.phases.get("warmup_end", 0.0), 3)},
            "delay_class": [c.to_dict() | {"note": c.describe()} for c in d.prepared.delay_choices],
            "delay_outcomes": delay_outcomes(trace.timeline, delay_specs(
                ctx.inputs.planned, chaos.cluster.effective_conf, job, d.prepared.job_kafka)),
            "observer": self._observer(trace),
            "sinks": [q.to_dict() for q in query_sinks(obs.progress.batches, obs.progress.writes)],
            "sink_note": obs.sinks.note,
            "exactly_once": None if obs.sinks.progress_only else exactly_once_check(
                collector.transaction_markers),
            "kafka_conf": dict(chaos.kafka.effective_conf),
        }

    def _observer(self, trace: Trace) -> dict[str, Any]:
        """Whether the network faults spared the harness: their scope and the harness clients' round
        trips during them against the baseline (a disturbed client becomes a warning)."""
        ctx, obs = self.ctx, self.done.obs
        injected = [e.detail for e in trace.timeline if e.kind == "fault_injected" and "scope" in e.detail]
        # "namespace": in the job's containers (docker backend), which the harness is never in
        unscoped = [d.get("scope_reason") for d in injected if d["scope"] not in ("job", "namespace")]
        report = observer_report(client_samples(obs.generator, obs.collector), trace.timeline,
                                 ctx.phases.get("warmup_end"), ctx.phases.get("load_end", time.time()),
                                 scope="all" if unscoped else "job", scope_reason=unscoped[0] if unscoped else None)
        for name, why in report["disturbed"].items():
            ctx.warnings.append(f"the harness's {name} was disturbed during the network faults ({why}): "
                                "latency and downtime may include the observer's own delay")
        return report


def client_samples(generator: Sender, collector: Reader) -> dict[str, list]:
    """The harness clients' statistics samples by client name (several inputs: one per generator)."""
    gens = generator.parts if isinstance(generator, JoinedGenerators) else [generator]
    out = {}
    for i, g in enumerate(gens):
        if g.client_stats is not None:
            out["generator" if len(gens) == 1 else f"generator-{i}"] = g.client_stats.samples()
    if isinstance(collector, Collector) and collector.client_stats is not None:
        out["collector"] = collector.client_stats.samples()
    return out
