"""The fault families, and every question the generic code asks about a fault kind.

The plugin, the runner, the scheduler and the reports never match a fault's name: they look its kind
up here and ask its properties (:mod:`pytest_streamchaos.faults.kind`). A new family is one module in
``faults/families/`` and one entry in :data:`FAMILIES` -- or, when it is a backend's (a storage's service, a cluster
manager's), named by that backend's registry entry (``faults``): :data:`KINDS` holds the entries' families as they
are when asked. Its marks, decorators, checks and behaviour follow from its kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pytest_streamchaos import backends, storages
from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.families import broker, checkpoint, disk, network, process, topic, workload
from pytest_streamchaos.faults.gate_moments import GATE_ONLY
from pytest_streamchaos.faults.kind import JobSite, Preparation, SomeAction, SomeKind
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError
from pytest_streamchaos.stack import capabilities

if TYPE_CHECKING:
    from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster

#: the families of fault kinds every run may have, each a module of ``faults/families/`` with its ``KINDS``; a
#: backend's own family (HDFS's, the object store's, YARN's, Spark Connect's) is named by its registry entry
FAMILIES = (process, broker, topic, checkpoint, network, workload, disk)


def families() -> tuple[tuple[type[SomeKind], ...], ...]:
    """The kinds of every family: :data:`FAMILIES`', then the backend entries' (``faults``), as they are now."""
    own = tuple(tuple(family.KINDS) for family in FAMILIES)
    return (*own, cast("tuple[type[SomeKind], ...]", backends.fault_kinds()))


class _Kinds(Mapping[str, "type[SomeKind]"]):
    """Every fault kind by its mark's name, read from :func:`families` when asked (a backend plugged into a
    registry brings its family with it); made again only when the entries' families change."""

    def __init__(self) -> None:
        self._key: tuple[str, ...] | None = None
        self._kinds: dict[str, type[SomeKind]] = {}

    def _now(self) -> dict[str, type[SomeKind]]:
        key = tuple(path for entry in backends.entries() for path in entry.faults)
        if key != self._key:
            self._kinds = {k.name: k for family in families() for k in family}
            self._key = key
        return self._kinds

    def __getitem__(self, name: str) -> type[SomeKind]:
        return self._now()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


#: every fault kind by its mark's name: :data:`FAMILIES`' and the backend entries'
KINDS: Mapping[str, type[SomeKind]] = _Kinds()


def kind(name: str) -> type[SomeKind]:
    """The kind of the mark called ``name``; :class:`~.spec.FaultSpecError` naming the known ones."""
    found = KINDS.get(name)
    if found is None:
        raise FaultSpecError(f"unknown fault {name!r}; known faults: {', '.join(sorted(KINDS))}")
    return found


def kind_of(spec: FaultSpec) -> type[SomeKind]:
    """The kind of a validated spec."""
    return KINDS[spec.kind]


