"""The grouped arguments of ``chaos.run``: ``load=Load(...)``, ``watch=Watch(...)``, ``setup=JobSetup(...)``
and ``timing=Timing(...)``.

``chaos.run`` keeps flat only what a test of a job says first: ``rate``, ``duration``, ``guarantee``,
``oracle``, and for a job written without this plugin in mind ``inputs``, ``outputs`` and ``kafka_port``.
Everything else is in the group it belongs to; an argument given flat that lives in a group fails at
once naming the group (``args=`` -> ``setup=JobSetup(args=...)``), a misspelt one with a did-you-mean.
The flat arguments and the groups mix (``rate=100, load=Load(partitions=4)``); a field given both flat
and in its group (``load=Load(rate=50)`` and ``rate=``) is a :class:`ValueError` naming it: which one
would win is not obvious.
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

from pytest_streamchaos.analysis.metrics import MetricParams
from pytest_streamchaos.analysis.oracle import Oracle
from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.analysis.spelling import spelled
from pytest_streamchaos.deprecation import MOVED
from pytest_streamchaos.observe.outputs import NO_IDS, IdSpec


@spelled
@dataclass(frozen=True, kw_only=True)
class Load:
    """What the generator sends: ``rate`` records/s for ``duration`` s of load after steady state
    (None: the fault timeline plus a recovery window), to ``inputs`` (each topic the job reads with its
    record factory, None: the built-in records; several topics get the same ids, as a join needs; None:
    the run's own input topic), into ``partitions`` per input topic, over ``key_space`` keys with Zipf
    ``skew``, ``record_size`` bytes, ``late_fraction`` of late records."""

    rate: float = 200.0
    duration: float | None = None
    inputs: Mapping[str, Callable[[Any], Any] | None] | None = None
    partitions: int = 2
    key_space: int = 100
    skew: float = 0.0
    record_size: int = 100
    late_fraction: float = 0.0


@spelled
@dataclass(frozen=True, kw_only=True)
class Watch:
    """How the run reads and judges the job's output.

    ``outputs`` maps each place the job writes (a Kafka topic, or ``"file:<path>"`` for a file-sink
    directory, relative to the driver's working directory) to how input ids are read there (``"key"``,
    a JSON field path, or a callable ``(value, key) -> ids``); a list of places whose rows carry no input
    ids (an aggregate, a table written by MERGE): their rows are compared with a reference run's
    (``chaos.run(..., reference=True)``) and recovery comes from Spark's progress; ``{}`` when nothing is
    readable (console, noop): the run then reports recovery from Spark's query progress only; None: the
    run's own output topic. ``oracle`` says which input ids each output must carry (None: identity). ``id_reader`` reads
    the ids from the run's own output topic. ``annotate``: ``{name: fn(record) -> number}`` on each
    record the factory made, as it is sent (an aggregate's amount, an ``explode``'s copies); a callable
    that raises stops the run (:mod:`pytest_streamchaos.usercode`). ``params``: the metric parameters
    (band, hold, bucket: :class:`~pytest_streamchaos.analysis.metrics.MetricParams`). ``reference``: also run
    the job on the same input without faults and compare the outputs with it by key (``True``, or
    :class:`~pytest_streamchaos.analysis.reference.Reference` naming key columns and columns to leave out;
    docs/reference.md)."""

    #: a list given is kept as ``{place: NO_IDS}`` (:meth:`__post_init__`)
    outputs: Mapping[str, IdSpec] | None = None
    oracle: Oracle | None = None
    id_reader: str | Callable[[bytes, bytes | None], list[int]] | None = None
    annotate: Mapping[str, Callable[[Any], float]] | None = None
    params: MetricParams | None = None
    reference: bool | Reference | None = None

    def __post_init__(self) -> None:
        Reference.of(self.reference)  # a wrong one fails here, naming the fix
        outs = self.outputs
        if outs is None or isinstance(outs, Mapping):
            return
        if isinstance(outs, str) or not all(isinstance(o, str) and o for o in cast(Sequence[Any], outs)):
            raise ValueError(f"outputs={outs!r}: give {{place: how ids are read}}, or a list of places whose rows "
                             "carry no ids, e.g. outputs=['counts', 'file:/data/totals']")
        object.__setattr__(self, "outputs", dict.fromkeys(cast(Sequence[str], outs), NO_IDS))  # frozen: once, here


@spelled
@dataclass(frozen=True, kw_only=True)
class JobSetup:
    """How the job is started: ``args`` is its argv, with ``{bootstrap_servers}``, ``{input_topic}``,
    ``{output_topic}``, ``{checkpoint_dir}`` and ``{workdir}`` substituted; ``conf`` is Spark conf for
    it, ``env`` extra environment for its driver; ``files`` and ``py_files`` its own data and Python
    files, as spark-submit's (relative: beside the job, the test file, the rootdir). ``kafka_port``: the
    Kafka cluster also answers the job on ``127.0.0.1:<port>`` during the run, for a job that hard-codes
    ``localhost:9092``. ``checkpoint``: ``"local"`` (a directory of the run) or ``"hdfs"`` (the stack's
    HDFS, started on first use, is the job's default filesystem); None: ``--chaos-checkpoint``.
    ``supervise``: a driver that exits on its own is started again from its checkpoint, as
    ``spark-submit --supervise`` would. ``stale_checkpoint``: what happens to a checkpoint of an earlier
    run the job names (docs/job-contract.md#the-jobs-own-files): ``"fail"`` or ``"clear"``. ``deploy_mode``:
    spark-submit's, ``"client"`` (the driver here) or, on YARN and Kubernetes, ``"cluster"`` (the driver is the
    ApplicationMaster, docs/yarn.md; a Kubernetes Job's pod, docs/kubernetes.md)."""

    args: Sequence[Any] | None = None
    conf: Mapping[str, Any] | None = None
    env: Mapping[str, Any] | None = None
    files: Sequence[str | Path] | None = None
    py_files: Sequence[str | Path] | None = None
    kafka_port: int | None = None
    checkpoint: str | None = None
    supervise: bool = False
    stale_checkpoint: str = "fail"
    deploy_mode: str = "client"


@spelled
@dataclass(frozen=True, kw_only=True)
class Timing:
    """The run's pace and its phases' limits: the job's ``trigger_seconds`` (what its micro-batches are
    judged against), at most ``warmup_timeout`` s to steady state, at most ``drain_timeout`` s of drain,
    and ``settle_seconds`` without new output that end the drain (None: ``max(5, 4 x trigger)``, and an
    idle query ends it sooner)."""

    trigger_seconds: float = 1.0
    warmup_timeout: float = 120.0
    drain_timeout: float = 60.0
    settle_seconds: float | None = None


#: the group fields that were flat arguments of ``chaos.run`` until 0.2.0 (CHANGELOG.md): their refusal names the
#: version that removed them (docs/deprecations.md); a field added to a group later has no old flat form
ONCE_FLAT = frozenset({"partitions", "key_space", "skew", "record_size", "late_fraction", "trigger_seconds",
                       "warmup_timeout", "drain_timeout", "settle_seconds", "conf", "env", "args", "files",
                       "py_files", "checkpoint", "supervise", "stale_checkpoint", "id_reader", "params", "annotate"})
#: the policy's entries of the flat arguments and of one that went without a group
FLAT_MOVED = MOVED["chaos.run(<argument of a group>=...)"]
GONE = {"kafka_timeout_ms": MOVED["chaos.run(kafka_timeout_ms=...)"]}

#: the groups by the keyword ``chaos.run`` takes them under
GROUPS: dict[str, type[Load] | type[Watch] | type[JobSetup] | type[Timing]] = {
    "load": Load, "watch": Watch, "setup": JobSetup, "timing": Timing}


class Default:
    """A flat argument's default in ``chaos.run``'s signature, so that a value the test gave (even
    the default one) is told from none given; shows as the value itself."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


V = TypeVar("V")


def default(value: V) -> V:
    """``value`` as a flat argument's :class:`Default` (typed as the value, for the signature)."""
    return cast(V, Default(value))


def given(value: object) -> bool:
    """Whether a flat argument was given: neither None nor its :class:`Default`."""
    return value is not None and not isinstance(value, Default)


G = TypeVar("G", Load, Watch, JobSetup, Timing)


def grouped(name: str, cls: type[G], group: G | None, flat: Mapping[str, Any]) -> G:
    """The group ``name=`` of ``chaos.run``: ``group`` (its defaults when None) with the flat arguments that
    belong to it folded in (``flat``: field name -> value as passed). A flat argument whose field the
    group sets too (to other than its default) is a ValueError naming both: which would win is not obvious."""
    if group is not None and not isinstance(group, cls):
        raise TypeError(f"{name}= takes a {cls.__name__}(...), not {type(group).__name__}")
    passed = {k: v for k, v in flat.items() if given(v)}
    base = group if group is not None else cls()
    defaults = {f.name: f.default for f in fields(cls)}
    both = [k for k in passed if getattr(base, k) != defaults[k]]
    if both:
        names = ", ".join(f"{k}=" for k in both)
        raise ValueError(f"chaos.run got {names} both in {name}={cls.__name__}(...) and on its own: give "
                         f"{'it' if len(both) == 1 else 'them'} once, inside {cls.__name__}(...) or flat")
    return replace(base, **passed)


P = ParamSpec("P")
R = TypeVar("R")


def grouped_keywords(func: Callable[P, R]) -> Callable[P, R]:
    """``func`` (``chaos.run``), failing at once on a keyword it does not take: one that lives in a group
    now is named with its group (``args=`` -> ``setup=JobSetup(args=...)``), a misspelt one gets a
    did-you-mean over every argument and group field."""
    @functools.wraps(func)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        check_keywords(func, kwargs)
        return func(*args, **kwargs)

    return checked


def check_keywords(func: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """A TypeError naming the first keyword of ``kwargs`` that ``func`` (``chaos.run``) does not take: where it
    lives now, or what it may have meant (``chaos.compare`` checks both runs' arguments so before the first)."""
    params = inspect.signature(func).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return  # a run of a test's own that takes any keyword (a subclass's)
    takes = set(params)
    unknown = [k for k in kwargs if k not in takes]
    if unknown:
        raise TypeError(moved_message(unknown[0], takes))


def moved_message(name: str, takes: set[str]) -> str:
    """Where keyword ``name`` goes now, or what it may have meant (for :func:`grouped_keywords`)."""
    if name in GONE:
        return GONE[name].refusal()
    home = _group_of(name)
    if home is not None:
        key, cls = home
        fix = f"chaos.run(..., {key}={cls.__name__}({name}=...)) (from pytest_streamchaos import {cls.__name__})"
        if name in ONCE_FLAT:
            return replace(FLAT_MOVED, old=f"chaos.run({name}=...)", new=fix).refusal()
        return f"chaos.run() got {name}=: it is an argument of the {cls.__name__} group; fix: {fix}"
    known = takes | {f.name for cls in GROUPS.values() for f in fields(cls)}
    close = difflib.get_close_matches(name, sorted(known), n=1)
    if not close:
        return (f"chaos.run() got an unexpected keyword argument {name!r}; it takes "
                f"{', '.join(sorted(takes - {'self', 'job'}))}")
    home = None if close[0] in takes else _group_of(close[0])
    meant = f"{home[0]}={home[1].__name__}({close[0]}=...)" if home is not None else f"{close[0]}="
    return f"chaos.run() got an unexpected keyword argument {name!r}: did you mean {meant}?"


def _group_of(name: str) -> tuple[str, type] | None:
    """(keyword, class) of the group ``name`` is a field of, None for a flat argument or an unknown name."""
    for key, cls in GROUPS.items():
        if name in {f.name for f in fields(cls)}:
            return key, cls
    return None
