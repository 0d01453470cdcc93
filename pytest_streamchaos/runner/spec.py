"""What one ``chaos.run`` asks for, checked in one place before anything starts.

:func:`build_run` checks every argument (:func:`check_run_args`, :func:`check_stale_checkpoint`,
the job's path and files, the fault timeline against ``duration``) and returns the run's
:class:`RunSpec` (plain values, kept in the run's JSON) and :class:`RunInputs` (the test's
callables, the job script and the fault plan), both built by keyword and never changed after.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_streamchaos import storages
from pytest_streamchaos.analysis.judge import Compared, Plan
from pytest_streamchaos.analysis.metrics import MetricParams
from pytest_streamchaos.analysis.oracle import IdentityOracle, Oracle
from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.analysis.spelling import did_you_mean
from pytest_streamchaos.faults.registry import check_run, check_stack, check_storages, kind_of
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import load_seconds, plan, recovery_window
from pytest_streamchaos.observe.output_names import (
    OutputKind,
    check_path_output,
    check_relative_output,
    output_kind,
    output_path,
)
from pytest_streamchaos.observe.outputs import IdSpec, NoIds
from pytest_streamchaos.runner.arguments import check_arguments
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.groups import JobSetup, Load, Timing, Watch
from pytest_streamchaos.spark import job_files, realtime, s3a
from pytest_streamchaos.spark.job_code import job_sources
from pytest_streamchaos.spark.realtime import RealTime
from pytest_streamchaos.usercode import FACTORY, OUTPUT, RECORD, annotation_label, check_arity

if TYPE_CHECKING:
    from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster

GUARANTEES = ("exactly-once", "at-least-once", "at-most-once")
#: what a run does with a checkpoint the job names that exists before it starts (``chaos.run(stale_checkpoint=...)``)
STALE_CHECKPOINT = ("fail", "clear")
#: placeholders a job's ``args`` may use
PLACEHOLDERS = ("bootstrap_servers", "input_topic", "output_topic", "checkpoint_dir", "workdir")


@dataclass(frozen=True, kw_only=True)
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
    #: where the run's checkpoint is: a name of :data:`pytest_streamchaos.storages.STORAGES`
    checkpoint: str = storages.DEFAULT
    files: list[str] = field(default_factory=list)  #: the job's data files (absolute), as ``--files``
    py_files: list[str] = field(default_factory=list)  #: the job's Python files (absolute), as ``--py-files``
    stale_checkpoint: str = "fail"  #: a checkpoint of an earlier run the job names: ``fail`` or ``clear``
    deploy_mode: str = "client"  #: spark-submit's deploy mode: ``client`` or (YARN, Kubernetes) ``cluster``
    #: no ``duration`` given and faults planned: the load keeps on at least this long after the last
    #: fault actually healed (an aimed fault can fire later than planned); None: the duration given
    recovery_window: float | None = None
    #: the load may end once every fault has recovered (whether ``recovery_window`` is set; the load
    #: phase turns it off for itself if judging fails)
    end_on_recovery: bool = False
    #: a run of ``@explore``'s search (a schedule's or the control run): its ``duration`` is an upper bound,
    #: the load ends once the schedule played out and recovered for good (docs/explore.md)
    explored: bool = False
    #: read every output's rows when the run ends (a reference run's, or a run compared with one)
    capture_rows: bool = False
    #: send exactly this many records on each input (by position), the load lasting until they are sent;
    #: None: as many as the rate gives until the load ends
    input_counts: tuple[int, ...] | None = None
    #: fixed event times on a shared clock: record ``n``'s is ``event_origin + (n + 1) / rate`` (None: the
    #: time it was scheduled)
    event_origin: float | None = None
    #: send this many times faster than ``rate``, the event times staying on the rate's clock (the second
    #: reference run's: the same records split into other micro-batches than the first's)
    send_pace: float = 1.0
    #: the job's query runs in real-time mode (``trigger(realTime=...)`` in its script:
    #: :mod:`pytest_streamchaos.spark.realtime`)
    real_time: bool = False
    #: its interval (s), the checkpoint interval, when the script says it literally (else read off the batches)
    real_time_interval: float | None = None


@dataclass(frozen=True, kw_only=True)
class RunInputs:
    """What a run takes from the test beyond plain values: the job script, the fault plan, the
    callables (oracle, id readers, record factories, annotations) and the metric parameters."""

    script: Path
    planned: list
    load_why: str  #: why the load lasts what it does (``faults.timeline.load_seconds``)
    settle_pinned: bool  #: the test gave ``settle_seconds``: the drain waits for it, not for an idle query
    oracle: Oracle
    id_reader: str | Callable[[bytes, bytes | None], list[int]] | None
    params: MetricParams | None
    factories: dict[str, Any]  #: input topic -> record factory (None: the built-in records)
    output_ids: dict[str, IdSpec]  #: output name -> how input ids are read there
    annotate: dict[str, Callable[[Any], float]]  #: the test's annotations and the oracle's per-record callables
    real_time: RealTime | None = None  #: the job's real-time trigger, as its script shows it
    #: how the run is compared with its reference run (its columns are checked before the load: warm-up)
    reference: Reference | None = None
    #: the ``s3a://`` paths the job names (its code, args, conf, outputs), each with where: the store they need
    urls: tuple[tuple[str, str], ...] = ()


def judged_by(spec: RunSpec, inputs: RunInputs, compared: Compared | None = None) -> Plan:
    """What a run is judged by (:func:`~pytest_streamchaos.analysis.judge.judge`): its oracle, declared guarantee
    and metric parameters, what a job in real-time mode promises, the reference it is ``compared`` with."""
    return Plan(oracle=inputs.oracle, guarantee=spec.guarantee, params=inputs.params, real_time=spec.real_time,
                real_time_interval=spec.real_time_interval, compared=compared)


@dataclass(frozen=True, kw_only=True)
class JobPlace:
    """Where a run looks for the job and its files: the test file's directory and the rootdir."""

    test_dir: Path | None = None
    rootdir: Path | None = None


