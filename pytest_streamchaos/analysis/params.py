"""The tunables of the metrics (:class:`MetricParams`) and the timeline kinds they react to."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from ..events import Kind, Reaction, backend_kinds
from .spelling import did_you_mean, spelled

#: how many of the job's cycles (its time between micro-batches) the baseline must span for recovery to be
#: measurable: two, so that the baseline saw the job's output come back at least once
BASELINE_CYCLES = 2.0

#: :class:`~pytest_streamchaos.events.Kind`'s part of the default :attr:`MetricParams.system_detection_kinds`:
#: Spark's event log (executor lost, query terminated), the harness's watchers (master fail-over, worker
#: registered again is *not* one: that is healing), the driver supervisor (driver exited / relaunched), and the
#: Kafka cluster's own reactions (a broker fenced, a partition's leadership moved or lost, a new KRaft controller).
SYSTEM_DETECTION_KINDS: tuple[str, ...] = (
    Kind.EXECUTOR_REMOVED, Kind.WORKER_LOST, Kind.MASTER_FAILOVER, Kind.DRIVER_EXITED, Kind.DRIVER_LAUNCHED,
    Kind.QUERY_TERMINATED, Kind.SOURCE_TIMEOUT, Kind.BROKER_FENCED, Kind.LEADER_ELECTED, Kind.LEADER_LOST,
    Kind.CONTROLLER_ELECTED, Kind.TASK_FAILED,
)


def system_detection_kinds() -> tuple[str, ...]:
    """The default :attr:`MetricParams.system_detection_kinds`: :data:`SYSTEM_DETECTION_KINDS`, and the backends'
    own kinds that say the system noticed a fault (HDFS's DataNode declared dead: its entry's ``events``)."""
    return (*SYSTEM_DETECTION_KINDS, *backend_kinds(Reaction.DETECTED))


@spelled
@dataclass
class MetricParams:
    """Tunables of the metrics; every one can be set per test."""

    bucket_seconds: float = 1.0
    #: throughput band: within ± this fraction of the baseline reliable throughput
    throughput_band: float = 0.3
    #: latency band: latency quantile <= baseline quantile * latency_factor + latency_slack_seconds
    latency_factor: float = 1.5
    #: additive latency slack; None = the trace's trigger interval
    latency_slack_seconds: float | None = None
    #: which per-bucket latency quantile is compared against the bound (and baseline quantile used)
    latency_quantile: float = 0.95
    #: how long metrics must stay in band to call a fault recovered
    hold_seconds: float = 5.0
    #: forward moving window of the throughput used for the band
    smooth_seconds: float = 5.0
    #: downtime threshold = max(min_gap_seconds, gap_factor * normal gap)
    gap_factor: float = 2.0
    min_gap_seconds: float = 0.0
    #: time-weighted quantile of baseline output gaps that defines the normal gap
    gap_time_quantile: float = 0.8
    #: warm-up after the first output when the trace has no phases['warmup_end']
    warmup_seconds: float = 0.0
    #: timeline kinds that are fault injections
    fault_kinds: tuple[str, ...] = (Kind.FAULT_INJECTED,)
    #: masking verdict: downtime above this is an outage
    outage_seconds: float = 0.0
    #: masking verdict: peak latency above this (seconds) is an outage; None = no latency SLO
    slo_latency_seconds: float | None = None
    #: timeline kinds in which the system (Spark, Kafka, the driver supervisor) shows it noticed a
    #: fault; the first one after a fault is its ``system_detection``. ``driver_launched`` counts
    #: only as a relaunch (launch > 1): the first launch is the job's start.
    system_detection_kinds: tuple[str, ...] = field(default_factory=system_detection_kinds)

    def __post_init__(self) -> None:
        for name in ("bucket_seconds", "hold_seconds", "smooth_seconds", "gap_factor"):
            if not getattr(self, name) > 0:
                raise ValueError(f"MetricParams.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0 < self.latency_quantile <= 1 or not 0 < self.gap_time_quantile <= 1:
            raise ValueError("MetricParams: latency_quantile and gap_time_quantile must be in (0, 1]")
        for name in ("fault_kinds", "system_detection_kinds"):  # a misspelt kind would never match: say so
            kinds = getattr(self, name)
            if isinstance(kinds, str):
                raise ValueError(f"MetricParams.{name}={kinds!r}: give a tuple of timeline kinds, e.g. ({kinds!r},)")
            known = [str(k) for k in (*Kind, *backend_kinds())]
            for kind in kinds:
                if kind not in known:
                    raise ValueError(f"MetricParams.{name}: {kind!r} is not a timeline kind"
                                     f"{did_you_mean(kind, known)}; the kinds are pytest_streamchaos.events.Kind's")

    def to_dict(self) -> dict[str, object]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}



def reaction_kinds() -> frozenset[str]:
    """The timeline kinds after which a fault with no sign yet must stay quiet before it counts as masked for
    good: the faults' injections and heals, and the system's reactions to them (a restarted worker's new executor
    shows in the output only once it runs tasks) -- :class:`~pytest_streamchaos.events.Kind`'s, and the backends'
    own that say the system noticed a fault or took a step of its healing (HDFS out of safe mode, a DataNode
    registered, the object store answering again: their entries' ``events``)."""
    return frozenset((
        Kind.FAULT_INJECTED, Kind.FAULT_HEALED, *system_detection_kinds(), Kind.EXECUTOR_ADDED,
        Kind.WORKER_REGISTERED, Kind.DRIVER_STARTED, Kind.QUERY_STARTED, Kind.BROKER_REGISTERED, Kind.ISR_SHRUNK,
        Kind.ISR_EXPANDED, *backend_kinds(Reaction.HEALING)))


def phase_kinds() -> frozenset[str]:
    """What a fault's recovery phases are made of: the system's reactions and the steps of its healing."""
    return reaction_kinds() - {Kind.FAULT_INJECTED}
