"""The base of every fault kind: what its mark accepts, what it needs and reaches, and what it does.

A fault kind is one class (in its family's module, :mod:`pytest_streamchaos.faults.families`):

- its **declaration**, as class attributes: the mark's ``name``, ``doc``, its own ``args`` (besides
  :data:`~.spec.COMMON_ARGS`), which are ``required``, the ``roles`` an ``index`` may name, the
  ``moments`` it can aim at (:mod:`.moments`), the cluster capabilities it ``needs``
  (:mod:`pytest_streamchaos.stack.capabilities`: checked when the run is planned);
- its **properties**, as class methods, which the plugin and the runner ask before and around a run
  (never by the kind's name): its argument checks, what the host must have (``unavailable``), whether
  it reaches the cluster's JVMs, stops the driver, delays a link with a failure-detection timeout, and
  what it makes ready before the job starts (``before_job``);
- its **behaviour**, as an instance bound to one run's :class:`~.context.FaultContext`: ``target``,
  ``inject``, ``confirm``, ``check``, ``heal`` (:class:`FaultAction`).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.spec import (
    AIMED_ARM_AFTER,
    FaultSpec,
    FaultSpecError,
    check_index,
    check_names,
    check_when,
    number,
    pop_target,
    schedule,
)
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.history import Aim

if TYPE_CHECKING:
    from pytest_streamchaos.stack.base import KafkaCluster

#: the arguments of a fault that kills a process
KILL_ARGS = {
    "restart_after": "seconds after the kill to restart the process (None: leave it dead / Spark's own restart)",
    "signal": "SIGKILL (default) or SIGTERM",
}


def check_signal(kind: str, params: Mapping[str, Any]) -> None:
    """A kill's ``signal``, if given: SIGKILL or SIGTERM."""
    sig = params.get("signal")
    if sig is not None and sig not in ("SIGKILL", "SIGTERM"):
        raise FaultSpecError(f"@{kind}: signal={sig!r} must be 'SIGKILL' or 'SIGTERM'")


#: the handle a kind's ``inject`` returns and its ``confirm``, ``check``, ``heal`` and ``landed`` get back
#: (a pid, a broker list, a network rule group...): each kind's own type
H = TypeVar("H")


class FaultAction(abc.ABC, Generic[H]):
    """What a fault does to the stack, as the scheduler calls it. ``inject`` returns a handle (of the
    kind's own type ``H``) that ``confirm``, ``check`` and ``heal`` get back, as soon as the fault has
    taken effect (signal sent, rule installed, broker down) and without waiting for more: the scheduler
    stamps the injection when it returns. ``target`` names what was hit (for the timeline; called after ``inject``, so a
    role such as ``busiest`` has resolved)."""

    @abc.abstractmethod
    def target(self, planned: PlannedFault) -> str: ...

    @abc.abstractmethod
    def inject(self, planned: PlannedFault) -> H: ...

    def confirm(self, planned: PlannedFault, handle: H) -> dict[str, object] | None:
        """Block until the effect is confirmed (a killed group reaped, a paused group all stopped, a
        probe across the faulted link); raise if it is not within the kind's own timeout. A dict
        returned (what a probe measured) goes into the ``fault_injected`` event, the wait into its
        ``confirmed`` seconds. Default: nothing to confirm."""
        return None

    def check(self, planned: PlannedFault, handle: H) -> str | None:
        """Called every second while the fault is active: why it stopped acting (a delayer that died,
        a rule removed), recorded as a ``fault_error``; None while it acts. Default: None."""
        return None

    def heal(self, planned: PlannedFault, handle: H) -> None:
        """Undo the fault (restart, resume, rule removed). Default: nothing to undo."""
        return None

    def landed(self, planned: PlannedFault, handle: H, aim: Aim) -> Aim:
        """Where an aimed fault landed, once it was injected and confirmed: ``aim`` as its moment's
        detector found it, or a miss when the fault hit something else than the moment's target (a
        partition leader that moved meanwhile). Default: ``aim``."""
        return aim


@dataclass(frozen=True)
class SearchTarget:
    """A target ``@explore`` aims a fault at, as a kind declares it: the step's ``name`` (in coverage,
    shrinking and replay tokens), the spec's ``index`` and ``params`` it stands for, and which of the
    job's topics it ``serves`` (``input``: the job reads through it; ``output``: writes; None: neither
    -- the pruning rules reason about it)."""

    name: str
    index: str | int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    serves: str | None = None

    @staticmethod
    def of(target: str | SearchTarget) -> SearchTarget:
        """A plain role of ``index`` as a target of its own name."""
        return target if isinstance(target, SearchTarget) else SearchTarget(target, target)


