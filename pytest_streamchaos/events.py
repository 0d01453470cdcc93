"""The run's timeline: every kind of event, the event itself, and the typed details readers use.

One module owns the timeline's vocabulary. :class:`Kind` names every event the harness, the stack's
watchers, Spark's event log and the analysis record; it is a :class:`~enum.StrEnum`, so an event's
``kind`` is still the string the JSON report shows (``e.kind == "executor_removed"`` and saved traces
keep working) while the package writes and matches ``Kind.EXECUTOR_REMOVED``. Where readers need what
an event carries, a small frozen dataclass reads its ``detail`` once (:class:`Injected`,
:class:`Launched`, :class:`QueryStarted`, ...): nothing outside this module reads an event's detail
by key (faults are read once, by :mod:`pytest_streamchaos.history`). ``tests/unit/test_event_kinds.py``
keeps every kind's string here.

The bottom of the import graph, with :mod:`pytest_streamchaos.records` above it: it imports nothing
of the package.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10: the same, as 3.11 defines it
    class StrEnum(str, Enum):
        """An enum whose members are their strings (``str(m)`` and ``format(m)`` give the value)."""

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


class Kind(StrEnum):
    """What happened (see the module docstring); grouped by who records it."""

    # the fault schedule (faults/)
    FAULT_PLANNED = "fault_planned"
    #: a fault took effect: the analysis measures every fault from it
    FAULT_INJECTED = "fault_injected"
    FAULT_HEALED = "fault_healed"
    FAULT_SKIPPED = "fault_skipped"
    FAULT_ERROR = "fault_error"
    FAULT_STOPPED_ACTING = "fault_stopped_acting"
    CHECKPOINT_HELD = "checkpoint_held"
    MOMENT_UNREACHABLE = "moment_unreachable"
    # the run's phases (runner/)
    JOB_SUBMITTED = "job_submitted"
    STEADY_STATE = "steady_state"
    STARTING_OFFSETS_FIXED = "starting_offsets_fixed"
    FIRST_OUTPUT = "first_output"
    TIMEOUT_SET = "timeout_set"
    OUTPUTS_UNREADABLE = "outputs_unreadable"
    LOAD_END = "load_end"
    LOAD_ENDED_ON_RECOVERY = "load_ended_on_recovery"
    #: one history (many fault schedules in one running job): a window of it closed and was judged on its own
    HISTORY_WINDOW = "history_window"
    DRAIN_END = "drain_end"
    CAUGHT_UP = "caught_up"
    # the job's processes (stack/driver, the supervisor): ``<role>_launched`` ...
    DRIVER_LAUNCHED = "driver_launched"
    DRIVER_KILLED = "driver_killed"
    DRIVER_STOPPED = "driver_stopped"
    DRIVER_EXITED = "driver_exited"
    # Spark's event log (observe/progress)
    DRIVER_STARTED = "driver_started"
    EXECUTOR_ADDED = "executor_added"
    EXECUTOR_REMOVED = "executor_removed"
    TASK_FAILED = "task_failed"
    QUERY_STARTED = "query_started"
    QUERY_TERMINATED = "query_terminated"
    # Spark standalone, as the faults' watchers see it
    WORKER_REGISTERED = "worker_registered"
    WORKER_LOST = "worker_lost"
    MASTER_FAILOVER = "master_failover"
    SOURCE_TIMEOUT = "source_timeout"
    # Kafka (observe/kafka_events, the topic faults)
    CONTROLLER_ELECTED = "controller_elected"
    LEADER_ELECTED = "leader_elected"
    LEADER_LOST = "leader_lost"
    ISR_SHRUNK = "isr_shrunk"
    ISR_EXPANDED = "isr_expanded"
    BROKER_FENCED = "broker_fenced"
    BROKER_REGISTERED = "broker_registered"
    REASSIGNMENT_COMPLETED = "reassignment_completed"
    TOPIC_DELETED = "topic_deleted"
    # a storage's or a cluster manager's own kinds are not here: an enum in its folder, named by its registry
    # entry (HDFS's: stack/hdfs's HdfsKind; the object store's: stack/s3's S3Kind; YARN's: stack/yarn's YarnKind;
    # Spark Connect's, its server's process and its listener's events: stack/connect's ConnectKind)
    # what the analysis derives (analysis/metrics)
    FIRST_OUTPUT_AFTER_FAULT = "first_output_after_fault"
    RECOVERED = "recovered"
    NOT_RECOVERED = "not_recovered"

    @classmethod
    def of_process(cls, role: str, what: str) -> Kind | StrEnum:
        """``<role>_<what>`` of a job's process (``launched`` / ``killed`` / ``stopped``): the driver's are
        :class:`Kind`'s, another role's its backend's own (``connect_server``'s: ``stack/connect``'s
        ``ConnectKind``)."""
        return kind_named(f"{role}_{what}")


class Phase(StrEnum):
    """The run's phase boundaries (``Trace.phases``' keys, times on the run's clock). ``load_end`` and
    ``drain_end`` are also the kinds of the events the runner records at those moments."""

    START = "start"
    WARMUP_END = "warmup_end"
    LOAD_END = "load_end"
    DRAIN_END = "drain_end"


class Reaction(Enum):
    """What a backend's own kind says of a fault, for the recovery metrics (``analysis/params``): the system
    noticed it (``DETECTED``: a DataNode declared dead), or took a step of its healing (``HEALING``: safe mode
    left, a store answering again). A backend names it per kind: its entry's ``events`` is a mapping of its kinds
    to their reaction (None: neither)."""

    DETECTED = "detected"
    HEALING = "healing"


#: the kinds a backend brings of its own (an enum in its folder that its registry entry's ``events`` names), by
#: value: the timeline holds them as it holds :class:`Kind`'s (:func:`add_kinds`)
_BACKEND_KINDS: dict[str, StrEnum] = {}
#: what each of them says of a fault (:class:`Reaction`), in the order added
_REACTIONS: dict[StrEnum, Reaction] = {}


def add_kinds(kinds: Iterable[Enum] | Mapping[Enum, object]) -> None:
    """Let the timeline hold ``kinds``, a backend's own (its entry's ``events``: the plugin adds every entry's when
    the session starts); :class:`Kind`'s own are already held. Given as a mapping, each kind's :class:`Reaction`
    is noted for the metrics (:func:`backend_kinds`). A kind that is no ``StrEnum``, or whose string another kind
    has, is refused: saved traces carry kinds by their string."""
    reactions = kinds if isinstance(kinds, Mapping) else {}
    for kind in kinds:
        if isinstance(kind, Kind):
            continue
        if not isinstance(kind, StrEnum):
            raise TypeError(f"timeline kind {kind!r} is no StrEnum (pytest_streamchaos.events.StrEnum)")
        if kind.value in Kind._value2member_map_ or _BACKEND_KINDS.setdefault(kind.value, kind) is not kind:
            raise ValueError(f"timeline kind {kind.value!r} of {type(kind).__name__} is another kind's string")
        reaction = reactions.get(kind)
        if reaction is not None and not isinstance(reaction, Reaction):
            raise TypeError(f"timeline kind {kind.value!r}: {reaction!r} is no pytest_streamchaos.events.Reaction")
        if reaction is not None:
            _REACTIONS.setdefault(kind, reaction)


def backend_kinds(reaction: Reaction | None = None) -> tuple[StrEnum, ...]:
    """The backends' own kinds the timeline holds (:func:`add_kinds`), in the order added; with ``reaction``, those
    that say it of a fault (the metrics' detection and reaction kinds beyond :class:`Kind`'s)."""
    if reaction is None:
        return tuple(_BACKEND_KINDS.values())
    return tuple(k for k, r in _REACTIONS.items() if r is reaction)


def listened_kind(event: str) -> StrEnum | None:
    """The backend's own kind a Spark listener event of the event log is recorded as (``observe/progress``, for
    the events it does not know itself): the one held (:func:`add_kinds`) whose string is the event's class in
    snake case, without its package and ``SparkListener`` (``org.apache.spark.sql.connect.service.
    SparkListenerConnectSessionStarted`` is ``connect_session_started``); None when none is."""
    name = event.rpartition(".")[2].removeprefix("SparkListener")
    return _BACKEND_KINDS.get(snake(name)) if name else None


def snake(name: str) -> str:
    """``ConnectSessionStarted`` -> ``connect_session_started`` (``sessionId`` -> ``session_id``)."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def kind_named(value: str | StrEnum) -> Kind | StrEnum:
    """The timeline kind ``value`` is or names: one of :class:`Kind`, or a backend's own (:func:`add_kinds`); a
    ``ValueError`` naming it when it is neither."""
    if isinstance(value, Kind) or (isinstance(value, StrEnum) and _BACKEND_KINDS.get(value.value) is value):
        return value
    try:
        return Kind(value)
    except ValueError:
        if str(value) in _BACKEND_KINDS:
            return _BACKEND_KINDS[str(value)]
        raise ValueError(f"unknown timeline kind {value!r}: the kinds are pytest_streamchaos.events.Kind's and "
                         "those the backends' registry entries name (their events)") from None


