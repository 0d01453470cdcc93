"""One chaos run: topics, collector, the user's job, load, faults, drain, verdict.

:class:`Chaos` is what the ``chaos`` fixture hands a test. ``chaos.run(job, ...)`` goes through the
phases of docs/job-contract.md#run-phases: **warm-up** (until output flows and micro-batches are stable; the startup
backlog is not part of the baseline), **load** for ``duration`` seconds from steady state with the
test's faults on their timeline, then **drain** (the generator stops, the run continues until the
outputs settle). Everything it starts is stopped on every exit path.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pytest_streamchaos.analysis.delay_class import DelaySpec, delay_outcomes
from pytest_streamchaos.analysis.from_progress import outputs_from_progress
from pytest_streamchaos.analysis.metrics import MetricParams, recovery_settled
from pytest_streamchaos.analysis.oracle import IdentityOracle, Oracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.trace import TimelineEvent, Trace
from pytest_streamchaos.analysis.validate import exactly_once_check
from pytest_streamchaos.client_stats import observer_report
from pytest_streamchaos.faults.actions import FaultContext, PoisonSchedule, actions_for, moments_for
from pytest_streamchaos.faults.scheduler import FaultScheduler, Recorder
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import load_end, load_seconds, plan, recovery_window
from pytest_streamchaos.faults.timeouts import check_delay_class, governing_timeout, resolve_delay_class
from pytest_streamchaos.job.config import JobConfig
from pytest_streamchaos.job.eos import control_topic_for
from pytest_streamchaos.observe.checkpoints import (
    CheckpointWatcher,
    checkpoint_literals,
    find_checkpoints,
    is_checkpoint,
    paths_in,
)
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.file_sink import columns_of
from pytest_streamchaos.observe.kafka_events import KafkaWatcher
from pytest_streamchaos.observe.outputs import IdSpec, Outputs, collector_for
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.observe.sinks import UNREADABLE, judge, query_sinks
from pytest_streamchaos.observe.storage import RunStorage
from pytest_streamchaos.spark import job_files
from pytest_streamchaos.spark.connector import kafka_timeouts
from pytest_streamchaos.spark.launcher import DEFAULT_CONF, DriverSupervisor, JobLauncher
from pytest_streamchaos.usercode import FACTORY, OUTPUT, RECORD, UserCodeError, annotation_label, check_arity
from pytest_streamchaos.workload.generator import Generator
from pytest_streamchaos.workload.joined import JoinedGenerators
from pytest_streamchaos.workload.seed import resolve_seed

log = logging.getLogger(__name__)

GUARANTEES = ("exactly-once", "at-least-once", "at-most-once")
#: where a run keeps its checkpoint (``chaos.run(checkpoint=...)``)
CHECKPOINTS = ("local", "hdfs")
#: what a run does with a checkpoint the job names that exists before it starts (``chaos.run(stale_checkpoint=...)``)
STALE_CHECKPOINT = ("fail", "clear")
POLL_S = 0.25
#: how often a run without a ``duration`` asks whether every fault has recovered for good (each ask
#: is a verdict on the run so far: tens of milliseconds for a few thousand records)
RECOVERY_CHECK_S = 1.0
#: micro-batches in a row with input, similar durations and no backlog that make the steady state. The
#: first batch with output is slow (Python workers and Kafka clients start) and the next one reads what
#: piled up meanwhile: two calm batches after those show the start-up is over; a third costs another
#: trigger interval per run (docs/architecture.md, "Start-up").
STEADY_BATCHES = 2

#: the output topics the run creates: the broker stamps each record when it appends it, so the collector
#: knows when the job's sink wrote (which micro-batch an output belongs to, whether an aimed fault hit)
#: without its own read lag and whatever timestamps the job sets
OUTPUT_TOPIC_CONFIG = {"message.timestamp.type": "LogAppendTime"}


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
    conf: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    inputs: list[str] | None = None  #: fixed input topic names (None: one per-run topic)
    outputs: list[str] | None = None  #: fixed output names (None: one per-run topic; []: none readable)
    kafka_port: int | None = None  #: a bootstrap port the job hard-codes (e.g. 9092), for this run
    supervise: bool = False  #: restart a driver that exits on its own (spark-submit --supervise)
    checkpoint: str = "local"  #: where the run's checkpoint is: ``local`` or ``hdfs``
    files: list[str] = field(default_factory=list)  #: the job's data files (absolute), as ``--files``
    py_files: list[str] = field(default_factory=list)  #: the job's Python files (absolute), as ``--py-files``
    stale_checkpoint: str = "fail"  #: a checkpoint of an earlier run the job names: ``fail`` or ``clear``
    #: no ``duration`` given and faults planned: the load keeps on at least this long after the last
    #: fault actually healed (an aimed fault can fire later than planned); None: the duration given
    recovery_window: float | None = None
    #: the load may end once every fault has recovered (set from ``recovery_window``; off if judging fails)
    end_on_recovery: bool = field(init=False)

    def __post_init__(self) -> None:
        self.end_on_recovery = self.recovery_window is not None


#: faults whose target is the cluster's JVMs: they cannot reach a job that runs in local mode
CLUSTER_FAULTS = ("kill_worker", "kill_executor", "kill_master")
#: placeholders a job's ``args`` may use
PLACEHOLDERS = ("bootstrap_servers", "input_topic", "output_topic", "checkpoint_dir", "workdir")


def check_args(args: Sequence[Any] | None) -> None:
    """Fail now, naming the placeholder, when ``args`` uses one the run does not substitute."""
    import string

    for a in args or []:
        for _, name, _, _ in string.Formatter().parse(str(a)):
            if name is not None and name not in PLACEHOLDERS:
                names = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                raise ValueError(f"args: {{{name}}} in {a!r} is not a placeholder the run fills; use {names} "
                                 "(write {{ }} for a literal brace)")


def check_run_args(guarantee: str, rate: float, duration: float | None, args: Sequence[Any] | None,
                   inputs: Mapping[str, Any] | None, checkpoint: str, *,
                   annotate: Mapping[str, Any] | None = None, outputs: Mapping[str, Any] | None = None,
                   id_reader: Any = None, oracle: Oracle | None = None) -> None:
    """Fail now, naming the argument and what is allowed, when ``chaos.run``'s arguments cannot work."""
    if guarantee not in GUARANTEES:
        raise ValueError(f"guarantee={guarantee!r}: use one of {GUARANTEES}")
    if rate <= 0 or (duration is not None and duration <= 0):
        raise ValueError(f"rate={rate!r} and duration={duration!r} must be > 0")
    check_args(args)
    if inputs is not None and not inputs:
        raise ValueError("inputs={} names no topic: give {topic: record_factory or None}, or omit it")
    if checkpoint not in CHECKPOINTS:
        raise ValueError(f"checkpoint={checkpoint!r}: use one of {CHECKPOINTS}")
    check_callables(inputs, annotate, outputs, id_reader, oracle)


def check_stale_checkpoint(stale_checkpoint: str) -> None:
    """Fail now, naming both choices, when ``stale_checkpoint`` is neither ``"fail"`` nor ``"clear"``."""
    if stale_checkpoint not in STALE_CHECKPOINT:
        raise ValueError(f"stale_checkpoint={stale_checkpoint!r}: use 'fail' (a checkpoint of an earlier run the job "
                         "names stops the run, naming it) or 'clear' (it is deleted before the job starts)")


