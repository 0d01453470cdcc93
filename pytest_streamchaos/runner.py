"""One chaos run: topics, collector, the user's job, load, faults, drain, verdict.

:class:`Chaos` is what the ``chaos`` fixture hands a test. ``chaos.run(job, ...)`` goes through the
phases of DESIGN.md §6: **warm-up** (until output flows and micro-batches are stable; the startup
backlog is not part of the baseline), **load** for ``duration`` seconds from steady state with the
test's faults on their timeline, then **drain** (the generator stops, the run continues until the
outputs settle). Everything it starts is stopped on every exit path.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pytest_streamchaos.analysis.metrics import MetricParams
from pytest_streamchaos.analysis.oracle import IdentityOracle, Oracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.trace import TimelineEvent, Trace
from pytest_streamchaos.faults.actions import FaultContext, PoisonSchedule, actions_for, moments_for
from pytest_streamchaos.faults.scheduler import FaultScheduler, Recorder
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import horizon, plan
from pytest_streamchaos.faults.timeouts import check_delay_class, governing_timeout
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.progress import CheckpointWatcher, SparkProgress
from pytest_streamchaos.spark.config import JobConfig
from pytest_streamchaos.spark.eos import control_topic_for
from pytest_streamchaos.spark.launcher import JobLauncher
from pytest_streamchaos.workload.generator import Generator
from pytest_streamchaos.workload.seed import resolve_seed

log = logging.getLogger(__name__)

GUARANTEES = ("exactly-once", "at-least-once", "at-most-once")
POLL_S = 0.25


class RunError(RuntimeError):
    """The run could not produce a verdict (the job never produced output, the stack broke, ...).
    The message says what was awaited and shows the job's log tail."""


@dataclass
class RunSpec:
    """The arguments of one ``chaos.run`` (kept in the run's JSON)."""

    job: str
    rate: float
    duration: float
    guarantee: str
    partitions: int
    key_space: int
    skew: float
    record_size: int
    late_fraction: float
    trigger_seconds: float
    warmup_timeout: float
    drain_timeout: float
    settle_seconds: float
    kafka_timeout_ms: float
    conf: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def resolve_job(job: str | Path, test_dir: Path | None, rootdir: Path | None) -> Path:
    """``job`` as given if absolute, else relative to the test file's directory, else to the rootdir
    (then the current directory). The error lists every place looked at."""
    p = Path(job)
    if p.is_absolute():
        candidates = [p]
    else:
        candidates = [d / p for d in (test_dir, rootdir, Path.cwd()) if d is not None]
    for c in candidates:
        if c.is_file():
            return c.resolve()
    raise RunError(f"job script {str(job)!r} not found; looked at: {', '.join(str(c) for c in candidates)}. "
                   "Pass an absolute path or one relative to the test file or the rootdir")