@dataclass(frozen=True)
class LinkDelay:
    """A packet delay on a link that has a failure-detection timeout: its stated class (PD<TO when
    ``above_timeout`` is False, PD>TO when True, None: not stated) is made to hold before the run
    (:mod:`pytest_streamchaos.faults.timeouts`)."""

    target: str
    ms: float
    above_timeout: bool | None


@dataclass(frozen=True)
class JobSite:
    """Where a prepared job will run, for the kinds that make the run ready before it starts
    (:meth:`FaultKind.before_job`)."""

    workdir: Path  #: the driver's working directory (a relative path of the job lands there)
    #: where the query's checkpoint will be, as far as the run can tell before the job starts
    checkpoints: tuple[str, ...]
    harness: tuple[Path, ...]  #: the harness's own files of the job (event log, driver log): keep off them
    storage: str  #: where the run keeps its checkpoint: a name of ``pytest_streamchaos.storages.STORAGES``
    #: the job's executors run in namespaces of their own (containers), not this host's
    separate_hosts: bool = False
    #: checkpoint locations the job's code names on a file system the run cannot reach (``s3a://``, ``gs://``...)
    elsewhere: tuple[str, ...] = ()


class Preparation(Protocol):
    """What a kind made ready before the job started; released once the run is over, on every exit
    path (the reaper undoes it if pytest dies first)."""

    def release(self) -> None: ...