def check_callables(inputs: Mapping[str, Any] | None, annotate: Mapping[str, Any] | None,
                    outputs: Mapping[str, Any] | None, id_reader: Any, oracle: Oracle | None) -> None:
    """Every callable of the test can be called the one way the run calls it
    (:mod:`pytest_streamchaos.usercode`): a record factory ``(spec)``, whatever looks at an input record
    (``annotate``, an oracle's ``copies`` / ``amount``) ``(record)``, an output id reader ``(value,
    key)``; and what looks at records has a factory's records to look at."""
    for topic, factory in (inputs or {}).items():
        if factory is not None:
            check_arity(factory, 1, f"inputs[{topic!r}] factory", FACTORY)
    per_record = {**(annotate or {}), **(oracle.record_callables() if oracle is not None else {})}
    for name, fn in per_record.items():
        check_arity(fn, 1, annotation_label(name), RECORD)
    for name, ids in (outputs or {}).items():
        if not (ids is None or isinstance(ids, str)):
            check_arity(ids, 2, f"outputs[{name!r}]", OUTPUT)
    for what, fn, expected in _vectorised(oracle):
        check_arity(fn, 1, what, expected)
    if not (id_reader is None or isinstance(id_reader, str)):
        check_arity(id_reader, 2, "id_reader", OUTPUT)
    no_factory = [t for t, f in (inputs or {}).items() if f is None] if inputs is not None else ["(built-in)"]
    if per_record and no_factory:
        names = ", ".join(annotation_label(n) for n in per_record)
        raise ValueError(f"{names} look(s) at the records a record factory makes, but input(s) {no_factory} have "
                         "none: give inputs={topic: factory} for every input (or pass a constant / an "
                         "annotation name)")


def _vectorised(oracle: Oracle | None) -> list[tuple[str, Any, str]]:
    """The oracle's callables over the whole ground truth or output (the analysis calls them after
    the run): (name, callable, expected signature)."""
    if oracle is None:
        return []
    kind = type(oracle).__name__
    sent = "(sent: SentRecords) -> one value per record"
    fns = [(f"{kind}(filter=)", oracle.filter, sent), (f"{kind}(fn=)", getattr(oracle, "fn", None), sent),
           (f"{kind}(output_key=)", getattr(oracle, "output_key", None), "(outputs: OutputRecords) -> key per output")]
    return [f for f in fns if f[1] is not None]


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
                 java_home: str | None = None, jit: str = "quick", seed: int | None = None,
                 status: Callable[[dict[str, Any]], None] | None = None,
                 progress: Callable[[str], None] | None = None, checkpoint: str = "local",
                 hdfs: Callable[[], Any] | None = None) -> None:
        if checkpoint not in CHECKPOINTS:
            raise ValueError(f"checkpoint={checkpoint!r}: use one of {CHECKPOINTS}")
        self.cluster = cluster
        self.kafka = kafka  # the per-test view (unique topic names)
        self.workdir = Path(workdir)
        self.faults = list(faults)
        self.test_dir = test_dir
        self.rootdir = rootdir
        self.nodeid = nodeid
        self.java_home = java_home or None
        self.jit = jit  # the job JVMs' JIT mode (spark.launcher.QUICK_JIT)
        self.seed = resolve_seed(nodeid, seed)  # the workload seed: stable per test id unless given
        self.runs: list[ChaosRun] = []
        #: runs started, failed ones included: each gets a directory of its own (a run that failed must not
        #: hand its checkpoint to the next)
        self.started = 0
        #: called about once a second while a run goes on, with the fields of :meth:`_Run._status`
        #: (the plugin's live progress line); None: nobody listens
        self.status = status
        #: where a line goes while something slow happens once (Spark's Kafka connector resolved)
        self.progress = progress
        #: where runs keep their checkpoints unless a run says otherwise (``--chaos-checkpoint``)
        self.checkpoint = checkpoint
        #: the session's HDFS, started on first use (None: no HDFS on this backend)
        self.hdfs = hdfs

    def run(
        self,
        job: str | Path,
        rate: float = 200.0,
        duration: float | None = None,
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
        conf: dict[str, Any] | None = None,
        env: dict[str, Any] | None = None,
        id_reader: str | Callable[[bytes, bytes | None], list[int]] | None = None,
        params: MetricParams | None = None,
        args: Sequence[Any] | None = None,
        inputs: Mapping[str, Callable[[Any], Any] | None] | None = None,
        outputs: Mapping[str, IdSpec] | None = None,
        kafka_port: int | None = None,
        annotate: Mapping[str, Callable[[Any], float]] | None = None,
        checkpoint: str | None = None,
        supervise: bool = False, stale_checkpoint: str = "fail",
        files: Sequence[str | Path] | None = None, py_files: Sequence[str | Path] | None = None,
    ) -> ChaosRun:
        """Run ``job`` (a PySpark script: absolute, or relative to the test file or rootdir) at
        ``rate`` records/s for ``duration`` seconds of load after steady state, with the test's
        faults, and return the verdict. Without ``duration`` the load lasts the fault timeline plus a
        recovery window and ends sooner once every fault's recovery is settled
        (docs/metrics.md#ending-the-load-on-recovery).

        ``guarantee`` is the declared processing guarantee (checked after the test, and by
        ``run.assert_sla``); ``oracle`` says which input ids each output must carry (default:
        identity, for stateless jobs). ``conf`` is Spark conf for the job, ``env`` extra environment
        for its driver. ``params`` sets the metric parameters (band, hold, bucket).

        Wiring for a job written without this plugin in mind (see the README, "Chaos-test your own job"):
        ``args`` is the job's argv, with ``{bootstrap_servers}``, ``{input_topic}``, ``{output_topic}``,
        ``{checkpoint_dir}`` and ``{workdir}`` substituted. ``inputs`` maps each topic the job reads to
        its record factory (None: the built-in records); several topics get the same ids (a join).
        ``outputs`` maps each place the job writes (a Kafka topic, or ``"file:<path>"`` for a file-sink
        directory, relative to the driver's working directory) to how input ids are read there
        (``"key"``, a JSON field path, or a callable); ``{}`` when nothing is readable (console, noop):
        the run then reports recovery from Spark's query progress only. Named topics start empty.
        ``annotate``: ``{name: fn(record) -> number}`` on each record the factory made, as it is sent (an
        aggregate's amount, an ``explode``'s copies); a callable that raises stops the run (:mod:`.usercode`).
        ``kafka_port``: the Kafka cluster also answers the job on ``127.0.0.1:<port>`` during the run, for a
        job that hard-codes ``localhost:9092`` (``--chaos-kafka-port`` does it for the whole session).
        ``checkpoint``: ``"local"`` (a directory of the run) or ``"hdfs"``: the stack's HDFS (started on
        first use) is the job's default filesystem, so its checkpoint (``{checkpoint_dir}``, or a relative
        ``checkpointLocation``) and relative file outputs are on HDFS; default ``--chaos-checkpoint``.
        ``supervise``: a driver that exits on its own is started again from its checkpoint, as
        ``spark-submit --supervise`` would (:class:`~pytest_streamchaos.spark.launcher.DriverSupervisor`).
        ``files``, ``py_files`` (as spark-submit's), ``stale_checkpoint``: docs/job-contract.md#the-jobs-own-files.
        """
        check_run_args(guarantee, rate, duration, args, inputs, checkpoint := checkpoint or self.checkpoint,
                       annotate=annotate, outputs=outputs, id_reader=id_reader, oracle=oracle)
        script = resolve_job(job, self.test_dir, self.rootdir)
        planned = plan(self.faults)
        load_s, load_why = load_seconds(planned, duration, trigger_seconds)
        spec = RunSpec(str(script), rate, load_s, guarantee, partitions, key_space, skew, record_size,
                       late_fraction, trigger_seconds, warmup_timeout, drain_timeout,
                       settle_seconds if settle_seconds is not None else max(5.0, 4 * trigger_seconds),
                       {k: str(v) for k, v in (conf or {}).items()}, {k: str(v) for k, v in (env or {}).items()},
                       [str(a) for a in (args or [])], None if inputs is None else list(inputs),
                       None if outputs is None else list(outputs), kafka_port=kafka_port, supervise=supervise,
                       checkpoint=checkpoint, **self._job_files(script, files, py_files, stale_checkpoint),
                       recovery_window=recovery_window(trigger_seconds) if duration is None and planned else None)
        run = _Run(self, spec, script, planned, oracle or IdentityOracle(), id_reader, params)
        run.load_why, run.settle_pinned = load_why, settle_seconds is not None
        run.factories, run.output_ids = dict(inputs or {}), dict(outputs or {})
        run.annotate = {**(annotate or {}), **run.oracle.record_callables()}  # the oracle's ones too
        result = run.execute()
        self.runs.append(result)
        return result

    def _job_files(self, script: Path, files: Sequence[str | Path] | None, py_files: Sequence[str | Path] | None,
                   stale_checkpoint: str) -> dict[str, Any]:
        """The :class:`RunSpec` fields of the job's own files and state: ``files`` and ``py_files`` as
        absolute paths (relative: beside the job, the test file, the rootdir) and ``stale_checkpoint``;
        :class:`ValueError` naming a file that is not there or a wrong choice, before anything starts."""
        check_stale_checkpoint(stale_checkpoint)
        bases = [d for d in (script.parent, self.test_dir, self.rootdir) if d is not None]
        return {"stale_checkpoint": stale_checkpoint,
                **{kind: [str(p) for p in job_files.resolve(kind, given, bases)]
                   for kind, given in (("files", files), ("py_files", py_files))}}