def parse(name: str, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> FaultSpec:
    """Validate one fault mark's arguments and return its :class:`~.spec.FaultSpec`.

    Raises :class:`~.spec.FaultSpecError` with a message that names the mark, the argument and the
    allowed values (with a did-you-mean for misspelt argument names)."""
    return kind(name).parse(args, kwargs)


def actions_for(ctx: FaultContext) -> dict[str, SomeAction]:
    """One action per fault kind, bound to this run's stack."""
    return {name: k(ctx) for name, k in KINDS.items()}


def by_kind(specs: Iterable[FaultSpec]) -> dict[type[SomeKind], list[FaultSpec]]:
    """``specs`` grouped by kind, in order of first appearance."""
    out: dict[type[SomeKind], list[FaultSpec]] = {}
    for s in specs:
        out.setdefault(kind_of(s), []).append(s)
    return out


def refused_by_stack(spec: FaultSpec, cluster: SparkCluster, kafka: KafkaCluster) -> str | None:
    """The one line refusing ``spec`` on this Spark cluster and Kafka: a capability its kind needs that the cluster
    lacks (naming the fault, the cluster manager and the capability), or what the Kafka as it is cannot take; None
    when both can serve it."""
    fault = f"@{spec.kind}"
    for cap in kind_of(spec).capabilities(spec):
        on_kafka = cap in capabilities.NEEDS and capabilities.NEEDS[cap].kafka  # a manager's own: its cluster's
        target = kafka if on_kafka else cluster
        if not isinstance(target, cap):
            where = f"the {target.manager} {'Kafka' if on_kafka else 'Spark cluster'} ({type(target).__name__})"
            return capabilities.refusal(fault, where, cap)
    why = kind_of(spec).refused_by_kafka(spec, kafka)
    return f"{fault}: {why}" if why else None


def check_stack(specs: Iterable[FaultSpec], cluster: SparkCluster, kafka: KafkaCluster) -> None:
    """Fail (``ValueError``, :func:`refused_by_stack`'s line) when the session's clusters cannot serve a fault of
    the plan: when the run is planned, before anything starts."""
    for s in specs:
        why = refused_by_stack(s, cluster, kafka)
        if why:
            raise ValueError(why)


def check_run(specs: Iterable[FaultSpec], *, checkpoint: str, partitions: int | None = None,
              deploy_mode: str = "client") -> None:
    """Fail (``ValueError``, one line naming the fix) when a fault of the plan cannot be had in a run
    with these arguments (``partitions``: of its input topic; ``deploy_mode``: where its driver runs): before
    anything starts."""
    for s in specs:
        why = kind_of(s).refused_by_run(s, checkpoint=checkpoint) or kind_of(s).refused_by_deploy_mode(s, deploy_mode)
        if not why and partitions is not None:
            why = kind_of(s).refused_by_topic(s, partitions)
        if why:
            raise ValueError(f"@{s.kind}: {why}")
        storage = storages.get(checkpoint)
        if not storage.gate and s.when in GATE_ONLY:
            raise ValueError(f"@{s.kind}: when={s.when!r} is landed by the checkpoint gate, which needs the "
                             f"checkpoint on this host's file system (on {storage.title} {storage.renames}): use "
                             f"checkpoint={storages.GATED!r}, or aim at 'output_visible_uncommitted' / 'tasks_running'")


def check_storages(specs: Iterable[FaultSpec], reached: Iterable[str]) -> None:
    """Fail (``ValueError``, one line naming the fix) when a fault of the plan acts on a storage's service (its
    kind's ``store``) that the run does not have: ``reached``, the names of the run's storages (its checkpoint's
    and those whose URLs the job names). Before anything starts."""
    have = set(reached)
    for s in specs:
        entry = storages.with_protocol(kind_of(s).store)
        if entry is None or entry.name in have:
            continue
        named = [f"{scheme}://" for scheme in entry.schemes if entry.buckets and storages.of_scheme(scheme) is entry]
        also = f", or name a path {named[0]}<bucket>/... in the job" if named else ""
        raise ValueError(f"@{s.kind} acts on {entry.service()}, which this run does not use: put the job's checkpoint "
                         f"there (setup=JobSetup(checkpoint={entry.name!r}) or --chaos-checkpoint={entry.name}){also}")


def generator_conf(specs: Iterable[FaultSpec]) -> dict[str, object]:
    """The librdkafka settings the plan's faults need of the generator's producer (their ``generator_conf``)."""
    out: dict[str, object] = {}
    for s in specs:
        out.update(kind_of(s).generator_conf(s))
    return out


def prepare(specs: Iterable[FaultSpec], site: JobSite) -> dict[str, Preparation]:
    """What the plan's kinds make ready before the job starts (their ``before_job``), by kind name. If
    one fails, what the others made is released before the error goes on: nothing half-made stays."""
    made: dict[str, Preparation] = {}
    try:
        for k, group in by_kind(specs).items():
            got = k.before_job(group, site)
            if got is not None:
                made[k.name] = got
    except BaseException:
        release(made)
        raise
    return made


def release(prepared: Mapping[str, Preparation]) -> list[str]:
    """Release everything :func:`prepare` made (each even when another fails); what failed, as warnings."""
    failed = []
    for name, p in prepared.items():
        try:
            p.release()
        except Exception as exc:  # the others still go; the reaper undoes this one when pytest exits
            failed.append(f"@{name}: could not undo what it prepared before the job: {exc}")
    return failed