@dataclass
class TimelineEvent:
    """One thing that happened: a fault planned/injected/healed, an executor lost/added, a driver
    restart, the first output after a fault, recovery. ``t`` is on the run's clock; ``kind`` is a
    :class:`Kind`, or a backend's own kind (:func:`add_kinds`); a string given is converted, an unknown one is a
    ``ValueError`` naming it."""

    t: float
    kind: Kind | StrEnum
    target: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kind = kind_named(self.kind)

    def to_dict(self) -> dict[str, Any]:
        extra = {"detail": self.detail} if self.detail else {}
        return {"t": self.t, "kind": str(self.kind), "target": self.target, **extra}


class Records(Protocol):
    """What a watcher writes its timeline events through (``faults.timeline.Recorder``, a YARN job's own timeline):
    the observers and the stack's watchers hold this, as they may not import ``faults/``."""

    def record(self, kind: Kind | StrEnum, target: str = "", t: float | None = None,
               **detail: object) -> TimelineEvent: ...


class _Event(Protocol):
    """What the typed details read: an event's kind and detail (a :class:`TimelineEvent`)."""

    @property
    def kind(self) -> str: ...

    @property
    def detail(self) -> Mapping[str, Any]: ...


def _int(value: Any, default: int) -> int:
    return default if value is None else int(value)