class FaultKind(FaultAction[H]):
    """One fault kind: declaration, properties and behaviour (see the module docstring)."""

    name: ClassVar[str]
    doc: ClassVar[str]
    args: ClassVar[Mapping[str, str]] = {}
    required: ClassVar[tuple[str, ...]] = ()
    roles: ClassVar[tuple[str, ...]] = ()  #: allowed string values of ``index``
    moments: ClassVar[tuple[str, ...]] = ()  #: allowed values of ``when``
    #: what the fault takes down, as the schedule search's pruning rules reason about it (``driver``,
    #: ``executor``, ``broker``, ``other``: :data:`pytest_streamchaos.search.kinds.ROLES`)
    takes_down: ClassVar[str] = "other"
    #: the targets ``@explore`` aims the fault at, simplest first: roles of ``index``, or
    #: :class:`SearchTarget` entries that carry params too (empty: the one target the kind has, named by
    #: its mark without ``kill_``)
    search_targets: ClassVar[tuple[str | SearchTarget, ...]] = ()
    #: ``restart_after`` when the mark gives neither it nor ``duration`` (None: not healed by the plugin)
    default_restart_after: ClassVar[float | None] = None
    #: the least recovery window a run without ``duration`` gives this fault after its heal is due (0: the default
    #: :func:`~pytest_streamchaos.faults.timeline.recovery_window`): for a recovery that waits on something
    #: slower than Spark's own (a Connect client's next retry)
    least_recovery_window: ClassVar[float] = 0.0
    #: the capabilities of the Spark or Kafka cluster it acts through (:mod:`pytest_streamchaos.stack.capabilities`)
    needs: ClassVar[tuple[type, ...]] = ()
    #: the protocol of the storage service it acts on (``FaultContext.store``: ``HdfsCluster``,
    #: ``ObjectStoreService``); a run without that storage refuses it before anything starts
    store: ClassVar[type | None] = None

    def __init__(self, ctx: FaultContext) -> None:
        self.ctx = ctx

    @classmethod
    def parse(cls, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> FaultSpec:
        """Validate one mark's arguments into its :class:`~.spec.FaultSpec`; :class:`~.spec.FaultSpecError`
        names the mark, the argument and the allowed values (did-you-mean for a misspelt name)."""
        kind, params = cls.name, dict(kwargs or {})
        if args:
            raise FaultSpecError(f"@{kind} takes keyword arguments only, e.g. @{kind}(after=30); got {tuple(args)!r}")
        allowed = check_names(kind, cls.args, cls.required, params)
        after_given = "after" in params
        after, duration, every, times = schedule(kind, params)
        index = check_index(kind, cls.roles, params.pop("index", None))
        when = params.pop("when", None)
        if when is not None:
            check_when(kind, cls.moments, when, every)
            if not after_given:
                after = AIMED_ARM_AFTER
        timeout = number(kind, "timeout", params.pop("timeout", 60.0), strict=True)
        restart_after = params.pop("restart_after", None)
        if restart_after is not None:
            restart_after = number(kind, "restart_after", restart_after)
            if duration is not None:
                raise FaultSpecError(f"@{kind}: give restart_after or duration, not both (both mean 'heal after')")
        elif duration is None:
            restart_after = cls.default_restart_after
        target = cls.check_target(pop_target(kind, params, allowed))
        cls.check_params(params)
        return FaultSpec(kind=kind, after=float(after), duration=duration, every=every, times=times, index=index,
                         when=when, timeout=float(timeout), restart_after=restart_after, target=target,
                         params=params)

    @classmethod
    def check_target(cls, target: str | None) -> str | None:
        """The mark's ``target`` checked (a kind without that argument never gets one), with its default."""
        return target

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        """Check the kind's own arguments in ``params``; fill in their defaults."""

    @classmethod
    def needs_host_network(cls, spec: FaultSpec) -> bool:
        """Whether this fault needs the host's network machinery (iptables, tc, NFQUEUE)."""
        return False

    @classmethod
    def unavailable(cls, spec: FaultSpec) -> str | None:
        """Why this host cannot run the fault (one line naming the fix: the test is skipped), or None."""
        return None

    @classmethod
    def refused_by_run(cls, spec: FaultSpec, *, checkpoint: str) -> str | None:
        """Why a run with these arguments (``checkpoint``: a storage's name) cannot have the fault
        (one line naming the fix: the run fails before anything starts), or None."""
        return None

    @classmethod
    def refused_by_deploy_mode(cls, spec: FaultSpec, deploy_mode: str) -> str | None:
        """Why a run whose driver is deployed so (``client``: on this host; ``cluster``: on the cluster) cannot
        have the fault (one line naming the fix: the run fails before anything starts), or None."""
        return None

    @classmethod
    def refused_by_topic(cls, spec: FaultSpec, partitions: int) -> str | None:
        """Why the run's input topic, of ``partitions`` partitions, cannot take this fault (one line naming the
        fix: the run fails before anything starts), or None."""
        return None

    @classmethod
    def permanent(cls, spec: FaultSpec) -> bool:
        """Whether the fault cannot be undone (records deleted, partitions added): it is never healed, and its
        ``fault_injected`` event says ``permanent``."""
        return False

    @classmethod
    def generator_conf(cls, spec: FaultSpec) -> Mapping[str, object]:
        """librdkafka settings the generator's producer needs in a run with this fault (e.g. to see a topic's
        new partitions at once); {} by default."""
        return {}

    @classmethod
    def capabilities(cls, spec: FaultSpec) -> tuple[type, ...]:
        """The cluster capabilities this fault needs (default: :attr:`needs`; a kind whose target decides
        says so): a cluster that lacks one refuses the fault when the run is planned."""
        return cls.needs

    @classmethod
    def refused_by_kafka(cls, spec: FaultSpec, kafka: KafkaCluster) -> str | None:
        """Why the run's Kafka, which has the capabilities the fault needs, still cannot take it as it is now
        (too few brokers, an ACL that denies the operation), or None; asked before the job starts."""
        return None

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        """Whether the fault acts on the cluster's JVMs (masters, workers, executors): it cannot reach a
        job that runs in local mode (``.master("local[...]")`` in its code)."""
        return False

    @classmethod
    def stops_driver(cls, spec: FaultSpec) -> bool:
        """Whether the fault stops the driver and brings it back itself on heal: a driver supervisor
        must leave the driver to it while it acts."""
        return False

    @classmethod
    def link_delay(cls, spec: FaultSpec) -> LinkDelay | None:
        """The packet delay the fault adds on a link, whose delay class the run resolves, or None."""
        return None

    @classmethod
    def before_job(cls, specs: Sequence[FaultSpec], site: JobSite) -> Preparation | None:
        """Make the run ready for this kind's faults (``specs``: all of the plan's) before the job starts,
        or None when nothing is needed; raise (one line naming the fix) when it cannot be done, leaving
        nothing behind. The runner releases what it returns once the run is over."""
        return None


#: a fault action or kind of whichever handle type, as the registry and the scheduler hold them: a kind's handle
#: is its own business, which they only pass back to it (``FaultAction[object]`` would not do: a kind takes its
#: handle back as its own type, so its ``H`` is invariant, and typing has no "some H" but ``Any``)
SomeAction: TypeAlias = "FaultAction[Any]"
SomeKind: TypeAlias = "FaultKind[Any]"


class Kill(FaultKind[H]):
    """A kind that kills a process: its ``signal`` (SIGKILL by default, or SIGTERM) and ``restart_after``."""

    args: ClassVar[Mapping[str, str]] = KILL_ARGS

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_signal(cls.name, params)
