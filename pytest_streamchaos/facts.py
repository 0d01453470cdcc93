"""What the harness knows about one run beyond its records: the run's facts, typed.

Part of the run's :class:`~pytest_streamchaos.history.History`: the arguments the run was given and
the settings in effect (:class:`RunSetup`), the job as it ran (:class:`JobFacts`: its launches, the
supervisor's restarts, its checkpoint), the load (:class:`LoadFacts`, :class:`GeneratorStats`), the
collector (:class:`CollectorStats`), the sinks Spark reported (:class:`SinkQuery`), the timeouts the
run set for a delay class (:class:`DelayClassChoice`), and the raw material of the checks that are not
about records: the harness clients' round trips (:class:`ClientSample`), the timeouts that govern
each network delay (:class:`DelaySpec`), the transaction markers the collector saw.

The run's JSON keeps these under ``meta`` (docs/report-schema.md): :meth:`RunFacts.meta` writes that
object from the typed facts; nothing reads it back by key but :meth:`RunSetup.from_meta`, the
reader of a saved report that explains a baseline comparison.

At the bottom of the import graph: imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class ClientSample:
    """One statistics interval of one harness client (the generator's producer, the collector's
    consumer): when it ended, the round-trip median and maximum over the brokers' requests in it
    (ms; None when no request completed) and the responses received."""

    ts: float
    rtt_p50_ms: float | None
    rtt_max_ms: float | None
    responses: int


@dataclass(frozen=True)
class DelaySpec:
    """One ``network_delay`` occurrence as planned: its label on the timeline and the failure-detection
    timeout that governs its link, as the job ran."""

    label: str
    ms: float
    above_timeout: bool | None  #: the stated class (None: not stated)
    timeout_setting: str
    timeout_s: float
    timeout_where: str = ""  #: where that value comes from (the job's code, a default)


@dataclass(frozen=True)
class DelayClassChoice:
    """What the plugin set for one run so that a ``network_delay``'s stated class holds (made by
    :func:`pytest_streamchaos.faults.timeouts.resolve_delay_class`)."""

    target: str
    ms: float
    above_timeout: bool
    setting: str  #: the governing timeout it changed
    before: str  #: its effective value before
    after: str  #: the value chosen for this run
    conf: dict[str, str]  #: Spark conf of the job to apply (``spark.*``)

    def describe(self) -> str:
        """One line for the report: which setting, from what, to what, and why."""
        side = "above" if self.above_timeout else "below"
        extra = ", ".join(f"{k}={v}" for k, v in self.conf.items() if k != self.setting)
        return (f"network_delay(ms={self.ms:g}, target={self.target!r}) is meant {side} its link's timeout: "
                f"{self.setting} set to {self.after} for this run (was {self.before})"
                + (f", with {extra}" if extra else ""))

    def to_dict(self) -> dict[str, object]:
        return {"target": self.target, "ms": self.ms, "above_timeout": self.above_timeout, "setting": self.setting,
                "before": self.before, "after": self.after, "conf": dict(self.conf)}


@dataclass(frozen=True)
class Topics:
    """The run's topics: its (first) input, main output and late side output; ``inputs`` every input
    when there are several or the test named them; ``outputs`` the outputs the test named (None: the
    run's own output topic)."""

    input: str
    output: str | None = None
    side: str | None = None
    inputs: list[str] | None = None
    outputs: list[str] | None = None

    @property
    def main_output(self) -> str | None:
        """The topic an oracle without one of its own judges: the run's own output topic (None when the
        test named its outputs: its oracle names the topic, or every output counts)."""
        return self.output if self.outputs is None else None

    def to_dict(self) -> dict[str, object]:
        d: dict[str, Any] = {"input": self.input, "output": self.output, "side": self.side}
        if self.inputs is not None:
            d["inputs"] = list(self.inputs)
        if self.outputs is not None:
            d["outputs"] = list(self.outputs)
        return d


@dataclass(frozen=True)
class RunSetup:
    """The run as it was asked for and set up: the test, the seed, ``arguments`` (the run's arguments
    as plain values, what ``chaos.run`` was given after its checks), the planned faults' labels, and
    the settings in effect (the job's Spark conf, the cluster's, the brokers')."""

    test: str = ""
    seed: int | None = None
    arguments: Mapping[str, Any] = field(default_factory=dict)
    planned_faults: list[str] = field(default_factory=list)
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    cluster_conf: Mapping[str, str] = field(default_factory=dict)
    kafka_conf: Mapping[str, str] = field(default_factory=dict)
    #: the timeouts the run changed so that each delay's stated class holds
    timeouts: list[DelayClassChoice] = field(default_factory=list)

    #: the sections of the settings a baseline comparison explains a difference with
    EXPLAINED = ("arguments", "spark_conf", "cluster_conf")

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> RunSetup:
        """The setup recorded in a saved report's ``meta`` (what :meth:`RunFacts.meta` wrote; absent
        sections are empty): how a baseline comparison reads an earlier session's settings."""
        return cls(test=str(meta.get("test", "")), seed=meta.get("seed"), arguments=dict(meta.get("run") or {}),
                   planned_faults=list(meta.get("faults") or []), spark_conf=dict(meta.get("spark_conf") or {}),
                   cluster_conf=dict(meta.get("cluster_conf") or {}), kafka_conf=dict(meta.get("kafka_conf") or {}))

    def differences(self, other: RunSetup) -> list[str]:
        """``section.key: before -> after`` for every setting that differs in ``other`` (the arguments,
        the Spark conf, the cluster conf; the job's path left out), then the seed."""
        lines = []
        for section in self.EXPLAINED:
            sb, sa = getattr(self, section), getattr(other, section)
            name = "run" if section == "arguments" else section
            for k in sorted(set(sb) | set(sa)):
                if k in ("job",) or sb.get(k) == sa.get(k):
                    continue
                lines.append(f"{name}.{k}: {sb.get(k, '(unset)')} -> {sa.get(k, '(unset)')}")
        if self.seed != other.seed:
            lines.append(f"seed: {self.seed} -> {other.seed}")
        return lines


@dataclass(frozen=True)
class StateStoreFacts:
    """The query's state store as its checkpoint showed it: the provider class Spark recorded, which files
    its versions are written as (``delta``, ``snapshot``, ``changelog``, ``zip``), whether they carry a
    unique id (state checkpoint format v2), and one line saying so for the report."""

    provider: str
    files: tuple[str, ...] = ()
    format_v2: bool = False
    description: str = ""  #: e.g. ``RocksDB, changelog checkpointing (versions written as .changelog, .zip)``

    def to_dict(self) -> dict[str, object]:
        """The report's ``meta.state_store`` (docs/report-schema.md)."""
        return {"provider": self.provider, "files": list(self.files), "format_v2": self.format_v2,
                "describe": self.description}


@dataclass(frozen=True)
class JobFacts:
    """The job as it ran: its arguments after the script, its working directory and log, the master
    it used, how often the driver was launched (a restart is a launch) and how often the supervisor
    restarted it, where its checkpoint was found and on what storage."""

    args: list[str] = field(default_factory=list)
    workdir: str = ""
    log: str = ""
    master: str = ""
    launches: int = 0
    restarts_by_supervisor: int = 0
    checkpoint: str | None = None
    checkpoint_storage: str = "local"
    #: the query's state store as its checkpoint showed it; None: no state, or no checkpoint found
    state_store: StateStoreFacts | None = None


@dataclass(frozen=True)
class LoadFacts:
    """How long the load was planned (and why) and ran; ``ended``: why it did not last its plan (ended
    early on recovery, extended for a late aimed fault), None when it did."""

    planned_s: float
    why: str
    ended: str | None
    ran_s: float

    def describe(self) -> str:
        return (f"load ran {self.ran_s:.1f}s (planned {self.planned_s:g}s: {self.why}"
                + (f"; {self.ended})" if self.ended else ")"))


@dataclass(frozen=True)
class GeneratorStats:
    """What one load generator counted: the rate asked and achieved, records produced, acknowledged,
    failed, still in flight at the end, skipped, the local queue's full events, errors, a fatal error,
    and the CPU its thread used."""

    rate_target: float = 0.0
    rate_achieved: float = 0.0
    produced: int = 0
    acked: int = 0
    failed: int = 0
    in_flight: int = 0
    skipped: int = 0
    queue_full_events: int = 0
    errors: int = 0
    fatal: str | None = None
    thread_cpu_s: float = 0.0
    #: the origin of fixed event times (a reference run's input), None: event times as scheduled
    event_origin: float | None = None

    @classmethod
    def of(cls, counters: Mapping[str, Any]) -> GeneratorStats:
        """From a generator's ``stats()`` counters (names it does not know are left out)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in counters.items() if k in known})

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class OutputRows:
    """The rows one output held at the end of a run, whole (what a reference run compares,
    :mod:`pytest_streamchaos.analysis.reference`): ``rows`` in the order they were written, ``keys`` the
    Kafka message key of each (None: not a Kafka topic), ``table`` True for a table's final rows (a Delta
    table: compared as its final state)."""

    name: str
    rows: Sequence[Mapping[str, Any]]
    keys: Sequence[str | None] | None = None
    table: bool = False


@dataclass(frozen=True)
class CollectorStats:
    """What the collector counted: outputs read, malformed ones, outputs the broker deleted before they
    were read (retention) and where, and its last errors."""

    count: int = 0
    malformed: int = 0
    lost_to_retention: int = 0
    retention_gaps: list[Any] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"count": self.count, "malformed": self.malformed, "lost_to_retention": self.lost_to_retention,
                "retention_gaps": list(self.retention_gaps), "errors": list(self.errors)}


@dataclass(frozen=True)
class SinkQuery:
    """One streaming query of the job and where it wrote, from Spark's progress."""

    query: str | None  #: the query's name
    id: str
    kind: str  #: console, memory, noop, foreach, foreachBatch, kafka, file, delta, other
    description: str = ""
    path: str | None = None  #: the file sink's directory, or the Delta sink's table
    writes: list[str] = field(default_factory=list)  #: directories its foreachBatch wrote files to

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def describe(self) -> str:
        who = repr(self.query) if self.query else self.id[:8]
        return (f"query {who}: {self.kind}" + (f" {self.path}" if self.path else "")
                + (f" (files to {', '.join(self.writes)})" if self.writes else ""))


