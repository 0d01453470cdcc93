"""The history of one run: everything the runner recorded, typed, and all that a checker sees.

Jepsen's checkers decide from the recorded history alone; so do ours (:mod:`pytest_streamchaos.analysis`).
A :class:`History` is the :class:`~pytest_streamchaos.records.Trace` (records sent, outputs, Spark's
micro-batches, the timeline, the phase boundaries, the trigger) plus what the timeline says about the
faults (:class:`FaultRecord`: kind, label, target, injected / healed times and where an aimed one
landed, :class:`Aim`) and the run's facts (:class:`RunFacts`: its arguments, the effective settings,
what the generator and collector counted, the driver's launches, the checkpoint, the sinks, the
warnings...). The runner hands the analysis exactly this; nothing is read back from a dict by key.

Near the bottom of the import graph: it imports only :mod:`pytest_streamchaos.records` and
:mod:`pytest_streamchaos.facts` (the run's facts), so every layer can build or read a history without
importing the analysis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from pytest_streamchaos import deprecation
from pytest_streamchaos.events import ExecutorChange, FaultFailed, Healed, Injected, Kind, Planned, WindowClosed
from pytest_streamchaos.facts import RunFacts, Topics
from pytest_streamchaos.records import OutputRecords, SentRecords, TimelineEvent, Trace


@dataclass(frozen=True)
class Aim:
    """Where an aimed fault landed in the micro-batch cycle: the phase of ``batch`` when it was
    injected, whether that is the phase its moment names (``hit``), and how many batches the detector
    tried (a miss on one batch is retried on the next, a bounded number of times)."""

    moment: str
    batch: int | None
    phase: str
    hit: bool
    attempts: int = 1

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def of(cls, value: Aim | Mapping[str, Any] | None) -> Aim | None:
        """An :class:`Aim` from itself or its JSON form (the timeline's ``fault_injected`` detail)."""
        if value is None or isinstance(value, Aim):
            return value
        return cls(**{f.name: value[f.name] for f in fields(cls) if f.name in value})

    def __getitem__(self, key: str) -> Any:
        """``aim["hit"]``: the dict this was in development snapshots before 0.2.0; deprecated, goes in 0.3.0."""
        deprecation.use("run.faults[i].aim[key]", error=TypeError)
        if key not in {f.name for f in fields(self)}:
            raise KeyError(key)
        return getattr(self, key)

    def describe(self) -> str:
        tried = f"{self.attempts} batch{'es' if self.attempts != 1 else ''} tried"
        return f"aimed at {self.moment}: {'hit' if self.hit else 'MISSED'} (batch {self.batch} {self.phase}, {tried})"


@dataclass
class FaultRecord:
    """One planned fault occurrence as the timeline tells it (times on the run's clock; None: it did
    not happen). ``detail`` is what the injection measured (a probe's delay, the ``scope`` of a
    network fault: whose connections it acted on)."""

    kind: str
    label: str
    target: str = ""
    occurrence: int = 0
    planned_at: float | None = None
    injected_at: float | None = None
    healed_at: float | None = None
    #: seconds from the injection to its confirmation (None: not confirmed or nothing to confirm)
    confirmed_s: float | None = None
    aim: Aim | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    skipped: str | None = None  #: why an aimed fault never fired (its moment did not come)

    @property
    def injected(self) -> bool:
        return self.injected_at is not None

    @property
    def hit(self) -> bool | None:
        """Whether an aimed fault landed in the phase its moment names (None: not aimed)."""
        return None if self.aim is None else self.aim.hit

    @property
    def scope(self) -> str | None:
        """Whose connections a network fault acted on (``job``, ``namespace``, ``all``); None for a
        fault that is not on a link."""
        scope = self.detail.get("scope")
        return None if scope is None else str(scope)

    def to_dict(self) -> dict[str, object]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["aim"] = None if self.aim is None else self.aim.to_dict()
        d["detail"] = dict(self.detail)
        return d


def executors_back(timeline: Iterable[TimelineEvent]) -> bool:
    """Whether the job's application has as many executors now as its application had when the first fault
    was injected: a killed worker's replacement executor, a relaunched driver's executors. Until then a
    load ended on recovery would end before the cluster healed (the job can keep up on fewer executors),
    and the run would not show the heal's effect. True without a fault or without executor events (a
    runtime that reports none), and while a killed worker is not yet restarted: it comes back only with its
    heal, which a kill without ``restart_after`` does at the end of the load (waiting would run out the
    window). A restarted worker is awaited until its new executor is added."""
    alive: dict[str | None, set[str]] = {}
    latest: str | None = None
    before: int | None = None
    down: set[str] = set()
    for e in sorted(timeline, key=lambda e: e.t):
        if e.kind == Kind.FAULT_INJECTED:
            if before is None:
                before = len(alive.get(latest, ()))
            if e.target.startswith("worker-"):
                down.add(e.target)
        elif e.kind == Kind.FAULT_HEALED:
            down.discard(e.target)  # restarted: now its executor is awaited
        elif e.kind in (Kind.EXECUTOR_ADDED, Kind.EXECUTOR_REMOVED):
            app = ExecutorChange.of(e).app_id
            if e.kind == Kind.EXECUTOR_ADDED:
                alive.setdefault(app, set()).add(e.target)
                latest = app
            else:
                alive.get(app, set()).discard(e.target)
    return before is None or bool(down) or len(alive.get(latest, ())) >= before


def faults_of(timeline: Iterable[TimelineEvent]) -> list[FaultRecord]:
    """The fault occurrences of a timeline, in the order they were planned (then injected). An
    injection without a label (a synthetic trace) is an occurrence of its own."""
    records: list[FaultRecord] = []
    by_label: dict[str, FaultRecord] = {}

    def of(label: str | None, kind: str, target: str) -> FaultRecord:
        if label is not None and label in by_label:
            return by_label[label]
        made = label or f"{kind} {target}".strip()
        if label is None and any(r.label == made for r in records):  # several unlabelled ones: told apart
            made = f"{made} #{sum(r.label.split(' #')[0] == made for r in records) + 1}"
        rec = FaultRecord(kind=kind, label=made, target=target)
        records.append(rec)
        if label is not None:
            by_label[label] = rec
        return rec

    for e in sorted(timeline, key=lambda e: e.t):
        if e.kind == Kind.FAULT_PLANNED:
            planned = Planned.of(e)
            rec = of(e.target, planned.fault, "")
            rec.planned_at, rec.occurrence = e.t, planned.occurrence
        elif e.kind == Kind.FAULT_INJECTED:
            inj = Injected.of(e)
            _inject(of(inj.label, inj.fault, e.target), e, inj)
        elif e.kind == Kind.FAULT_HEALED:
            healed = _healed_one(records, by_label, Healed.of(e).label, e.target)
            if healed is not None:
                healed.healed_at = e.t
        elif e.kind in (Kind.FAULT_ERROR, Kind.FAULT_SKIPPED):
            rec, failed = of(e.target, "", ""), FaultFailed.of(e)
            if e.kind == Kind.FAULT_ERROR:
                rec.errors.append(failed.error or "")
            else:
                rec.skipped = failed.reason or ""
    return records


def _inject(rec: FaultRecord, e: TimelineEvent, inj: Injected) -> FaultRecord:
    """``rec`` injected by ``e`` (its typed detail ``inj``)."""
    rec.kind, rec.target, rec.injected_at = inj.fault, e.target, e.t
    rec.confirmed_s, rec.aim, rec.detail = inj.confirmed, Aim.of(inj.aim), inj.measured
    return rec


def _healed_one(records: list[FaultRecord], by_label: dict[str, FaultRecord], label: str | None,
                target: str) -> FaultRecord | None:
    """The occurrence a ``fault_healed`` event ends: by label, else the earliest open one on its target."""
    if label is not None:
        return by_label.get(label)
    return next((r for r in records if r.injected and r.healed_at is None and r.target == target), None)


@dataclass(frozen=True)
class MicroBatch:
    """One micro-batch of a streaming query, from Spark's ``StreamingQueryProgress`` (times on the run's
    clock: the trigger's start and end; ``duration`` in seconds)."""

    query_id: str
    batch_id: int
    start: float
    end: float
    duration: float
    input_rows: int

    @classmethod
    def of(cls, progress: Mapping[str, Any]) -> MicroBatch:
        """From a progress dict as :class:`~pytest_streamchaos.observe.progress.SparkProgress` keeps it
        (Spark's JSON plus ``t_start`` / ``t_end``); Spark's own ISO ``timestamp`` when those are absent."""
        trig = (progress.get("durationMs") or {}).get("triggerExecution")
        duration = math.nan if trig is None else float(trig) / 1000.0
        start = batch_start(progress)
        end = progress.get("t_end")
        end = float(start) + (0.0 if math.isnan(duration) else duration) if end is None else end
        return cls(str(progress.get("id") or ""), int(progress.get("batchId", -1)), float(start), float(end),
                   duration, int(progress.get("numInputRows", -1) or 0))


def batch_start(progress: Mapping[str, Any]) -> float:
    """When a progress dict's micro-batch started (epoch seconds; NaN when unknown): the event log's
    ``t_start``, else Spark's ISO ``timestamp``."""
    start = progress.get("t_start")
    return _iso(progress.get("timestamp")) if start is None else float(start)


def _iso(ts: str | float | None) -> float:
    """A progress timestamp (ISO 8601, or epoch seconds) in epoch seconds; NaN when there is none."""
    if isinstance(ts, str):
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return math.nan
    return math.nan if ts is None else float(ts)


@dataclass(frozen=True)
class Window:
    """A stretch of one history judged on its own (docs/explore.md#one-history): the records sent from
    ``start`` (inclusive) to ``end`` (exclusive; infinite bounds: the history's beginning or end) and the
    faults of ``faults`` (their occurrence labels). ``index`` counts the history's windows from 0; ``name``
    says what ran in it (a schedule in words, a fault's label)."""

    index: int
    name: str = ""
    start: float = -math.inf
    end: float = math.inf
    faults: tuple[str, ...] = ()

    @classmethod
    def of(cls, e: TimelineEvent) -> Window:
        """The window a ``history_window`` event closed."""
        w = WindowClosed.of(e)
        return cls(w.index, w.name, -math.inf if w.start is None else w.start,
                   math.inf if w.end is None else w.end, w.faults)

    def detail(self) -> dict[str, Any]:
        """The ``history_window`` event's detail (JSON: an infinite bound is None)."""
        return {"index": self.index, "name": self.name, "start": self.start if math.isfinite(self.start) else None,
                "end": self.end if math.isfinite(self.end) else None, "faults": list(self.faults)}

    def holds(self, t: float) -> bool:
        """Whether a record sent at ``t`` is this window's."""
        return self.start <= t < self.end


@dataclass(eq=False)
class History:
    """One run's history (see the module docstring). ``topics``: the run's topics (None: a bare
    trace), which the oracle is bound to. ``per_record``: the outputs were read (every input id can be
    tracked); False when they are estimated from Spark's progress (a job whose output cannot be read),
    which leaves no per-record verdict."""

    trace: Trace
    topics: Topics | None = None
    facts: RunFacts = field(default_factory=lambda: RunFacts())
    per_record: bool = True
    #: the window this history is a view of (one schedule of one history): its checkers judge that window's
    #: records and faults against the whole history so far (None: the whole)
    focus: Window | None = None

    @classmethod
    def of(cls, trace: Trace | History, per_record: bool = True) -> History:
        """A history of a bare trace (no topics, no run facts: a synthetic trace, a trace of your own)."""
        return trace if isinstance(trace, History) else cls(trace, per_record=per_record)

    def meta(self) -> dict[str, object]:
        """The run JSON's ``meta`` object as far as the history knows it (:meth:`RunFacts.meta` and the
        topics; empty for a bare trace)."""
        return self.facts.meta(self.topics)

    # -- what was recorded ----------------------------------------------------------------------
    @property
    def sent(self) -> SentRecords:
        return self.trace.sent

    @property
    def outputs(self) -> OutputRecords:
        return self.trace.outputs

    @property
    def timeline(self) -> list[TimelineEvent]:
        return self.trace.timeline

    @property
    def phases(self) -> dict[str, float]:
        """Phase boundaries on the run's clock: ``start``, ``warmup_end``, ``load_end``, ``drain_end``."""
        return self.trace.phases

    @property
    def trigger_seconds(self) -> float:
        return self.trace.trigger_seconds

    @cached_property
    def micro_batches(self) -> list[MicroBatch]:
        """Spark's micro-batches, in the order they were reported."""
        return [MicroBatch.of(b) for b in self.trace.batches]

    @cached_property
    def faults(self) -> list[FaultRecord]:
        """The fault occurrences (planned, injected, healed, aimed, failed), from the timeline."""
        return faults_of(self.trace.timeline)

    @cached_property
    def windows(self) -> list[Window]:
        """The windows of one history, as the runner closed them (``history_window`` events), in order; empty
        for a run that did not mark any (its windows are its faults': ``analysis.windows``)."""
        found = {w.index: w for w in (Window.of(e) for e in self.trace.timeline if e.kind == Kind.HISTORY_WINDOW)}
        return [found[i] for i in sorted(found)]

    def focused(self, window: Window | None) -> History:
        """This history as the view of ``window`` (None: the whole)."""
        return replace(self, focus=window)

    @property
    def focused_faults(self) -> list[FaultRecord]:
        """The fault occurrences of the focus window (every one without a focus)."""
        if self.focus is None:
            return self.faults
        labels = set(self.focus.faults)
        return [f for f in self.faults if f.label in labels]

    def injected(self, kinds: Iterable[str] = (Kind.FAULT_INJECTED,)) -> list[FaultRecord]:
        """The faults that took effect, in injection order. ``kinds``: the timeline kinds that count as an
        injection (``MetricParams.fault_kinds``); each event of a kind other than ``fault_injected`` is a
        fault of its own (its kind, target and time)."""
        kinds = set(kinds)
        found = [f for f in self.faults if f.injected] if Kind.FAULT_INJECTED in kinds else []
        found += [_inject(FaultRecord(e.kind, f"{e.kind} {e.target}".strip()), e, Injected.of(e))
                  for e in self.timeline if e.kind in kinds and e.kind != Kind.FAULT_INJECTED]
        return sorted(found, key=lambda f: f.injected_at or 0.0)

    def batch_at(self, t: float) -> MicroBatch | None:
        """The micro-batch that was running at ``t`` (its trigger's start to its end), None between
        batches: where a fault fired on the clock landed."""
        return next((b for b in self.micro_batches if b.start <= t <= b.end), None)

    def phase(self, name: str) -> float | None:
        """The time a phase ended (``warmup_end`` ...), None if the run did not get there."""
        return self.trace.phases.get(name)


__all__ = ["Aim", "FaultRecord", "History", "MicroBatch", "Window", "faults_of"]
