"""Phase 2: the job prepared, not started -- its STREAMCHAOS_* contract, its arguments with the
run's names filled in, the conf the stated delay classes need, the directories its checkpoint may
be in, and no checkpoint of an earlier run where it will look."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_streamchaos import storages
from pytest_streamchaos.analysis.delay_class import DelaySpec
from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.gate_moments import GATE_KEY, RunGate, needs_gate
from pytest_streamchaos.faults.kind import JobSite, LinkDelay, Preparation
from pytest_streamchaos.faults.registry import kind_of, prepare
from pytest_streamchaos.faults.timeouts import check_delay_class, governing_timeout, resolve_delay_class
from pytest_streamchaos.job.config import JobConfig
from pytest_streamchaos.machine.commands import CommandError
from pytest_streamchaos.observe.checkpoints import checkpoint_literals, is_checkpoint, paths_in
from pytest_streamchaos.observe.output_names import output_path
from pytest_streamchaos.observe.storage import Place
from pytest_streamchaos.protocols import Gate, GatedStore, StorageService
from pytest_streamchaos.runner.context import RunContext
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.phases.topics import RunTopics
from pytest_streamchaos.spark import realtime
from pytest_streamchaos.spark.connector import kafka_timeouts
from pytest_streamchaos.spark.launcher import JobLauncher
from pytest_streamchaos.stack.base import JobHandle, StackError
from pytest_streamchaos.stack.checkpoint_gate import CheckpointGate


@dataclass
class PreparedJob:
    """The job ready to start, and what the run learnt preparing it."""

    job: JobHandle  #: the job, not started (the cluster's launcher made it)
    checkpoint_roots: list  #: where the query's checkpoint may be (places of the run's storage)
    job_kafka: dict[str, tuple[str, str]]  #: Kafka client timeouts the job's code sets
    delay_choices: list  #: facts.DelayClassChoice, one per timeout changed
    #: what the plan's fault kinds made ready before the job starts (``FaultKind.before_job``), by kind
    #: name: released by the run once it is over (``faults.registry.release``)
    prepared: dict[str, Preparation] = field(default_factory=dict)


class PrepareJob:
    """Builds the :class:`PreparedJob` of a run from its spec, storage and topics."""

    def __init__(self, ctx: RunContext, topics: RunTopics, gate: bool = False) -> None:
        self.ctx = ctx
        self.topics = topics
        #: preload the checkpoint gate whatever the first plan aims at (one history: later schedules may)
        self.gate = gate

    def run(self) -> PreparedJob:
        ctx, s, t = self.ctx, self.ctx.spec, self.topics
        script, storage, chaos = ctx.inputs.script, ctx.storage, ctx.chaos
        checkpoint = storage.checkpoint
        job_dir = ctx.dir / "jobs" / script.stem  # the driver's working directory (see prepare)
        cfg = JobConfig(bootstrap_servers=t.job_bootstrap, input_topic=t.inputs[0],
                        input_topics=tuple(t.inputs), output_topic=t.out_topic or "",
                        checkpoint_dir=str(checkpoint), trigger_seconds=s.trigger_seconds,
                        side_topic=t.side_topic, transactional_id=f"streamchaos-{uuid.uuid4().hex[:12]}")
        subst = {"bootstrap_servers": t.job_bootstrap, "input_topic": t.inputs[0],
                 "output_topic": t.out_topic or "", "checkpoint_dir": str(checkpoint), "workdir": str(job_dir)}
        argv = [a.format(**subst) for a in s.args]
        job_kafka = kafka_timeouts(script)  # the Kafka link's timeouts, as the job's code sets them
        named = self._named_checkpoints(argv)
        self._no_stale_checkpoint(named)
        launcher = JobLauncher.for_cluster(chaos.cluster, ctx.dir / "jobs", java_home=chaos.java_home,
                                           jit=chaos.jit, progress=chaos.progress)
        # the timeouts a stated delay class needs, on the conf the launcher will pass; a real-time query's cores
        conf_add, choices = self._resolve_delay_classes({**launcher.defaults, **s.conf}, job_kafka)
        # a launcher that gives its jobs a number of executors (YARN's) is sized by them, not by spark.cores.max
        conf_add.update(self._real_time_cores({**launcher.defaults, **s.conf},
                                              by_executors="spark.executor.instances" in launcher.defaults))
        gate = self._gate()
        preloaded = gate if isinstance(gate, CheckpointGate) else None  # the object store's gate is its proxy's
        gate_env, gate_conf = ((preloaded.env(base=s.env.get("LD_PRELOAD")), preloaded.executor_conf()) if preloaded
                               else ({}, {}))
        try:
            job = launcher.prepare(script, config=cfg, conf={**storage.conf, **s.conf, **conf_add, **gate_conf},
                                   env={**storage.env, **s.env, **gate_env}, args=argv, files=s.files,
                                   py_files=s.py_files, deploy_mode=s.deploy_mode, outputs=s.outputs or ())
        except BaseException:
            if gate is not None:
                gate.close()
            raise
        ctx.warnings.extend(job.notes)
        self._check_delay_classes(job, job_kafka)
        roots = [storage.place(r) for r in (str(job.workdir), *storage.roots,
                                            *paths_in([*argv, *s.conf.values()], job.workdir))]
        roots += [place for place, _ in named]  # a location hard-coded in the job's code
        try:
            prepared = self._prepare_faults(argv, job)
        except BaseException:
            if gate is not None:
                gate.close()
            raise
        if gate is not None:
            prepared[GATE_KEY] = RunGate(gate)
        return PreparedJob(job=job, checkpoint_roots=roots, job_kafka=job_kafka, delay_choices=choices,
                           prepared=prepared)

    def _real_time_cores(self, job_conf: Mapping[str, str], by_executors: bool) -> dict[str, str]:
        """A real-time query's cores (:func:`pytest_streamchaos.spark.realtime.sized`): the conf that gives it one
        per input partition, said in the run's warnings; a :class:`RunError` in one line when it cannot have them."""
        rt = self.ctx.inputs.real_time
        if rt is None:
            return {}
        partitions, own = self.ctx.spec.partitions * len(self.topics.inputs), self.ctx.spec.conf
        rows = self.ctx.chaos.cluster.alive_workers()
        cores = [int(r["cores"]) for r in rows] if rows and all("cores" in r for r in rows) else None
        try:
            if by_executors:
                conf, note = realtime.sized_on_yarn(rt, partitions=partitions, job_conf=job_conf, own=own)
            else:
                conf, note = realtime.sized(rt, partitions=partitions, worker_cores=cores, job_conf=job_conf, own=own)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        if note:
            self.ctx.warnings.append(note)
        return conf

    def _gate(self) -> Gate | None:
        """The checkpoint gate, when a fault of the plan is aimed at a moment it lands: the one the storage of the
        query's checkpoint holds renames with -- a library preloaded into the job's driver and executors (this
        host's files; not where the executors run on other hosts), or its service's (the object store's proxy
        holds S3A's COPY) -- or None (an HDFS checkpoint renames by RPC)."""
        specs = [p.spec for p in self.ctx.inputs.planned]
        whens = {s.when for s in specs}
        if not (self.gate or needs_gate(specs)):
            return None
        entry, service = self._checkpoint_storage()
        if entry.gate == "service" and isinstance(service, GatedStore):
            return service.gate()
        if not entry.preloaded or self.ctx.chaos.cluster.link_sides():
            return None
        try:
            return CheckpointGate(self.ctx.dir / "gate")
        except StackError as exc:
            raise RunError(f"an aimed moment ({', '.join(sorted(w for w in whens if w))}) needs the checkpoint "
                           f"gate: {exc}") from None

    def _checkpoint_storage(self) -> tuple[storages.CheckpointStorage, StorageService | None]:
        """The storage the query's checkpoint is on, and its service: the one whose URL the job's code names as
        its ``checkpointLocation`` (``s3a://...``), else the run's."""
        storage = self.ctx.storage
        try:
            source = self.ctx.inputs.script.read_text(errors="replace")
        except OSError:
            source = ""
        services = storage.services()
        for loc, _ in checkpoint_literals(source):
            entry = storages.of_scheme(loc.split("://", 1)[0]) if "://" in loc else None
            if entry is not None and entry.name in services:
                return entry, services[entry.name]
        return storage.entry, storage.service

    def _prepare_faults(self, argv: Sequence[str], job: JobHandle) -> dict[str, Preparation]:
        """What the plan's fault kinds make ready before the job starts (their ``before_job``: e.g. a small
        filesystem where the checkpoint will be), last, so that nothing after it here can fail."""
        specs = list({id(p.spec): p.spec for p in self.ctx.inputs.planned}.values())
        if not specs:
            return {}
        s, storage = self.ctx.spec, self.ctx.storage
        try:
            source = self.ctx.inputs.script.read_text(errors="replace")
        except OSError:
            source = ""
        places = (checkpoint_places(source, argv, s.conf, s.outputs, job.workdir, str(storage.checkpoint))
                  if storage.entry.on_host else [])
        site = JobSite(workdir=job.workdir, checkpoints=tuple(places), storage=storage.kind,
                       harness=(job.event_log_dir, job.log_path, job.workdir / "local"),
                       separate_hosts=bool(self.ctx.chaos.cluster.link_sides()),
                       elsewhere=tuple(unreachable_checkpoints(source, storage.kind)))
        try:
            return prepare(specs, site)
        except (ValueError, CommandError) as exc:
            raise RunError(str(exc)) from None

    def _named_checkpoints(self, argv: Sequence[str]) -> list[tuple[Place, str]]:
        """The checkpoint locations the job names where the run can see them before it starts: absolute
        literals in its code (``checkpoint_literals``) and absolute paths in its args, each as (place, where).
        A relative one lands in the driver's fresh working directory (or fresh HDFS home): never stale."""
        script, storage = self.ctx.inputs.script, self.ctx.storage
        try:
            source = script.read_text(errors="replace")
        except OSError:
            source = ""
        named = [(loc, where) for loc, where in checkpoint_literals(source, script.name)
                 if loc.startswith(("/", "file:", *storages.remote_prefixes()))]
        named += [(a, "args") for a in paths_in(argv, self.ctx.dir)]
        out: list[tuple[Place, str]] = []
        for loc, where in named:
            # on a storage's service (HDFS) the default filesystem is the service's: a bare absolute path is there
            bare = "://" not in loc and not loc.startswith("file:")
            root = storage.service.default_fs if storage.service is not None and storage.entry.default_fs else ""
            place = storage.place(f"{root}{loc}" if root and bare else loc)
            if all(str(place) != str(p) for p, _ in out):
                out.append((place, where))
        return out

    def _no_stale_checkpoint(self, named: list[tuple[Place, str]]) -> None:
        """A checkpoint the job names that exists before it starts is an earlier run's: the query would
        resume from it (offsets of topics made anew, state of records this run never sent). Fail naming
        it, or (``stale_checkpoint="clear"``) delete it and say so."""
        for place, where in named:
            if not is_checkpoint(place):
                continue
            if self.ctx.spec.stale_checkpoint == "fail":
                raise RunError(f"the job's checkpoint {place} ({where}) exists from an earlier run and the query "
                               "would resume from it: delete it, or pass chaos.run(..., setup=JobSetup("
                               "stale_checkpoint=\"clear\")) to start each run fresh")
            place.fs.rm(place.path, recursive=True)
            self.ctx.warnings.append(f"the job's checkpoint {place} ({where}) was left by an earlier run: deleted "
                                     "before the job started (stale_checkpoint=\"clear\")")

    def _resolve_delay_classes(self, job_conf: Mapping[str, str],
                               job_kafka: dict[str, tuple[str, str]]) -> tuple[dict[str, str], list]:
        """Make every stated delay class (a link delay's ``above_timeout=...``) hold by changing its
        link's timeout for this run (``faults.timeouts.resolve_delay_class``); return the Spark conf to add and the
        choices made. What the test pins itself is not changed."""
        ctx = self.ctx
        pinned = frozenset(ctx.spec.conf)
        conf: dict[str, str] = {}
        choices = []
        for d in stated_delays(ctx.inputs.planned):
            choice = resolve_delay_class(d.target, d.ms, d.above_timeout, ctx.chaos.cluster.effective_conf,
                                         {**job_conf, **conf}, pinned, job_kafka)
            if choice is None:
                continue
            conf.update(choice.conf)
            choices.append(choice)
            ctx.recorder.record(Kind.TIMEOUT_SET, choice.target, setting=choice.setting, value=choice.after,
                                was=choice.before, reason=choice.describe())
        return conf, choices

    def _check_delay_classes(self, job: JobHandle, job_kafka: dict[str, tuple[str, str]]) -> None:
        """Every stated class holds on the conf finally passed (two delays on one link that want
        opposite sides fail here, naming the setting)."""
        for d in stated_delays(self.ctx.inputs.planned):
            to = governing_timeout(d.target, self.ctx.chaos.cluster.effective_conf, job.effective_conf, job_kafka)
            check_delay_class(d.ms, d.above_timeout, to, d.target)