@dataclass(frozen=True, kw_only=True)
class RunGroups:
    """``chaos.run``'s arguments, each group complete (its flat arguments folded in)."""

    load: Load
    watch: Watch
    setup: JobSetup
    timing: Timing


def build_run(job: str | Path, *, place: JobPlace, faults: Sequence[FaultSpec], groups: RunGroups, guarantee: str,
              default_checkpoint: str, explored: bool = False,
              stack: tuple[SparkCluster, KafkaCluster] | None = None) -> tuple[RunSpec, RunInputs]:
    """Check every argument of ``chaos.run`` (ValueError / RunError naming it, before anything
    starts) and build the run's spec and inputs (``default_checkpoint``: the session's ``--chaos-checkpoint``;
    ``explored``: a run of ``@explore``'s search; ``stack``: the session's clusters, whose capabilities the
    faults need)."""
    load, watch, setup, t = groups.load, groups.watch, groups.setup, groups.timing
    checkpoint = setup.checkpoint or default_checkpoint
    check_arguments(load, watch, setup, t)  # the names and numbers that need no running job
    check_run_args(guarantee, load.rate, load.duration, setup.args, load.inputs, checkpoint, annotate=watch.annotate,
                   outputs=watch.outputs, id_reader=watch.id_reader, oracle=watch.oracle)
    if setup.deploy_mode not in ("client", "cluster"):
        meant = did_you_mean(str(setup.deploy_mode), ("client", "cluster"))
        raise ValueError(f"JobSetup(deploy_mode={setup.deploy_mode!r}){meant}: use 'client' (the driver on this host) "
                         "or 'cluster' (on YARN the driver is the ApplicationMaster, on Kubernetes a Job's pod)")
    check_run(faults, checkpoint=checkpoint, partitions=load.partitions,  # a fault this run cannot have
              deploy_mode=setup.deploy_mode)
    if stack is not None:
        check_stack(faults, *stack)  # ... or these clusters cannot serve
    script = resolve_job(job, place.test_dir, place.rootdir)
    real_time = checked_real_time(script)
    planned = plan(list(faults))
    least = max((kind_of(p.spec).least_recovery_window for p in planned), default=0.0)
    load_s, load_why = load_seconds(planned, load.duration, t.trigger_seconds, least)
    check_stale_checkpoint(setup.stale_checkpoint)
    for name in watch.outputs or ():
        check_relative_output(name, deploy_mode=setup.deploy_mode, on_host=storages.get(checkpoint).on_host)
    bases = [d for d in (script.parent, place.test_dir, place.rootdir) if d is not None]
    own = {kind: [str(p) for p in job_files.resolve(kind, given, bases)]
           for kind, given in (("files", setup.files), ("py_files", setup.py_files))}
    urls = checked_urls(script, own["py_files"], setup, watch.outputs)
    check_storages(faults, storages.reached(checkpoint, [u for u, _ in urls]))  # a fault on a store the run has not
    window = recovery_window(t.trigger_seconds, least) if load.duration is None and planned else None
    spec = RunSpec(
        job=str(script), rate=load.rate, duration=load_s, guarantee=guarantee, partitions=load.partitions,
        key_space=load.key_space, skew=load.skew, record_size=load.record_size, late_fraction=load.late_fraction,
        trigger_seconds=t.trigger_seconds, warmup_timeout=t.warmup_timeout, drain_timeout=t.drain_timeout,
        settle_seconds=t.settle_seconds if t.settle_seconds is not None else max(5.0, 4 * t.trigger_seconds),
        conf={k: str(v) for k, v in (setup.conf or {}).items()}, env={k: str(v) for k, v in (setup.env or {}).items()},
        args=[str(a) for a in (setup.args or [])], inputs=None if load.inputs is None else list(load.inputs),
        outputs=None if watch.outputs is None else list(watch.outputs), kafka_port=setup.kafka_port,
        supervise=setup.supervise, checkpoint=checkpoint, files=own["files"], py_files=own["py_files"],
        stale_checkpoint=setup.stale_checkpoint, recovery_window=window, end_on_recovery=window is not None or explored,
        deploy_mode=setup.deploy_mode, explored=explored, real_time=real_time is not None,
        real_time_interval=real_time.interval if real_time else None)
    oracle = watch.oracle or IdentityOracle()
    run_inputs = RunInputs(
        script=script, planned=planned, load_why=load_why, settle_pinned=t.settle_seconds is not None,
        oracle=oracle, id_reader=watch.id_reader, params=watch.params, factories=dict(load.inputs or {}),
        output_ids=dict(watch.outputs or {}),
        annotate={**(watch.annotate or {}), **oracle.record_callables()},  # the oracle's ones too
        real_time=real_time, urls=urls)
    return spec, run_inputs