def _str(value: object) -> str | None:
    return None if value is None else str(value)


# -- typed details of the kinds whose detail someone reads ------------------------------------------


@dataclass(frozen=True)
class Planned:
    """``fault_planned``: the fault kind of a planned occurrence and which occurrence it is."""

    fault: str
    occurrence: int

    @classmethod
    def of(cls, e: _Event) -> Planned:
        return cls(str(e.detail.get("fault", "")), int(e.detail.get("occurrence", 0)))


#: the ``fault_injected`` detail keys that are :class:`Injected`'s own fields, not what a probe measured
_INJECTED_OWN = ("fault", "label", "confirmed", "aim")


@dataclass(frozen=True)
class Injected:
    """``fault_injected`` (or another kind counted as an injection): the fault's own kind (``kill_worker``;
    the event's kind when it names none), its occurrence label, seconds to its confirmation, where an
    aimed one landed (the :class:`~pytest_streamchaos.history.Aim`'s JSON form), and what the injection
    measured (``measured``: a probe's delay, a network fault's ``scope``)."""

    fault: str
    label: str | None
    confirmed: float | None
    aim: Mapping[str, Any] | None
    measured: dict[str, Any]

    @classmethod
    def of(cls, e: _Event) -> Injected:
        d = e.detail
        return cls(str(d.get("fault") or e.kind), _str(d.get("label")), d.get("confirmed"), d.get("aim"),
                   {k: v for k, v in d.items() if k not in _INJECTED_OWN})