def checkpoint_places(source: str, argv: Sequence[str], conf: Mapping[str, str], outputs: Sequence[str] | None,
                      workdir: Path, run_checkpoint: str) -> list[str]:
    """Where a query's checkpoint on the local disk will be, as far as the run can tell before the job
    starts: the ``checkpointLocation`` its code names (a relative one in the driver's working directory
    ``workdir``), the absolute paths in its args that are not its declared file outputs, the session-wide
    ``spark.sql.streaming.checkpointLocation`` of its conf; else the run's ``{checkpoint_dir}`` (which the
    job reads from its STREAMCHAOS_* contract)."""
    found = []
    for loc, _ in checkpoint_literals(source):
        if "://" in loc.removeprefix("file://"):
            continue  # another filesystem's
        loc = loc.removeprefix("file://").removeprefix("file:")
        found.append(loc if loc.startswith("/") else str(workdir / loc))
    files = [path for o in outputs or [] if (path := output_path(o)) is not None]
    declared = {f if f.startswith("/") else str(workdir / f) for f in files}
    found += [a for a in paths_in(argv, workdir) if a not in declared and "://" not in a]
    session = conf.get("spark.sql.streaming.checkpointLocation", "").removeprefix("file:")
    if session.startswith("/"):
        found.append(session)
    return list(dict.fromkeys(found)) or [run_checkpoint]