@dataclass
class RunFacts:
    """Everything the harness knows about a run besides its records (see the module docstring); a
    bare trace has none (``setup`` None). ``client_samples`` / ``transaction_markers`` None: not
    recorded (a bare trace, or no readable output)."""

    setup: RunSetup | None = None
    job: JobFacts | None = None
    load: LoadFacts | None = None
    #: per input topic, what its generator counted
    generators: dict[str, GeneratorStats] = field(default_factory=dict)
    collector: CollectorStats | None = None
    sinks: list[SinkQuery] = field(default_factory=list)
    #: what the run did when it found the output unreadable
    sink_note: str | None = None
    #: the outputs the test named as a list: their rows carry no input ids (compared with a reference run)
    outputs_without_ids: list[str] = field(default_factory=list)
    poisoned_ids: list[int] = field(default_factory=list)
    #: faults that did not happen as planned (each names the fault and why)
    fault_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    delays: list[DelaySpec] = field(default_factory=list)
    client_samples: dict[str, list[ClientSample]] | None = None
    transaction_markers: dict[str, int] | None = None
    #: every output's rows at the end of the run, when a reference run compares them (None: not read)
    output_rows: list[OutputRows] | None = None

    @property
    def recorded(self) -> bool:
        """Whether these are the facts of a run of the harness (not of a bare trace)."""
        return self.setup is not None

    def meta(self, topics: Topics | None = None) -> dict[str, object]:
        """The run JSON's ``meta`` object, written from the facts and the run's ``topics`` (empty for a bare
        trace; the verdicts it also holds -- ``delay_outcomes``, ``observer``, ``exactly_once`` -- come from
        the checks)."""
        out: dict[str, Any] = {"warnings": list(self.warnings)} if self.warnings else {}
        if self.setup is not None:
            out.update(self._setup_meta(self.setup))
        if self.job is not None:
            out.update(self._job_meta(self.job))
        if self.load is not None:
            out["load"] = asdict(self.load)
        if self.generators:
            gens = {t: g.to_dict() for t, g in self.generators.items()}
            out["generator"] = next(iter(gens.values())) if len(gens) == 1 else gens
        if self.collector is not None:
            out["collector"] = self.collector.to_dict()
        if self.recorded:
            out.update(poisoned_ids=list(self.poisoned_ids), fault_errors=list(self.fault_errors),
                       warnings=list(self.warnings), sinks=[q.to_dict() for q in self.sinks], sink_note=self.sink_note)
        if self.recorded and topics is not None:
            out["topics"] = topics.to_dict()
        return out

    @staticmethod
    def _setup_meta(s: RunSetup) -> dict[str, object]:
        return {"test": s.test, "seed": s.seed, "run": dict(s.arguments), "faults": list(s.planned_faults),
                "spark_conf": dict(s.spark_conf),
                "cluster_conf": dict(s.cluster_conf), "kafka_conf": dict(s.kafka_conf),
                "delay_class": [c.to_dict() | {"note": c.describe()} for c in s.timeouts]}

    @staticmethod
    def _job_meta(j: JobFacts) -> dict[str, object]:
        return {"driver_launches": j.launches, "driver_restarts_by_supervisor": j.restarts_by_supervisor,
                "job_log": j.log, "checkpoint": j.checkpoint, "checkpoint_storage": j.checkpoint_storage,
                "state_store": None if j.state_store is None else j.state_store.to_dict(),
                "job_args": list(j.args), "job_workdir": j.workdir, "spark_master_used": j.master}