@dataclass(frozen=True)
class Healed:
    """``fault_healed``: the occurrence label it ends (None: the earliest open one on its target)."""

    label: str | None

    @classmethod
    def of(cls, e: _Event) -> Healed:
        return cls(_str(e.detail.get("label")))


@dataclass(frozen=True)
class FaultFailed:
    """``fault_error`` / ``fault_skipped``: what went wrong (the error) or why it was skipped (the reason)."""

    error: str | None
    reason: str | None

    @classmethod
    def of(cls, e: _Event) -> FaultFailed:
        return cls(_str(e.detail.get("error")), _str(e.detail.get("reason")))


@dataclass(frozen=True)
class Launched:
    """``driver_launched`` (a job process's launch): its number (1 is the job's start; more is a relaunch,
    the supervisor's reaction to a failure) and its pid. A launch without a number counts as a relaunch."""

    launch: int
    pid: int | None

    @classmethod
    def of(cls, e: _Event) -> Launched:
        pid = e.detail.get("pid")
        return cls(_int(e.detail.get("launch"), 2), None if pid is None else int(pid))

    @property
    def relaunch(self) -> bool:
        return self.launch > 1


@dataclass(frozen=True)
class Exited:
    """``driver_exited``: the driver's exit code (None: unknown)."""

    code: int | None

    @classmethod
    def of(cls, e: _Event) -> Exited:
        code = e.detail.get("code")
        return cls(None if code is None else int(code))

    @property
    def failed(self) -> bool:
        return self.code not in (0, None)


@dataclass(frozen=True)
class QueryStarted:
    """``query_started``: the streaming query's id and the application it runs in."""

    id: str | None
    app_id: str | None
    run_id: str | None = None
    name: str | None = None

    @classmethod
    def of(cls, e: _Event) -> QueryStarted:
        d = e.detail
        return cls(_str(d.get("id")), _str(d.get("app_id")), _str(d.get("run_id")), _str(d.get("name")))


@dataclass(frozen=True)
class ExecutorChange:
    """``executor_added`` / ``executor_removed``: the application the executor (the event's target) serves."""

    app_id: str | None

    @classmethod
    def of(cls, e: _Event) -> ExecutorChange:
        return cls(_str(e.detail.get("app_id")))


@dataclass(frozen=True)
class Failure:
    """``query_terminated`` / ``task_failed`` / ``executor_removed``: the exception that ended it (its
    class, or Spark's text), or Spark's reason (an executor's ``Removed Reason``)."""

    exception: str | None
    reason: str | None

    @classmethod
    def of(cls, e: _Event) -> Failure:
        return cls(_str(e.detail.get("exception")) or None, _str(e.detail.get("reason")) or None)


@dataclass(frozen=True)
class WindowClosed:
    """``history_window``: a window of one history closed -- its number, its name (the schedule in words), the
    send times of its records (``start`` inclusive, ``end`` exclusive; None: unbounded) and the labels of its
    faults."""

    index: int
    name: str
    start: float | None
    end: float | None
    faults: tuple[str, ...]

    @classmethod
    def of(cls, e: _Event) -> WindowClosed:
        d = e.detail
        start, end = d.get("start"), d.get("end")
        return cls(int(d.get("index", 0)), str(d.get("name", "")), None if start is None else float(start),
                   None if end is None else float(end), tuple(str(f) for f in d.get("faults") or ()))


__all__ = [
    "ExecutorChange", "Exited", "Failure", "FaultFailed", "Healed", "Injected", "Kind", "Launched", "Phase",
    "Planned", "QueryStarted", "Reaction", "StrEnum", "TimelineEvent", "WindowClosed", "add_kinds", "backend_kinds",
    "kind_named", "listened_kind", "snake",
]