def unreachable_checkpoints(source: str, storage: str) -> list[str]:
    """The checkpoint locations the job's code names on a file system the run cannot reach: another scheme
    than the run's storage takes (``s3a://``, ``gs://``, ``abfss://``, ``dbfs:/``; ``hdfs://`` in a run without
    HDFS): its ``schemes`` (:mod:`pytest_streamchaos.storages`)."""
    schemes = storages.get(storage).schemes
    out = []
    for loc, _ in checkpoint_literals(source):
        scheme = loc.split(":", 1)[0] if ":" in loc.split("/", 1)[0] else "file"
        if scheme not in schemes:
            out.append(loc)
    return list(dict.fromkeys(out))


def delay_specs(planned: list, cluster_conf: Mapping[str, str], job: JobHandle,
                job_kafka: dict[str, tuple[str, str]]) -> list[DelaySpec]:
    """Every network delay on a link with a failure-detection timeout, with that timeout as the job ran."""
    specs = []
    for p in planned:
        d = kind_of(p.spec).link_delay(p.spec)
        if d is not None:
            to = governing_timeout(d.target, cluster_conf, job.effective_conf, job_kafka)
            specs.append(DelaySpec(p.label, d.ms, d.above_timeout, to.setting, to.seconds, to.where))
    return specs


def stated_delays(planned: list) -> list[LinkDelay]:
    """The link delays of the plan that state their class (``above_timeout`` given)."""
    delays = [kind_of(p.spec).link_delay(p.spec) for p in planned]
    return [d for d in delays if d is not None and d.above_timeout is not None]