class Chaos:
    """The ``chaos`` fixture: runs the user's job on the stack under load with the test's faults.

    ``faults`` come from the test's fault marks (validated at collection). Every finished run is kept
    in :attr:`runs` for the SLA marks, the terminal summary and ``--chaos-report``.
    """

    def __init__(self, *, cluster: Any, kafka: Any, workdir: Path, faults: Sequence[FaultSpec] = (),
                 test_dir: Path | None = None, rootdir: Path | None = None, nodeid: str = "",
                 java_home: str | None = None, seed: int | None = None) -> None:
        self.cluster = cluster
        self.kafka = kafka  # the per-test view (unique topic names)
        self.workdir = Path(workdir)
        self.faults = list(faults)
        self.test_dir = test_dir
        self.rootdir = rootdir
        self.nodeid = nodeid
        self.java_home = java_home or None
        self.seed = resolve_seed(nodeid, seed)  # the workload seed: stable per test id unless given
        self.runs: list[ChaosRun] = []

    def run(
        self,
        job: str | Path,
        rate: float = 200.0,
        duration: float = 30.0,
        guarantee: str = "at-least-once",
        oracle: Oracle | None = None,
        *,
        partitions: int = 2,
        key_space: int = 100,
        skew: float = 0.0,
        record_size: int = 100,
        late_fraction: float = 0.0,
        trigger_seconds: float = 1.0,
        warmup_timeout: float = 120.0,
        drain_timeout: float = 60.0,
        settle_seconds: float | None = None,
        kafka_timeout_ms: float = 30_000,
        conf: dict[str, Any] | None = None,
        env: dict[str, Any] | None = None,
        id_reader: str | Callable[[bytes, bytes | None], list[int]] | None = None,
        params: MetricParams | None = None,
    ) -> ChaosRun:
        """Run ``job`` (a PySpark script: absolute, or relative to the test file or rootdir) at
        ``rate`` records/s for ``duration`` seconds of load after steady state, with the test's
        faults, and return the verdict.

        ``guarantee`` is the declared processing guarantee (checked after the test, and by
        ``run.assert_sla``); ``oracle`` says which input ids each output must carry (default:
        identity, for stateless jobs). ``conf`` is Spark conf for the job, ``env`` extra environment
        for its driver. ``params`` sets the metric parameters (band, hold, bucket).
        """
        if guarantee not in GUARANTEES:
            raise ValueError(f"guarantee={guarantee!r}: use one of {GUARANTEES}")
        if rate <= 0 or duration <= 0:
            raise ValueError(f"rate={rate!r} and duration={duration!r} must be > 0")
        script = resolve_job(job, self.test_dir, self.rootdir)
        planned = plan(self.faults)
        need = horizon(planned)
        if need > duration:
            raise ValueError(f"the fault timeline needs {need:g}s after steady state (last fault fired and healed) "
                             f"but duration={duration:g}; raise duration or move the faults earlier")
        spec = RunSpec(str(script), rate, duration, guarantee, partitions, key_space, skew, record_size,
                       late_fraction, trigger_seconds, warmup_timeout, drain_timeout,
                       settle_seconds if settle_seconds is not None else max(5.0, 4 * trigger_seconds),
                       kafka_timeout_ms, {k: str(v) for k, v in (conf or {}).items()},
                       {k: str(v) for k, v in (env or {}).items()})
        result = _Run(self, spec, script, planned, oracle or IdentityOracle(), id_reader, params).execute()
        self.runs.append(result)
        return result


