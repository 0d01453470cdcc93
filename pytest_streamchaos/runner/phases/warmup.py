"""Phase 4: the job started and warmed up -- the collector and the job start, the query starts and
fixes its starting offsets, the load starts, and the run waits for output and then for
:data:`STEADY_BATCHES` stable micro-batches (the startup backlog is not part of the baseline)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.registry import kind_of
from pytest_streamchaos.observe.rows import output_rows
from pytest_streamchaos.observe.sinks import query_sinks
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import BatchProgress
from pytest_streamchaos.runner.context import PHASE_POLL_S, RunContext, Status, check_user_code, poll_until
from pytest_streamchaos.runner.errors import RunError, job_failed
from pytest_streamchaos.runner.phases.names import NameCheck, written_since
from pytest_streamchaos.runner.phases.observers import Observers
from pytest_streamchaos.stack.base import JobHandle

#: micro-batches in a row with input, similar durations and no backlog that make the steady state. The
#: first batch with output is slow (Python workers and Kafka clients start) and the next one reads what
#: piled up meanwhile: two calm batches after those show the start-up is over; a third costs another
#: trigger interval per run (docs/architecture.md, "Start-up").
STEADY_BATCHES = 2


@dataclass
class WarmUpResult:
    """When the run reached steady state, and where the job's executors actually ran."""

    steady: float
    #: the ``local[...]`` master the job's code set (its executors are threads of the driver); None: the cluster
    local_master: str | None = None