@dataclass
class _Wiring:
    """What :meth:`_Run._wire` builds around the job, and what of it :meth:`_Run._phases` started."""

    collector: Any
    generator: Any
    progress: SparkProgress
    watcher: CheckpointWatcher
    kafka_events: KafkaWatcher
    ctx: FaultContext
    scheduler: FaultScheduler
    started: list = field(default_factory=list)


class _Run:
    """The state of one run; :meth:`execute` is the whole life cycle."""

    #: why the job's output turned out unreadable (its sinks: console, memory, ...): the run then
    #: measures from Spark's progress alone; None: the outputs are read (or nothing is known yet)
    sink_note: str | None = None

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
        self.load_why = ""
        self.load_ended: str | None = None  #: why the load did not last its planned length (None: it did)
        self.settle_pinned = False  #: the test gave ``settle_seconds``: the drain waits for it, not for an idle query
        self.delay_choices: list[Any] = []  #: faults.timeouts.DelayClassChoice, one per timeout changed
        self.job_kafka: dict[str, tuple[str, str]] = {}  #: Kafka client timeouts the job's code sets
        n, chaos.started = chaos.started, chaos.started + 1
        self.factories: dict[str, Any] = {}
        self.output_ids: dict[str, Any] = {}
        self.annotate: dict[str, Any] = {}
        self.checkpoint_found = False
        self._sinks_judged = False
        self._checkpoint_qid: str | None = None
        self._last_status = 0.0
        self._gen: Any = None
        self._col: Any = None
        self._phase: tuple[str, float, float] = ("start", time.time(), 0.0)  # name, since, planned s
        self.local_master: str | None = None
        self._seen_down_at: float | None = None  # the drain saw the job down (exited, not restarted)
        self.dir = chaos.workdir / f"run{n}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.kafka = chaos.kafka
        self.storage = RunStorage.local(self.dir)  #: the local disk, or HDFS once execute() started it
        #: names the run's own topics (unique per run: nothing of an earlier run is ever read)
        self.tag = f"{uuid.uuid4().hex[:10]}"
        self.own_topics: list[str] = []

    # -- the life cycle ------------------------------------------------------------------------
    def execute(self) -> ChaosRun:
        s = self.spec
        if s.checkpoint == "hdfs":
            if self.c.hdfs is None:
                raise RunError("checkpoint='hdfs' needs the stack's HDFS, which this backend does not have "
                               "(the docker backend runs none): use checkpoint='local'")
            self.storage = RunStorage.on_hdfs(self.c.hdfs(), self.tag)
        self._make_topics()
        if s.kafka_port:
            self.kafka.listen(s.kafka_port)
        try:
            return self._execute()
        finally:
            if s.kafka_port:
                self.kafka.unlisten(s.kafka_port)
            for t in self.own_topics:  # the next run makes its own; keep the session's cluster small
                self._forget_topic(t)

    def _execute(self) -> ChaosRun:
        """One run inside the topics' lifetime: prepare the job, wire the observers and the fault
        scheduler around it, drive it through the phases, always clean up, then judge."""
        job = self._prepare_job()
        w = self._wire(job)
        try:
            self._phases(job, w)
        finally:
            self._cleanup(job, w)
        w.progress.poll()
        return self._verdict(job, w)

    def _prepare_job(self) -> Any:
        """Build the job (not started): its STREAMCHAOS_* contract, arguments with the run's names
        filled in, the conf the stated delay classes need, and the directories the checkpoint may be in."""
        s, storage = self.spec, self.storage
        checkpoint = storage.checkpoint
        job_dir = self.dir / "jobs" / self.script.stem  # the driver's working directory (see prepare)
        cfg = JobConfig(bootstrap_servers=self.job_bootstrap, input_topic=self.inputs[0],
                        input_topics=tuple(self.inputs), output_topic=self.out_topic or "",
                        checkpoint_dir=str(checkpoint), trigger_seconds=s.trigger_seconds,
                        side_topic=self.side_topic, transactional_id=f"streamchaos-{uuid.uuid4().hex[:12]}")
        subst = {"bootstrap_servers": self.job_bootstrap, "input_topic": self.inputs[0],
                 "output_topic": self.out_topic or "", "checkpoint_dir": str(checkpoint), "workdir": str(job_dir)}
        argv = [a.format(**subst) for a in s.args]
        self.job_kafka = kafka_timeouts(self.script)  # the Kafka link's timeouts, as the job's code sets them
        named = self._named_checkpoints(argv)
        self._no_stale_checkpoint(named)
        launcher = JobLauncher.for_cluster(self.c.cluster, self.dir / "jobs", java_home=self.c.java_home,
                                           jit=self.c.jit, progress=self.c.progress)
        # the timeouts a stated delay class needs, on the conf the launcher will pass
        conf_add = self._resolve_delay_classes({**DEFAULT_CONF, **getattr(launcher, "conf", {}), **s.conf})
        job = launcher.prepare(self.script, config=cfg, conf={**storage.conf, **s.conf, **conf_add},
                               env={**storage.env, **s.env}, args=argv, files=s.files, py_files=s.py_files)
        self.job = job
        self.warnings.extend(job.notes)
        self._check_delay_classes(job)
        self.checkpoint_roots = [storage.place(r) for r in (str(job.workdir), *storage.roots,
                                                             *paths_in([*argv, *s.conf.values()], job.workdir))]
        self.checkpoint_roots += [place for place, _ in named]  # a location hard-coded in the job's code
        return job

    def _named_checkpoints(self, argv: Sequence[str]) -> list[tuple[Any, str]]:
        """The checkpoint locations the job names where the run can see them before it starts: absolute
        literals in its code (``checkpoint_literals``) and absolute paths in its args, each as (place, where).
        A relative one lands in the driver's fresh working directory (or fresh HDFS home): never stale."""
        try:
            source = self.script.read_text(errors="replace")
        except OSError:
            source = ""
        named = [(loc, where) for loc, where in checkpoint_literals(source, self.script.name)
                 if loc.startswith(("/", "file:", "hdfs:"))]
        named += [(a, "args") for a in paths_in(argv, self.dir)]
        out = []
        for loc, where in named:
            # on HDFS storage the default filesystem is HDFS: a bare absolute path is there
            bare = "://" not in loc and not loc.startswith("file:")
            place = self.storage.place(f"{self.storage.hdfs.default_fs}{loc}" if self.storage.hdfs and bare else loc)
            if all(str(place) != str(p) for p, _ in out):
                out.append((place, where))
        return out

    def _no_stale_checkpoint(self, named: list[tuple[Any, str]]) -> None:
        """A checkpoint the job names that exists before it starts is an earlier run's: the query would
        resume from it (offsets of topics made anew, state of records this run never sent). Fail naming
        it, or (``stale_checkpoint="clear"``) delete it and say so."""
        for place, where in named:
            if not is_checkpoint(place):
                continue
            if self.spec.stale_checkpoint == "fail":
                raise RunError(f"the job's checkpoint {place} ({where}) exists from an earlier run and the query would "
                               "resume from it: delete it, or pass chaos.run(..., stale_checkpoint=\"clear\") to start "
                               "each run fresh")
            place.fs.rm(place.path, recursive=True)
            self.warnings.append(f"the job's checkpoint {place} ({where}) was left by an earlier run: deleted "
                                 "before the job started (stale_checkpoint=\"clear\")")

    def _wire(self, job: Any) -> _Wiring:
        """Build what watches and hits the job (collector, generator, progress, checkpoint watcher, fault
        scheduler; nothing started yet) and tell the run and the oracle the topics."""
        s = self.spec
        poison = PoisonSchedule()
        collector = self._collector(job.workdir)
        generator = self._generator(poison)
        progress = SparkProgress(job.event_log_dir)
        watcher = CheckpointWatcher(self.storage.place(self.storage.checkpoint))
        self.watcher = watcher
        ctx = FaultContext(cluster=self.c.cluster, kafka=self.kafka, job=job,
                           input_topic=self.inputs[0], output_topic=self.out_topic, checkpoint=watcher,
                           collector=collector, poison=poison, hdfs=self.storage.hdfs,
                           recorder=self.recorder)
        scheduler = FaultScheduler(self.planned, actions_for(ctx), self.recorder, moments_for(ctx))
        self.supervisor = DriverSupervisor(job, self.recorder.record, enabled=s.supervise,
                                           hold=scheduler.acting_on_driver)
        self.topics = {"input": self.inputs[0], "output": self.out_topic, "side": self.side_topic}
        self._gen, self._col = generator, collector  # read by _status
        if len(self.inputs) > 1 or s.inputs is not None:
            self.topics["inputs"] = list(self.inputs)
        if s.outputs is not None:
            self.topics["outputs"] = list(s.outputs)
        # the run names the topics, so the oracle learns them here unless the test set its own
        if self.oracle.topic is None and s.outputs is None:
            self.oracle.topic = self.out_topic
        if self.oracle.side_topic is None and self.side_topic is not None:
            self.oracle.side_topic = self.side_topic
        kafka_events = KafkaWatcher(self.kafka, [*self.inputs, self.out_topic], self.recorder)
        return _Wiring(collector=collector, generator=generator, progress=progress, watcher=watcher,
                       kafka_events=kafka_events, ctx=ctx,
                       scheduler=scheduler)

    def _phases(self, job: Any, w: _Wiring) -> None:
        """The run's phases in order: start, load with faults, drain. What was started is noted in
        ``w.started`` for :meth:`_cleanup`."""
        self._start_up(job, w)
        self._load_with_faults(job, w)
        w.generator.stop()
        self.phases["load_end"] = time.time()
        self.recorder.record("load_end")
        w.scheduler.stop()
        self._drain(job, w)
        self.phases["drain_end"] = time.time()
        self.recorder.record("drain_end")

    def _start_up(self, job: Any, w: _Wiring) -> None:
        """Start the collector and the job, wait for the query and its starting offsets, then start
        the load."""
        w.collector.start()
        w.started.append(w.collector)
        w.kafka_events.start()
        w.started.append(w.kafka_events)
        self.phases["start"] = time.time()
        job.start()
        self.recorder.record("job_submitted", "driver", script=self.script.name)
        # Load starts when the query runs: a backlog built up during the JVMs' start-up is
        # excluded from the baseline anyway and only makes the warm-up longer.
        self._wait_query_started(job, w.progress)
        self._check_reach(w.progress)
        self._wait_starting_offsets(job, w.progress)
        w.generator.start()
        w.started.append(w.generator)

    def _load_with_faults(self, job: Any, w: _Wiring) -> None:
        """Warm up to the steady state, then keep the load on for the run's duration while the
        scheduler injects the faults (timed from the steady state)."""
        steady = self._warm_up(job, w.collector, w.progress)
        self.phases["warmup_end"] = steady
        self.recorder.record("steady_state", "", t=steady)
        w.scheduler.start(steady)
        self._load(job, w, steady + self.spec.duration)

    def _cleanup(self, job: Any, w: _Wiring) -> None:
        """Whatever happened: stop the faults, the load if it runs, the job, and the collector if it
        was started (even when stopping the job fails)."""
        w.scheduler.stop()
        if w.generator in w.started and w.generator.running:
            w.generator.stop()
        try:
            job.stop()
        finally:
            if w.kafka_events in w.started:
                w.kafka_events.stop()
            if w.collector in w.started:
                w.collector.stop(drain_timeout=10.0)

    # -- wiring --------------------------------------------------------------------------------
    def _make_topics(self) -> None:
        """The run's topics: its own, named per run, by default; the exact names a job hard-codes when
        the test names them (deleted and created anew: nothing of an earlier run is read). The harness
        talks to the brokers directly; the job through its own links (``job_bootstrap``)."""
        s, kafka = self.spec, self.kafka
        self.bootstrap, self.job_bootstrap = kafka.bootstrap_servers, kafka.job_bootstrap_servers
        if s.inputs is None:
            self.inputs = [self._own_topic("in", s.partitions)]
        else:
            self.inputs = [kafka.create_topic(t, partitions=s.partitions) for t in s.inputs]
        self.side_topic: str | None = None
        self.out_topic: str | None = None
        fixed_out = [o for o in (s.outputs or []) if not o.startswith("file:")]
        if s.outputs is None:
            self.out_topic = self._own_topic("out", s.partitions, OUTPUT_TOPIC_CONFIG)
            self.side_topic = self._own_topic("late", 1)
            # the exactly-once sink's commit log (job.kafka_sink): it must exist before the query starts
            self.own_topics.append(kafka.create_topic(control_topic_for(self.out_topic), partitions=1))
        else:
            for t in fixed_out:
                kafka.create_topic(t, partitions=s.partitions, config=OUTPUT_TOPIC_CONFIG)
            self.out_topic = fixed_out[0] if fixed_out else None

    def _own_topic(self, role: str, partitions: int, config: dict[str, str] | None = None) -> str:
        name = self.kafka.create_topic(f"streamchaos-{self.tag}-{role}", partitions=partitions, config=config)
        self.own_topics.append(name)
        return name

    def _forget_topic(self, name: str) -> None:
        try:
            self.kafka.delete_topic(name)
        except Exception as exc:  # a broker a fault left down: the topic stays, harmless
            log.warning("could not delete the run's topic %s: %s", name, exc)

    def _collector(self, workdir: Path) -> Any:
        # an aggregate oracle reads each output's key, window and value (it carries no ids)
        opts = self.oracle.collector_options() if hasattr(self.oracle, "collector_options") else {}
        if self.spec.outputs is None:
            return Collector(self.bootstrap, [self.out_topic, self.side_topic], id_reader=self.id_reader, **opts)
        return Outputs([collector_for(name, ids, self.bootstrap, self.storage.output(name[len("file:"):], workdir)
                                      if name.startswith("file:") else None, **opts)
                        for name, ids in self.output_ids.items()])

    def _generator(self, poison: PoisonSchedule) -> Any:
        s = self.spec
        parts = []
        for i, topic in enumerate(self.inputs):
            factory = self.factories.get(topic) if s.inputs is not None else None
            parts.append(Generator(self.bootstrap, topic, s.rate, key_space=s.key_space, skew=s.skew,
                                   record_size=s.record_size, late_fraction=s.late_fraction,
                                   poison=poison if i == 0 else 0, seed=self.c.seed, record_factory=factory,
                                   annotate=self.annotate or None, what=f"inputs[{topic!r}] factory"))
        return parts[0] if len(parts) == 1 else JoinedGenerators(parts)

    @property
    def progress_only(self) -> bool:
        """True when no output of the job is readable (``outputs={}``, or its sinks turned out to be
        unreadable: :meth:`_check_sinks`): recovery comes from Spark's progress alone."""
        return self.sink_note is not None or (self.spec.outputs is not None and not self.spec.outputs)

    def _check_sinks(self, collector: Any, progress: SparkProgress) -> None:
        """From the queries' first progress, whether the collector can read what the job writes
        (:func:`~pytest_streamchaos.observe.sinks.judge`): a run without ``outputs=`` whose job writes
        only to the console, memory or ``noop`` (or a stateless ``foreach`` / ``foreachBatch`` that sent
        nothing to the output topic) goes on from Spark's progress, saying so in one line; one that
        writes files it was not told about fails, naming the ``outputs=`` to pass."""
        if self._sinks_judged or self.progress_only:
            return
        sinks = query_sinks(progress.batches, progress.writes)
        if self.spec.outputs is not None:  # the test named the outputs
            self._sinks_judged = bool(sinks)
            if sinks and all(q.kind in UNREADABLE for q in sinks):
                raise RunError(f"outputs= names {', '.join(self.spec.outputs)}, but "
                               + "; ".join(f"{q.label} writes to {q.where()}" for q in sinks)
                               + ": nothing there can be read; pass outputs={} for a run from Spark's progress")
            return
        bases = tuple(b for b in (str(self.job.workdir), self.storage.home) if b)
        verdict = judge(sinks, collector.count, time.time(), self.out_topic, bases=bases)
        if verdict.action == "refuse":
            raise RunError(verdict.message + self._columns_note(verdict.dirs))
        if verdict.action == "progress_only":
            self.sink_note = verdict.message
            # the reason is describe()'s "outputs:" line; the timeline keeps it short
            self.recorder.record("outputs_unreadable", "query", sinks=",".join(q.kind for q in sinks),
                                 first_batch_end=min(b["t_end"] for b in progress.batches))
            if self.c.progress is not None:
                self.c.progress(verdict.message)
        self._sinks_judged = verdict.action != "wait"

    def _columns_note(self, dirs: list[str]) -> str:
        """`` (columns in <dir>: a, b)`` for each directory the job wrote files to, to pick the id field
        from ("" when none can be read)."""
        notes = []
        for d in dirs:
            try:
                cols = columns_of(self.storage.output(d, self.job.workdir))
            except Exception:  # the refusal stands without the hint
                cols = []
            if cols:
                notes.append(f"columns in {d}: {', '.join(cols)}")
        return f" ({'; '.join(notes)})" if notes else ""

    def _resolve_delay_classes(self, job_conf: Mapping[str, str]) -> dict[str, str]:
        """Make every ``network_delay(above_timeout=...)`` hold by changing its link's timeout for
        this run (``faults.timeouts.resolve_delay_class``); return the Spark conf to add. What the test
        pins itself is not changed."""
        pinned = frozenset(self.spec.conf)
        conf: dict[str, str] = {}
        for p in self.planned:
            if p.spec.kind != "network_delay" or p.spec.params.get("above_timeout") is None:
                continue
            choice = resolve_delay_class(str(p.spec.target), float(p.spec.params["ms"]),
                                         p.spec.params["above_timeout"], self.c.cluster.effective_conf,
                                         {**job_conf, **conf}, pinned, self.job_kafka)
            if choice is None:
                continue
            conf.update(choice.conf)
            self.delay_choices.append(choice)
            self.recorder.record("timeout_set", choice.target, setting=choice.setting, value=choice.after,
                                 was=choice.before, reason=choice.describe())
        return conf

    def _delay_specs(self, job: Any) -> list[DelaySpec]:
        """Every network delay on a link with a failure-detection timeout, with that timeout as the job ran."""
        specs = []
        for p in self.planned:
            if p.spec.kind == "network_delay":
                to = governing_timeout(str(p.spec.target), self.c.cluster.effective_conf, job.effective_conf,
                                       self.job_kafka)
                specs.append(DelaySpec(p.label, float(p.spec.params["ms"]), p.spec.params.get("above_timeout"),
                                       to.setting, to.seconds, to.where))
        return specs

    def _check_delay_classes(self, job: Any) -> None:
        """Every stated class holds on the conf finally passed (two delays on one link that want
        opposite sides fail here, naming the setting)."""
        for p in self.planned:
            if p.spec.kind == "network_delay" and p.spec.params.get("above_timeout") is not None:
                to = governing_timeout(str(p.spec.target), self.c.cluster.effective_conf, job.effective_conf,
                                       self.job_kafka)
                check_delay_class(float(p.spec.params["ms"]), p.spec.params["above_timeout"], to,
                                  str(p.spec.target))

    def _check_user_code(self) -> None:
        """Stop the run at once when the load or the output reading stopped working: a callable of the test
        raised (the factory or an ``annotate`` / oracle callable in the generator's thread, an output id
        reader in the collector's; its :class:`~pytest_streamchaos.usercode.UserCodeError` is raised here,
        the user's traceback chained), or the generator's thread ended for another reason."""
        gen_failure = getattr(self._gen, "failure", None)
        if gen_failure is not None:
            err = self._gen.claim_failure()  # reported here: stopping the generator will not raise it again
            if isinstance(err, UserCodeError):
                raise err
            raise RunError(f"the load generator stopped: {err!r}") from err
        col_failure = getattr(self._col, "failure", None)
        if col_failure is not None:
            raise col_failure

    def _fail(self, job: Any, what: str) -> RunError:
        """The run's error: ``what`` and, when the driver has died, the exception it died of with how to
        fix a missing file (:func:`~pytest_streamchaos.spark.job_files.missing_file_hint`) on the same
        first line; the driver log's tail below."""
        cause = None if job.alive or not hasattr(job, "last_error") else job.last_error()
        if cause:
            what = f"{what}: {cause}{job_files.missing_file_hint(cause, self.script.parent, job.workdir)}"
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

    def _check_reach(self, progress: SparkProgress) -> None:
        """A job that sets ``.master("local[...]")`` in its code runs no executors on the plugin's
        cluster: a fault aimed at the cluster's JVMs cannot reach it. Fail now, saying so."""
        local = sorted({m for m in progress.masters.values() if m.startswith("local")})
        if not local:
            return
        self.local_master = local[0]
        cluster_faults = [p.label for p in self.planned if p.spec.kind in CLUSTER_FAULTS
                          or (p.spec.kind == "pause" and str(p.spec.target or "") in ("worker", "executor", "master"))
                          or str(p.spec.target or "").startswith(("worker", "master"))]
        if cluster_faults:
            raise self._fail(self.job, f"the job runs in local mode (its code sets spark.master={local[0]}, "
                                       f"which overrides the plugin's cluster), so {', '.join(cluster_faults)} "
                                       "cannot reach it: remove .master(...) from the job (spark-submit passes the "
                                       "cluster's master) or use driver faults (kill_driver, pause of the driver), "
                                       "which work in local mode")
        self.warnings.append(f"the job runs in local mode (spark.master={local[0]} in its code): its executors are "
                             "threads of the driver, not the plugin's cluster")

    def _wait_starting_offsets(self, job: Any, progress: SparkProgress) -> None:
        """Start the load only once the query has fixed its starting offsets: with Spark's default
        ``startingOffsets=latest`` everything sent before that moment is (correctly) never read, and
        would otherwise be reported as lost. Spark's Kafka connector writes them to the checkpoint's
        ``sources/``. Also finds the query's checkpoint."""
        deadline = time.time() + min(30.0, self.spec.warmup_timeout)
        while time.time() < deadline:
            progress.poll()
            self._find_checkpoint(progress)
            if self._offsets_fixed():
                self.recorder.record("starting_offsets_fixed", "query")
                return
            if not job.alive:
                raise self._fail(job, f"the job exited (code {job.returncode}) before its query read any offsets")
            time.sleep(POLL_S)
        self.warnings.append("the query did not report its starting offsets within 30 s after it started; the load "
                             "began anyway (with startingOffsets=latest, records sent before the query fixed its "
                             "offsets would count as lost)")

    def _offsets_fixed(self) -> bool:
        """Spark's Kafka source writes the offsets it starts from to the checkpoint (``sources/0/0``)
        before its first micro-batch is planned."""
        return self.watcher.starting_offsets_written()

    def _find_checkpoint(self, progress: SparkProgress) -> None:
        """Point the watcher at the latest started query's checkpoint, wherever the job put it (a
        restarted driver of a job without a checkpoint location starts a new query elsewhere)."""
        ids = [e.detail.get("id") for e in progress.timeline if e.kind == "query_started"]
        if not ids or ids[-1] == self._checkpoint_qid:
            return
        found = find_checkpoints(self.checkpoint_roots)
        if ids[-1] in found:
            self.watcher.point_at(found[ids[-1]])
            self._checkpoint_qid = ids[-1]
            self.checkpoint_found = True
            if "warmup_end" not in self.phases:
                self._check_fresh(progress, found[ids[-1]])

    def _check_fresh(self, progress: SparkProgress, place: Any = None) -> None:
        """Before the faults (no restart yet): a query that resumed from an earlier run's checkpoint the
        run could not see beforehand (a path the job computes) fails the run, naming it
        (:func:`resumed_from_earlier`)."""
        made = place.child("metadata").mtime() if place is not None else None
        how = resumed_from_earlier(progress.batches, made, self.phases["start"])
        if how is None:
            return
        where = str(place) if place is not None else (self.watcher.checkpoint_dir if self.checkpoint_found
                                                       else "its checkpoint (not found)")
        raise self._fail(self.job, f"the query resumed from a checkpoint an earlier run left ({where}: {how}); the run "
                                   "could not see it before the job started (its path is computed in the code): delete "
                                   "it, or give the job a fresh path per run (args=[\"{checkpoint_dir}\"])")

    def _first_output(self, collector: Any, progress: SparkProgress) -> float | None:
        """When output first showed: the first collected output, or (progress only) the end of the
        first micro-batch that processed input."""
        if self.progress_only:
            ends = [b["t_end"] for b in progress.batches if (b.get("numInputRows") or 0) > 0]
            return ends[0] if ends else None
        return (collector.last_arrival or time.time()) if collector.count > 0 else None

    def _warm_up(self, job: Any, collector: Any, progress: SparkProgress) -> float:
        """Wait for output, then for :data:`STEADY_BATCHES` stable micro-batches without backlog; return that time."""
        s = self.spec
        deadline = time.time() + s.warmup_timeout
        first_output = None
        while time.time() < deadline:
            progress.poll()
            self._find_checkpoint(progress)
            self._check_user_code()
            if not job.alive:
                raise self._fail(job, f"the job exited (code {job.returncode}) before reaching steady state")
            if collector.errors and collector.count == 0 and not self.progress_only:
                raise self._fail(job, f"the collector failed: {collector.errors[-1]}")
            self._check_sinks(collector, progress)
            if first_output is None:
                first_output = self._first_output(collector, progress)
                if first_output is not None:
                    self.recorder.record("first_output", "", t=first_output)
            self._check_fresh(progress)
            if first_output is not None and self._stable(progress.batches):
                return time.time()
            self._status("warm-up", s.warmup_timeout)
            time.sleep(POLL_S)
        if first_output is None:
            where = "in Spark's progress" if self.progress_only else f"in {self._output_names()}"
            queries = query_sinks(progress.batches, progress.writes)
            sinks = "; ".join(f"{q.label} writes to {q.where()}" for q in queries)
            raise self._fail(job, f"no output within warmup_timeout={s.warmup_timeout:g}s (awaited the first "
                                  f"output {where}; Spark reported {len(progress.batches)} micro-batches"
                                  + (f"; {sinks}" if sinks else "") + ")")
        self.warnings.append(f"micro-batches were not stable within warmup_timeout={s.warmup_timeout:g}s; "
                             "the baseline may include startup backlog")
        return time.time()

    def _output_names(self) -> str:
        return ", ".join(self.spec.outputs) if self.spec.outputs else f"the output topic {self.out_topic}"

    def _stable(self, batches: list[dict[str, Any]]) -> bool:
        """:data:`STEADY_BATCHES` recent batches with input, similar durations, and no more input than
        the rate brings."""
        recent = [b for b in batches[-6:] if (b.get("numInputRows") or 0) > 0][-STEADY_BATCHES:]
        if len(recent) < STEADY_BATCHES:
            return False
        dur = np.array([(b.get("durationMs") or {}).get("triggerExecution", 0) / 1000.0 for b in recent])
        if dur.max() > 2.0 * max(dur.min(), self.spec.trigger_seconds / 2):
            return False
        interval = max(recent[-1]["t_start"] - recent[-2]["t_start"], self.spec.trigger_seconds)
        return recent[-1]["numInputRows"] <= 2.0 * self.spec.rate * interval + 10

    def _load(self, job: Any, w: _Wiring, planned_until: float) -> None:
        """Keep the load on until ``planned_until``. A run without a ``duration`` goes on past it
        while its faults heal later than planned (:meth:`_load_end`), and ends as soon as every
        fault has recovered for good (:meth:`_recovered_for_good`)."""
        progress, next_check = w.progress, 0.0
        while time.time() < self._load_end(w, planned_until):
            progress.poll()
            self._check_user_code()
            if self.spec.end_on_recovery and time.time() >= next_check and w.scheduler.done():
                next_check = time.time() + RECOVERY_CHECK_S
                if self._recovered_for_good(w):
                    return
            self.supervisor.check()  # an exit is a finding; supervised, the driver comes back
            self._status("load", self.spec.duration)
            time.sleep(POLL_S)

    @property
    def aim_slack(self) -> float:
        """How much longer than planned an aimed fault may wait for its moment: the longest
        ``timeout`` of the run's aimed faults (0 without)."""
        return max((p.spec.timeout for p in self.planned if p.at is None), default=0.0)

    def _load_end(self, w: _Wiring, planned_until: float) -> float:
        """When the load ends (:func:`~pytest_streamchaos.faults.timeline.load_end`: a run without a
        ``duration`` counts its recovery window from the actual last heal, and waits for an aimed
        fault still looking for its moment); says so once it has run a second past the plan."""
        window = self.spec.recovery_window
        end = load_end(planned_until, window, w.scheduler.last_heal_due() if window else None, self.aim_slack)
        if window is not None and self.load_ended is None and time.time() >= planned_until + 1.0:
            self.load_ended = ("extended past the plan: the faults healed later than planned (a fault aimed at a "
                               "moment fires when it comes, or gives up after its timeout), and the recovery window "
                               f"of {window:g}s counts from the actual last heal")
        return end

    def _recovered_for_good(self, w: _Wiring) -> bool:
        """Whether the verdict on the run so far settles every fault's recovery point
        (:func:`~pytest_streamchaos.analysis.metrics.recovery_settled`): then more load would not
        change it, and the load ends. The same analysis as the final verdict, on what was seen so far;
        if it fails the load runs its planned length."""
        t = time.time()
        try:
            trace = self._trace(w)
            metrics = ChaosRun.from_trace(trace, self.oracle, self.spec.guarantee, self.params,
                                          per_record=not self.progress_only).metrics
        except Exception as exc:  # the verdict at the end will say what is wrong; here only the length is at stake
            self.spec.end_on_recovery = False
            self.warnings.append(f"the load ran its planned length: judging recovery mid-run failed ({exc})")
            return False
        if not recovery_settled(metrics, trace.timeline):
            return False
        self.recorder.record("load_ended_on_recovery", "", t=t,
                             recovery_time=[round(float(f.recovery_time), 3) for f in metrics.faults],
                             masked=[f.output_symptom is None for f in metrics.faults])
        extended = f"{self.load_ended}; then " if self.load_ended else ""
        self.load_ended = extended + ("ended early: every fault had recovered (or, noticed by the system, left no "
                                      "sign in the output) and more load could not change its recovery time")
        return True

    def _drain(self, job: Any, w: _Wiring) -> None:
        """Until the job has committed every input offset (it caught up), then until the outputs
        settle (no new output for ``settle_seconds``, every acknowledged id came out, or -- unless the
        test gave ``settle_seconds`` -- the query idle, :meth:`_query_idle`). A job that
        has exited by now stays down (the faults are healed: no restart is coming), so its outputs
        only need to settle: waiting out the drain timeout for it would change nothing but the time."""
        s, collector, progress, generator, watcher = self.spec, w.collector, w.progress, w.generator, w.watcher
        deadline = time.time() + s.drain_timeout
        ends = {t: input_end_offsets(self.bootstrap, t) for t in self.inputs}
        caught_up_at = None
        while time.time() < deadline:
            progress.poll()
            self._check_user_code()
            self._find_checkpoint(progress)
            if caught_up_at is None and all(committed_past(watcher, t, e) for t, e in ends.items()):
                caught_up_at = time.time()
                self.recorder.record("caught_up", "", t=caught_up_at)
            self.supervisor.check()
            if (caught_up_at is None and not job.alive and not self.supervisor.will_restart()
                    and self._settled_after_exit(job, collector, progress)):
                self.warnings.append(f"the job had exited (code {job.returncode}) before it caught up, and nothing "
                                     "restarts it after the load: inputs it did not output are reported as lost")
                return
            if caught_up_at is not None:
                if (isinstance(collector, Collector) and isinstance(self.oracle, IdentityOracle)
                        and self.oracle.filter is None and collector.ids_seen >= generator.acked):
                    return
                last = max(self._last_output(collector, progress) or 0.0, caught_up_at)
                if time.time() - last > s.settle_seconds:
                    return
                if not self.settle_pinned and self._query_idle(progress, caught_up_at):
                    return
            self._status("drain", s.drain_timeout)
            time.sleep(POLL_S)
        what = "the outputs to settle" if caught_up_at else f"the job to commit the input's end offsets {ends}"
        if not self.checkpoint_found:
            what += " (the query's checkpoint was not found: pass its path in args or conf)"
        self.warnings.append(f"drain_timeout={s.drain_timeout:g}s passed while waiting for {what}; "
                             "inputs still in flight then are reported as lost")

    def _query_idle(self, progress: SparkProgress, caught_up_at: float) -> bool:
        """The job has committed every input and then run no micro-batch for two triggers (at least
        1 s): it has nothing left to write. A sink writes a batch's output before Spark commits the
        batch, and a stateful query emits what the watermark finalises in a no-data batch right after
        the last data batch; what was written is read to the output's end offsets when the collector
        stops. A job whose output comes later (an asynchronous sink) needs ``settle_seconds`` given."""
        last_batch_end = max((b["t_end"] for b in progress.batches), default=0.0)
        return time.time() - max(caught_up_at, last_batch_end) >= max(1.0, 2 * self.spec.trigger_seconds)

    def _settled_after_exit(self, job: Any, collector: Any, progress: SparkProgress) -> bool:
        """The job is down and no output came for ``settle_seconds`` (counted from when it was first
        seen down, so that output still in flight when it died is read)."""
        now = time.time()
        if self._seen_down_at is None:
            self._seen_down_at = now
        last = max(self._last_output(collector, progress) or 0.0, self._seen_down_at)
        return now - last > self.spec.settle_seconds

    def _status(self, phase: str, planned: float) -> None:
        """Tell ``Chaos.status`` (at most once a second) how the run goes: ``phase``, ``elapsed`` in
        it and its ``planned`` length (a timeout for warm-up and drain), records ``sent`` (acked),
        ``outputs`` read, ``backlog`` (sent ids not yet seen in the output) and ``faults`` injected."""
        now = time.time()
        if self._phase[0] != phase:
            self._phase = (phase, now, planned)
        if self.c.status is None or now - self._last_status < 1.0:
            return
        self._last_status = now
        sent, col = getattr(self._gen, "acked", 0), self._col
        fields = {"phase": phase, "elapsed": now - self._phase[1], "planned": planned, "sent": sent,
                  "outputs": getattr(col, "count", 0), "backlog": max(0, sent - getattr(col, "ids_seen", 0)),
                  "faults": sum(e.kind == "fault_injected" for e in self.recorder.events())}
        try:
            self.c.status(fields)
        except Exception:  # a display problem must never fail the run
            log.exception("status callback failed")

    def _last_output(self, collector: Any, progress: SparkProgress) -> float | None:
        if self.progress_only:
            ends = [b["t_end"] for b in progress.batches if (b.get("numInputRows") or 0) > 0]
            return ends[-1] if ends else None
        return collector.last_arrival

    # -- verdict -------------------------------------------------------------------------------
    def _observer(self, generator: Any, collector: Any, trace: Trace) -> dict[str, Any]:
        """Whether the network faults spared the harness: their scope and the harness clients' round
        trips during them against the baseline (a disturbed client becomes a warning)."""
        injected = [e.detail for e in trace.timeline if e.kind == "fault_injected" and "scope" in e.detail]
        # "namespace": in the job's containers (docker backend), which the harness is never in
        unscoped = [d.get("scope_reason") for d in injected if d["scope"] not in ("job", "namespace")]
        report = observer_report(_client_samples(generator, collector), trace.timeline,
                                 self.phases.get("warmup_end"), self.phases.get("load_end", time.time()),
                                 scope="all" if unscoped else "job", scope_reason=unscoped[0] if unscoped else None)
        for name, why in report["disturbed"].items():
            self.warnings.append(f"the harness's {name} was disturbed during the network faults ({why}): "
                                 "latency and downtime may include the observer's own delay")
        return report

    def _trace(self, w: _Wiring) -> Trace:
        """What the run recorded so far, as the analysis takes it."""
        sent = w.generator.sent()
        # nothing readable: outputs estimated from Spark's progress, for the recovery metrics only
        outputs = (outputs_from_progress(sent, w.progress.batches, len(self.inputs), self.inputs[0])
                   if self.progress_only else w.collector.outputs())
        events: list[TimelineEvent] = [*self.recorder.events(), *self.job.timeline, *w.progress.timeline]
        return Trace(sent=sent, outputs=outputs, batches=list(w.progress.batches), timeline=events,
                     phases=dict(self.phases), trigger_seconds=self.spec.trigger_seconds)

    def _verdict(self, job: Any, w: _Wiring) -> ChaosRun:
        generator, collector, scheduler, ctx = w.generator, w.collector, w.scheduler, w.ctx
        trace = self._trace(w)
        if collector.lost_to_retention:
            self.warnings.append(
                f"{collector.lost_to_retention} outputs were deleted by the broker before the collector read them "
                "(retention): their ids count as lost. Check the output topic's retention settings")
        run = ChaosRun.from_trace(trace, self.oracle, self.spec.guarantee, self.params,
                                  per_record=not self.progress_only)
        run.meta.update({
            "test": self.c.nodeid,
            "seed": self.c.seed,
            "run": self.spec.__dict__,
            "faults": [p.label for p in self.planned],
            "fault_errors": scheduler.errors,
            "topics": self.topics,
            "spark_conf": job.effective_conf,
            "cluster_conf": dict(self.c.cluster.effective_conf),
            "generator": generator.stats(),
            "collector": {"count": collector.count, "malformed": collector.malformed,
                          "lost_to_retention": collector.lost_to_retention,
                          "retention_gaps": collector.retention_gaps, "errors": collector.errors[-20:]},
            "poisoned_ids": ctx.poison.poisoned if ctx.poison else [],
            "driver_launches": len(getattr(job, "launches", [])),
            "driver_restarts_by_supervisor": self.supervisor.restarts,
            "job_log": str(getattr(job, "log_path", "")),
            "warnings": self.warnings,
            "checkpoint": self.watcher.checkpoint_dir if self.checkpoint_found else None,
            "checkpoint_storage": self.storage.kind,
            "job_args": self.job.argv[self.job.argv.index(str(self.script)) + 1:],
            "job_workdir": str(self.job.workdir),
            "spark_master_used": self.local_master or self.c.cluster.master_url,
            "load": {"planned_s": self.spec.duration, "why": self.load_why, "ended": self.load_ended,
                     "ran_s": round(self.phases.get("load_end", 0.0) - self.phases.get("warmup_end", 0.0), 3)},
            "delay_class": [c.to_dict() | {"note": c.describe()} for c in self.delay_choices],
            "delay_outcomes": delay_outcomes(trace.timeline, self._delay_specs(job)),
            "observer": self._observer(generator, collector, trace),
            "sinks": [q.to_dict() for q in query_sinks(w.progress.batches, w.progress.writes)],
            "sink_note": self.sink_note,
            "exactly_once": None if self.progress_only else exactly_once_check(
                getattr(collector, "transaction_markers", {})),
            "kafka_conf": dict(getattr(self.kafka, "effective_conf", {})),
        })
        return run