def checked_urls(script: Path, py_files: Sequence[str], setup: JobSetup,
                 outputs: Mapping[str, Any] | Sequence[str] | None) -> tuple[tuple[str, str], ...]:
    """The ``s3a://`` paths the job names (:func:`pytest_streamchaos.spark.s3a.find`); a :class:`RunError` in one line
    when the stack's object store cannot serve them (a bucket name S3 refuses, an endpoint of the job's own)."""
    sources = job_sources(script, [Path(p) for p in py_files])
    conf = {k: str(v) for k, v in (setup.conf or {}).items()}
    use = s3a.find(sources, conf, [str(a) for a in setup.args or []], list(outputs or []))
    why = s3a.refusal(use, sources, conf)
    if why:
        raise RunError(why)
    return use.urls


def checked_real_time(script: Path) -> RealTime | None:
    """The job's real-time trigger (:func:`~pytest_streamchaos.spark.realtime.find`); a :class:`RunError` in one
    line when the installed Spark or the query's sink cannot run it."""
    import pyspark

    found = realtime.find(script)
    why = realtime.refusal(found, spark_version=pyspark.__version__) if found is not None else None
    if why:
        raise RunError(why)
    return found


def check_args(args: Sequence[Any] | None) -> None:
    """Fail now, naming the placeholder, when ``args`` uses one the run does not substitute."""
    for a in args or []:
        for _, name, _, _ in string.Formatter().parse(str(a)):
            if name is not None and name not in PLACEHOLDERS:
                names = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                raise ValueError(f"args: {{{name}}} in {a!r} is not a placeholder the run fills"
                                 f"{did_you_mean(name, PLACEHOLDERS, '{{{}}}')}; use {names} "
                                 "(write {{ }} for a literal brace)")


def check_run_args(guarantee: str, rate: float, duration: float | None, args: Sequence[Any] | None,
                   inputs: Mapping[str, Any] | None, checkpoint: str, *,
                   annotate: Mapping[str, Any] | None = None, outputs: Mapping[str, Any] | None = None,
                   id_reader: Any = None, oracle: Oracle | None = None) -> None:
    """Fail now, naming the argument and what is allowed, when ``chaos.run``'s arguments cannot work."""
    if guarantee not in GUARANTEES:
        raise ValueError(f"guarantee={guarantee!r}{did_you_mean(str(guarantee), GUARANTEES)}: use one of "
                         f"{', '.join(map(repr, GUARANTEES))}")
    if rate <= 0 or (duration is not None and duration <= 0):
        raise ValueError(f"rate={rate!r} and duration={duration!r} must be > 0")
    check_args(args)
    if inputs is not None and not inputs:
        raise ValueError("inputs={} names no topic: give {topic: record_factory or None}, or omit it")
    check_checkpoint(checkpoint)
    check_callables(inputs, annotate, outputs, id_reader, oracle)
    check_outputs(outputs, checkpoint)


def check_outputs(outputs: Mapping[str, Any] | None, checkpoint: str) -> None:
    """Every ``file:`` / ``delta:`` output names a path and how ids are read from it
    (:func:`~pytest_streamchaos.observe.outputs.check_path_output`); a Delta table is read on the local disk or on
    a storage whose tables the run reads (the object store: ``delta:s3a://...``)."""
    storage = storages.get(checkpoint)
    for name, ids in (outputs or {}).items():
        if output_kind(name) == OutputKind.KAFKA:
            continue
        check_path_output(name, ids)
        path = output_path(name) or ""
        on = storages.of_scheme(path.split("://", 1)[0]) if "://" in path else (None if not storage.default_fs
                                                                                 else storage)
        if output_kind(name) == OutputKind.DELTA and on is not None and not (on.tables or on.on_host):
            readable = [e.name for e in storages.STORAGES.values() if e.tables or e.on_host]
            raise ValueError(f"outputs={{{name!r}: ...}}: a Delta table on {on.title} cannot be read by the run (with "
                             f"checkpoint={checkpoint!r} the job's relative paths are there too): keep the table on "
                             f"{' or '.join(map(repr, readable))} storage, e.g. checkpoint={storages.DEFAULT!r}")


def check_checkpoint(checkpoint: str) -> None:
    """Fail now, naming the choices (:func:`pytest_streamchaos.storages.choices_help`), when ``checkpoint`` names
    no storage."""
    storages.get(checkpoint)


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
        if not (ids is None or isinstance(ids, str | NoIds)):
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