class _Run:
    """The state of one run; :meth:`execute` is the whole life cycle."""

    def __init__(self, chaos: Chaos, spec: RunSpec, script: Path, planned: list, oracle: Oracle,
                 id_reader: Any, params: MetricParams | None) -> None:
        self.c = chaos
        self.spec = spec
        self.script = script
        self.planned = planned
        self.oracle = oracle
        self.id_reader = id_reader
        self.params = params
        self.recorder = Recorder()
        self.phases: dict[str, float] = {}
        self.warnings: list[str] = []
        n = len(chaos.runs)
        self.dir = chaos.workdir / f"run{n}"
        self.dir.mkdir(parents=True, exist_ok=True)
        # exact topic names and broker controls live on the session cluster behind the per-test view
        self._session_kafka = getattr(chaos.kafka, "cluster", chaos.kafka)

    # -- the life cycle ------------------------------------------------------------------------
    def execute(self) -> ChaosRun:
        s, kafka = self.spec, self.c.kafka
        in_topic = kafka.create_topic("in", partitions=s.partitions)
        out_topic = kafka.create_topic("out", partitions=s.partitions)
        side_topic = kafka.create_topic("late", partitions=1)
        # The exactly-once sink's commit log: exact name, one partition (DESIGN.md: no CreateTopics).
        self._session_kafka.create_topic(control_topic_for(out_topic), partitions=1)
        checkpoint = self.dir / "checkpoint"
        cfg = JobConfig(bootstrap_servers=kafka.bootstrap_servers, input_topic=in_topic, output_topic=out_topic,
                        checkpoint_dir=str(checkpoint), trigger_seconds=s.trigger_seconds, side_topic=side_topic,
                        transactional_id=f"streamchaos-{uuid.uuid4().hex[:12]}")
        launcher = JobLauncher.for_cluster(self.c.cluster, self.dir / "jobs", java_home=self.c.java_home)
        env = {"STREAMCHAOS_KAFKA_TIMEOUT_MS": str(int(s.kafka_timeout_ms)), **s.env}
        job = launcher.prepare(self.script, config=cfg, conf=s.conf, env=env)
        self.job = job
        self._check_delay_classes(job)

        poison = PoisonSchedule()
        collector = Collector(kafka.bootstrap_servers, [out_topic, side_topic], id_reader=self.id_reader,
                              commit_log=control_topic_for(out_topic))
        generator = Generator(kafka.bootstrap_servers, in_topic, s.rate, key_space=s.key_space, skew=s.skew,
                              record_size=s.record_size, late_fraction=s.late_fraction, poison=poison,
                              seed=self.c.seed)
        progress = SparkProgress(job.event_log_dir)
        watcher = CheckpointWatcher(checkpoint)
        ctx = FaultContext(cluster=self.c.cluster, kafka=self._session_kafka, job=job,
                           input_topic=in_topic, checkpoint=watcher, collector=collector, poison=poison,
                           recorder=self.recorder)
        scheduler = FaultScheduler(self.planned, actions_for(ctx), self.recorder, moments_for(ctx))
        self.topics = {"input": in_topic, "output": out_topic, "side": side_topic}
        # the run names the topics, so the oracle learns them here unless the test set its own
        if self.oracle.topic is None:
            self.oracle.topic = out_topic
        if self.oracle.side_topic is None:
            self.oracle.side_topic = side_topic
        started = []
        try:
            collector.start()
            started.append(collector)
            self.phases["start"] = time.time()
            job.start()
            self.recorder.record("job_submitted", "driver", script=self.script.name)
            # Load starts when the query runs: a backlog built up during the JVMs' start-up is
            # excluded from the baseline anyway and only makes the warm-up longer.
            self._wait_query_started(job, progress)
            generator.start()
            started.append(generator)
            steady = self._warm_up(job, collector, progress)
            self.phases["warmup_end"] = steady
            self.recorder.record("steady_state", "", t=steady)
            scheduler.start(steady)
            self._load(job, progress, steady + s.duration)
            generator.stop()
            self.phases["load_end"] = time.time()
            self.recorder.record("load_end")
            scheduler.stop()
            self._drain(collector, progress, generator, watcher)
            self.phases["drain_end"] = time.time()
            self.recorder.record("drain_end")
        finally:
            scheduler.stop()
            if generator in started and generator.running:
                generator.stop()
            try:
                job.stop()
            finally:
                if collector in started:
                    collector.stop(drain_timeout=10.0)
        progress.poll()
        return self._verdict(job, generator, collector, progress, scheduler, ctx)

    def _check_delay_classes(self, job: Any) -> None:
        for p in self.planned:
            if p.spec.kind == "network_delay" and p.spec.params.get("above_timeout") is not None:
                to = governing_timeout(str(p.spec.target), getattr(self.c.cluster, "effective_conf", {}),
                                       job.effective_conf, self.spec.kafka_timeout_ms)
                check_delay_class(float(p.spec.params["ms"]), p.spec.params["above_timeout"], to,
                                  str(p.spec.target))

    def _fail(self, job: Any, what: str) -> RunError:
        return RunError(f"{what}\n--- job log ({job.name}) tail ---\n{job.tail_log(40)}")

    def _wait_query_started(self, job: Any, progress: SparkProgress) -> None:
        deadline = time.time() + self.spec.warmup_timeout
        while time.time() < deadline:
            progress.poll()
            if any(e.kind == "query_started" for e in progress.timeline):
                return
            if not job.alive:
                raise self._fail(job, f"the job exited (code {job.returncode}) before its streaming query started")
            time.sleep(POLL_S)
        raise self._fail(job, f"the streaming query did not start within warmup_timeout={self.spec.warmup_timeout:g}s "
                              "(awaited a QueryStartedEvent in the job's event log)")

    def _warm_up(self, job: Any, collector: Collector, progress: SparkProgress) -> float:
        """Wait for output, then for three stable micro-batches without backlog; return that time."""
        s = self.spec
        deadline = time.time() + s.warmup_timeout
        first_output = None
        while time.time() < deadline:
            progress.poll()
            if not job.alive:
                raise self._fail(job, f"the job exited (code {job.returncode}) before reaching steady state")
            if collector.errors and collector.count == 0:
                raise self._fail(job, f"the collector failed: {collector.errors[-1]}")
            if first_output is None and collector.count > 0:
                first_output = time.time()
                self.recorder.record("first_output", "", t=collector.last_arrival or first_output)
            if first_output is not None and self._stable(progress.batches):
                return time.time()
            time.sleep(POLL_S)
        if first_output is None:
            raise self._fail(job, f"no output within warmup_timeout={s.warmup_timeout:g}s (awaited the first "
                                  f"record in the output topic; Spark reported {len(progress.batches)} micro-batches)")
        self.warnings.append(f"micro-batches were not stable within warmup_timeout={s.warmup_timeout:g}s; "
                             "the baseline may include startup backlog")
        return time.time()

    def _stable(self, batches: list[dict[str, Any]]) -> bool:
        """Three recent batches with input, similar durations, and no more input than the rate brings."""
        recent = [b for b in batches[-6:] if (b.get("numInputRows") or 0) > 0][-3:]
        if len(recent) < 3:
            return False
        dur = np.array([(b.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0 for b in recent])
        if dur.max() > 2.0 * max(dur.min(), self.spec.trigger_seconds / 2):
            return False
        interval = max(recent[-1]["t_start"] - recent[-2]["t_start"], self.spec.trigger_seconds)
        return recent[-1]["numInputRows"] <= 2.0 * self.spec.rate * interval + 10

    def _load(self, job: Any, progress: SparkProgress, until: float) -> None:
        exited_seen = False
        while time.time() < until:
            progress.poll()
            if not job.alive and not exited_seen and job.process is not None and job.returncode is not None:
                exited_seen = True  # a driver fault restarts it; otherwise this is a finding
                self.recorder.record("driver_exited", "driver", code=job.returncode)
            if job.alive:
                exited_seen = False
            time.sleep(POLL_S)

    def _drain(self, collector: Collector, progress: SparkProgress, generator: Generator,
               watcher: CheckpointWatcher) -> None:
        """Until the job has committed every input offset (it caught up), then until the outputs
        settle (no new output for ``settle_seconds``, or every acknowledged id came out)."""
        s = self.spec
        deadline = time.time() + s.drain_timeout
        ends = input_end_offsets(self.c.kafka.bootstrap_servers, self.topics["input"])
        caught_up_at = None
        while time.time() < deadline:
            progress.poll()
            if caught_up_at is None and committed_past(watcher, self.topics["input"], ends):
                caught_up_at = time.time()
                self.recorder.record("caught_up", "", t=caught_up_at)
            if caught_up_at is not None:
                if (isinstance(self.oracle, IdentityOracle) and self.oracle.filter is None
                        and collector.ids_seen >= generator.acked):
                    return
                last = max(collector.last_arrival or 0.0, caught_up_at)
                if time.time() - last > s.settle_seconds:
                    return
            time.sleep(POLL_S)
        what = "the outputs to settle" if caught_up_at else f"the job to commit the input's end offsets {ends}"
        self.warnings.append(f"drain_timeout={s.drain_timeout:g}s passed while waiting for {what}; "
                             "inputs still in flight then are reported as lost")

    # -- verdict -------------------------------------------------------------------------------
    def _verdict(self, job: Any, generator: Generator, collector: Collector, progress: SparkProgress,
                 scheduler: FaultScheduler, ctx: FaultContext) -> ChaosRun:
        sent = generator.sent()
        outputs = collector.outputs()
        events: list[TimelineEvent] = [*self.recorder.events(), *job.timeline, *progress.timeline]
        trace = Trace(sent=sent, outputs=outputs, batches=list(progress.batches), timeline=events,
                      phases=dict(self.phases), trigger_seconds=self.spec.trigger_seconds)
        if collector.lost_to_retention:
            self.warnings.append(
                f"{collector.lost_to_retention} outputs were deleted by the broker before the collector read them "
                "(retention; the embedded broker keeps ~5 MB per partition): their ids count as lost. Lower the "
                "rate or the record size, or use more partitions")
        run = ChaosRun.from_trace(trace, self.oracle, self.spec.guarantee, self.params)
        run.meta.update({
            "test": self.c.nodeid,
            "seed": self.c.seed,
            "run": self.spec.__dict__,
            "faults": [p.label for p in self.planned],
            "fault_errors": scheduler.errors,
            "topics": self.topics,
            "spark_conf": job.effective_conf,
            "cluster_conf": dict(getattr(self.c.cluster, "effective_conf", {})),
            "generator": generator.stats(),
            "collector": {"count": collector.count, "malformed": collector.malformed,
                          "lost_to_retention": collector.lost_to_retention,
                          "retention_gaps": collector.retention_gaps, "errors": collector.errors[-20:]},
            "aimed": ctx.notes,
            "poisoned_ids": ctx.poison.poisoned if ctx.poison else [],
            "driver_launches": len(getattr(job, "launches", [])),
            "job_log": str(getattr(job, "log_path", "")),
            "warnings": self.warnings,
        })
        return run


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