def _client_samples(generator: Any, collector: Any) -> dict[str, list]:
    """The harness clients' statistics samples by client name (several inputs: one per generator)."""
    gens = getattr(generator, "parts", [generator])
    out = {}
    for i, g in enumerate(gens):
        if getattr(g, "client_stats", None) is not None:
            out["generator" if len(gens) == 1 else f"generator-{i}"] = g.client_stats.samples()
    if getattr(collector, "client_stats", None) is not None:
        out["collector"] = collector.client_stats.samples()
    return out


def resumed_from_earlier(batches: Sequence[Mapping[str, Any]], checkpoint_made: float | None,
                         started: float) -> str | None:
    """How a query shows it resumed from a checkpoint that existed before the job started at ``started``
    (None: it did not): the checkpoint's ``metadata`` was written before (a second of slack), or the
    first micro-batch reported of a query is not batch 0 (a fresh query's first progress is batch 0).
    Only meaningful before any driver restart."""
    if checkpoint_made is not None and checkpoint_made < started - 1.0:
        return "it was written before the job started"
    first: dict[str, int] = {}
    for b in batches:
        first.setdefault(str(b.get("id")), int(b.get("batchId") or 0))
    resumed = [n for n in first.values() if n > 0]
    return f"its first micro-batch was batch {resumed[0]}" if resumed else None


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