class WarmUp:
    """Starts the observers and the job and waits for the steady state (:meth:`run`)."""

    def __init__(self, ctx: RunContext, job: JobHandle, obs: Observers, status: Status) -> None:
        self.ctx = ctx
        self.job = job
        self.obs = obs
        self.status = status
        self.first_output: float | None = None  #: when output first showed (None: not yet)
        #: the names of the test only the running job confirms (topics, id fields): checked on every look
        self.names = NameCheck(ctx, obs.collector, obs.progress, written_since(ctx.chaos.kafka.bootstrap_servers),
                               job.log_path, job.args)

    def run(self) -> WarmUpResult:
        ctx, obs, job = self.ctx, self.obs, self.job
        obs.start(obs.collector)
        obs.start(obs.kafka_events)
        ctx.phases["start"] = time.time()
        job.start()
        ctx.recorder.record(Kind.JOB_SUBMITTED, "driver", script=ctx.inputs.script.name)
        # Load starts when the query runs: a backlog built up during the JVMs' start-up is
        # excluded from the baseline anyway and only makes the warm-up longer.
        self._wait_query_started()
        local_master = self._check_reach()
        self._wait_starting_offsets()
        obs.start(obs.generator)
        steady = self._wait_steady()
        self._check_reference_names()
        ctx.phases["warmup_end"] = steady
        ctx.recorder.record(Kind.STEADY_STATE, "", t=steady)
        return WarmUpResult(steady=steady, local_master=local_master)

    def _fail(self, what: str) -> RunError:
        self.names.check()  # a name the test mistyped that made the job fail (a topic it cannot find) says so
        return job_failed(self.job, what, self.ctx.inputs.script)

    def _wait_query_started(self) -> None:
        job, progress, timeout = self.job, self.obs.progress, self.ctx.spec.warmup_timeout

        def started() -> bool:
            progress.poll()
            if any(e.kind == Kind.QUERY_STARTED for e in progress.timeline):
                return True
            if not job.alive:
                raise self._fail(f"the job exited (code {job.returncode}) before its streaming query started")
            return False

        poll(started, timeout, lambda _: self._fail(
            f"the streaming query did not start within warmup_timeout={timeout:g}s "
            "(awaited a QueryStartedEvent in the job's event log)"), interval=PHASE_POLL_S, clock=time.time)

    def _check_reach(self) -> str | None:
        """A job that sets ``.master("local[...]")`` in its code runs no executors on the plugin's
        cluster: a fault aimed at the cluster's JVMs cannot reach it. Fail now, saying so; return
        that master (None: the job runs on the cluster)."""
        local = sorted({m for m in self.obs.progress.masters.values() if m.startswith("local")})
        if not local:
            return None
        cluster_faults = [p.label for p in self.ctx.inputs.planned if kind_of(p.spec).reaches_cluster(p.spec)]
        if cluster_faults:
            raise self._fail(f"the job runs in local mode (its code sets spark.master={local[0]}, "
                             f"which overrides the plugin's cluster), so {', '.join(cluster_faults)} "
                             "cannot reach it: remove .master(...) from the job (spark-submit passes the "
                             "cluster's master) or use driver faults (kill_driver, pause of the driver), "
                             "which work in local mode")
        self.ctx.warnings.append(f"the job runs in local mode (spark.master={local[0]} in its code): its executors "
                                 "are threads of the driver, not the plugin's cluster")
        return local[0]

    def _wait_starting_offsets(self) -> None:
        """Start the load only once the query has fixed its starting offsets: with Spark's default
        ``startingOffsets=latest`` everything sent before that moment is (correctly) never read, and
        would otherwise be reported as lost. Spark's Kafka connector writes them to the checkpoint's
        ``sources/``. Also finds the query's checkpoint."""
        job, progress, checkpoint = self.job, self.obs.progress, self.obs.checkpoint

        def fixed() -> bool:
            progress.poll()
            checkpoint.find(progress)
            if checkpoint.offsets_fixed():
                self.ctx.recorder.record(Kind.STARTING_OFFSETS_FIXED, "query")
                return True
            if not job.alive:
                raise self._fail(f"the job exited (code {job.returncode}) before its query read any offsets")
            return False

        if not poll_until(fixed, min(30.0, self.ctx.spec.warmup_timeout), PHASE_POLL_S):
            self.ctx.warnings.append("the query did not report its starting offsets within 30 s after it started; "
                                     "the load began anyway (with startingOffsets=latest, records sent before the "
                                     "query fixed its offsets would count as lost)")

    def _wait_steady(self) -> float:
        """Wait for output, then for :data:`STEADY_BATCHES` stable micro-batches without backlog; return that time."""
        s, progress = self.ctx.spec, self.obs.progress
        steady = poll_until(self._steady_now, s.warmup_timeout, PHASE_POLL_S)
        if steady is not None:
            return steady
        if self.first_output is None:
            where = "in Spark's progress" if self.obs.sinks.progress_only else f"in {self._output_names()}"
            queries = query_sinks(progress.batches, progress.writes)
            sinks = "; ".join(f"{q.label} writes to {q.where()}" for q in queries)
            raise self._fail(f"no output within warmup_timeout={s.warmup_timeout:g}s (awaited the first "
                             f"output {where}; Spark reported {len(progress.batches)} micro-batches"
                             + (f"; {sinks}" if sinks else "") + ")")
        self.ctx.warnings.append(f"micro-batches were not stable within warmup_timeout={s.warmup_timeout:g}s; "
                                 "the baseline may include startup backlog")
        return time.time()

    def _steady_now(self) -> float | None:
        """One look during the warm-up: the time now if the run is in steady state, else None (the
        job's or the observers' failure raises)."""
        obs, job = self.obs, self.job
        collector, progress = obs.collector, obs.progress
        progress.poll()
        obs.checkpoint.find(progress)
        check_user_code(obs.generator, collector)
        self.names.check()  # a name the job shows mistyped ends the run now, naming what the job has
        if not job.alive:
            raise self._fail(f"the job exited (code {job.returncode}) before reaching steady state")
        if collector.errors and collector.count == 0 and not obs.sinks.progress_only:
            raise self._fail(f"the collector failed: {collector.errors[-1]}")
        obs.sinks.check(collector, progress)
        if self.first_output is None:
            self.first_output = obs.sinks.first_output(collector, progress)
            if self.first_output is not None:
                self.ctx.recorder.record(Kind.FIRST_OUTPUT, "", t=self.first_output)
        obs.checkpoint.check_fresh(progress)
        if self.first_output is not None and self._stable(progress.batches):
            return time.time()
        self.status("warm-up", self.ctx.spec.warmup_timeout)
        return None

    def _check_reference_names(self) -> None:
        """Before the load: a column the test's ``Reference(key=..., ignore=...)`` names that no row an output
        holds so far has fails the run in one line naming the columns there are (a mistyped key must never be
        compared as nothing). An output with no rows yet (windows the watermark has not closed) is checked by
        the comparison at the end."""
        ref = self.ctx.inputs.reference
        if ref is None or not (ref.key or ref.ignore):
            return
        for out in output_rows(self.obs.collector):
            refused = ref.refused(out.name, out.rows)
            if refused:
                raise RunError(refused)

    def _output_names(self) -> str:
        outputs = self.ctx.spec.outputs
        return ", ".join(outputs) if outputs else f"the output topic {self.obs.sinks.out_topic}"

    def _stable(self, batches: list[BatchProgress]) -> bool:
        """:data:`STEADY_BATCHES` recent batches with input, similar durations, and no more input than
        the rate brings."""
        s = self.ctx.spec
        recent = [b for b in batches[-6:] if (b.get("numInputRows") or 0) > 0][-STEADY_BATCHES:]
        if len(recent) < STEADY_BATCHES:
            return False
        dur = np.array([(b.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0 for b in recent])
        if dur.max() > 2.0 * max(dur.min(), s.trigger_seconds / 2):
            return False
        interval = max(recent[-1]["t_start"] - recent[-2]["t_start"], s.trigger_seconds)
        return recent[-1]["numInputRows"] <= 2.0 * s.rate * interval + 10
