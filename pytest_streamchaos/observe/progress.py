"""Spark progress capture: micro-batch progress and executor/driver events of a running job.

Two sources, both readable from the pytest process while the job runs and across driver restarts:

* the driver's **event log** (``spark.eventLog.dir``, JSON lines, one file per application, i.e. per
  driver launch). Spark 3.x/4 writes the StreamingQueryListener events into it
  (``org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent`` with the full
  StreamingQueryProgress), next to ``SparkListenerExecutorAdded/Removed`` and
  ``SparkListenerApplicationStart/End``. :class:`EventLogTailer` reads new complete lines of every
  file incrementally; :class:`SparkProgress` turns them into ``Trace.batches`` dicts and
  :class:`~pytest_streamchaos.records.TimelineEvent` objects.
  The launcher writes plain files (``spark.eventLog.compress=false``,
  ``spark.eventLog.rolling.enabled=false``; Spark 4 defaults to zstd-compressed rolling logs, which
  cannot be tailed while written).
* the query's **checkpoint directory**: ``offsets/N`` is written before batch N runs, ``commits/N``
  after its sink finished. :class:`CheckpointWatcher` answers "what is planned / committed now",
  which is what a fault aimed at "output visible but batch not yet committed" needs.

All times are epoch seconds (the driver runs on this machine, so its clock is the run clock).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypedDict

from pytest_streamchaos import events
from pytest_streamchaos.events import Kind, StrEnum, listened_kind
from pytest_streamchaos.observe.output_names import OutputKind
from pytest_streamchaos.observe.paths import LOCAL_FS, DriverDirs
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import BatchProgress, TimelineEvent

EV_PROGRESS = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"
EV_QUERY_STARTED = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent"
EV_QUERY_TERMINATED = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryTerminatedEvent"
EV_QUERY_IDLE = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryIdleEvent"
EV_SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
#: a Spark Connect server's session events (its listener bus writes them to the event log), as timeline kinds
#: a batch DataFrameWriter's file write in a SQL execution's plan: its output directory
_FILE_WRITE = re.compile(r"Execute InsertIntoHadoopFsRelationCommand\n(?:Input[^\n]*\n)?Arguments: ([^,\s]+)")
#: a batch DataFrameWriter's Delta write (``df.write.format("delta").save(path)``): the table's path
_DELTA_WRITE = re.compile(r"SaveIntoDataSourceCommand\nArguments: org\.apache\.spark\.sql\.delta\.sources\."
                          r"DeltaDataSource@\w+, \[path=([^,\]]+)")
#: a streaming query's batch in a SQL execution's description (``<name>\nid = <id>\nrunId = ...\nbatch = <n>``)
_QUERY_BATCH = re.compile(r"\bid = ([0-9a-f-]{36})\n(?:.*\n)*?batch = (\d+)")

_INPROGRESS = ".inprogress"
_COMPRESSED = (".zstd", ".lz4", ".lzf", ".snappy", ".gz")


#: ``SparkListenerExecutorAdded``'s ``Executor Info``
ExecutorInfo = TypedDict("ExecutorInfo", {"Host": str, "Total Cores": int}, total=False)
#: ``SparkListenerTaskEnd``'s ``Task End Reason`` (``Reason``: ``Success``, ``ExceptionFailure``, ...)
TaskEndReason = TypedDict("TaskEndReason", {"Reason": str, "Class Name": str, "Description": str}, total=False)
#: ``SparkListenerTaskEnd``'s ``Task Info``
TaskInfo = TypedDict("TaskInfo", {"Finish Time": int, "Executor ID": str, "Attempt": int}, total=False)
#: one line of Spark's event log: a listener event, its class in ``Event``; only the fields read here. The keys
#: with a space are Spark's own (``App ID``); the shapes of the nested sections follow.
SparkEvent = TypedDict("SparkEvent", {
    "Event": str, "Timestamp": int, "App ID": str, "App Name": str, "ExitCode": int,
    "Executor ID": str, "Executor Info": ExecutorInfo, "Removed Reason": str, "Stage ID": int,
    "Task End Reason": TaskEndReason, "Task Info": TaskInfo,
    #: an environment event's properties: ``{key: value}``, or ``[[key, value], ...]`` in older logs
    "Spark Properties": Any, "System Properties": Any, "Hadoop Properties": Any,
    # the StreamingQueryListener events (``progress``: :class:`~pytest_streamchaos.records.BatchProgress`)
    "timestamp": str, "id": str, "runId": str, "name": str, "exception": str, "progress": BatchProgress,
    # a Connect server's session events, a SQL execution's start
    "eventTime": int, "sessionId": str, "userId": str, "physicalPlanDescription": str, "description": str,
    "time": int,
}, total=False)


class BatchWrite(TypedDict):
    """A file or Delta write a streaming query's batch made with a batch ``DataFrameWriter`` (``foreachBatch``)."""

    query_id: str
    batch: int
    path: str
    t: float
    format: OutputKind


class EventLogError(RuntimeError):
    """The event log cannot be read (e.g. it is compressed). The message names the fix."""


def _props(props: object) -> dict[str, object]:
    """A properties section of an environment event (older event logs: ``[[key, value], ...]``)."""
    if isinstance(props, list):
        return {p[0]: p[1] for p in props if isinstance(p, list) and len(p) == 2}
    return dict(props) if isinstance(props, dict) else {}


def parse_spark_time(value: str | None) -> float | None:
    """Epoch seconds of a StreamingQueryProgress ``timestamp`` (``2026-11-21T16:34:03.842Z``)."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _app_of(key: str) -> str:
    return key.split("/")[0].removeprefix("eventlog_v2_")


@dataclass
class _LogFile:
    key: str  #: the application id (file name without ``.inprogress``), or ``dir/events_N``
    path: Path
    offset: int = 0


#: the totals of a batch the event log leaves out (sums over its sources), and a source's offsets (JSON text there)
_TOTALS: tuple[Literal["numInputRows", "inputRowsPerSecond", "processedRowsPerSecond"], ...] = (
    "numInputRows", "inputRowsPerSecond", "processedRowsPerSecond")
_OFFSETS: tuple[Literal["startOffset", "endOffset", "latestOffset"], ...] = ("startOffset", "endOffset", "latestOffset")


def _normalise(progress: BatchProgress) -> None:
    """Make an event-log progress dict look like ``StreamingQueryProgress.json``.

    The event log serialises the progress object field by field: the derived totals
    (``numInputRows``, ``inputRowsPerSecond``, ``processedRowsPerSecond`` -- sums over the sources)
    are missing and source offsets are JSON *strings*. Add the totals and parse the offsets.
    """
    sources = progress.get("sources") or []
    for total in _TOTALS:
        if total not in progress:
            progress[total] = sum((src.get(total) or 0) for src in sources)
    for src in sources:
        for key in _OFFSETS:
            value = src.get(key)
            if isinstance(value, str):
                try:
                    src[key] = json.loads(value)
                except ValueError:
                    pass  # a source-specific non-JSON offset: keep the text


class EventLogTailer:
    """Incrementally reads the JSON-lines event logs in one directory.

    Every application (driver launch) writes ``<app-id>.inprogress``, renamed to ``<app-id>`` when
    the driver stops cleanly (a killed driver leaves the ``.inprogress`` file). The tailer follows a
    file across that rename by its application id, returns only complete lines, and so can be polled
    at any time. Uncompressed rolling logs (``eventlog_v2_<app-id>/events_<n>_<app-id>``) are
    followed too.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(str(directory).removeprefix("file://").removeprefix("file:"))
        self._files: dict[str, _LogFile] = {}
        self._order: list[str] = []  # application keys in discovery order (== launch order)

    @property
    def app_ids(self) -> list[str]:
        """Application ids seen so far, in launch order."""
        return list(dict.fromkeys(_app_of(k) for k in self._order))

    def _discover(self) -> None:
        if not self.directory.is_dir():
            return
        entries = sorted(self.directory.iterdir(), key=lambda p: (p.stat().st_mtime if p.exists() else 0, p.name))
        for p in entries:
            name = p.name
            if name.startswith("."):
                continue
            if p.is_dir() and name.startswith("eventlog_v2_"):
                self._discover_rolling(p)
                continue
            if name.endswith(_COMPRESSED) or ".zstd" in name or ".lz4" in name:
                raise EventLogError(
                    f"event log {p} is compressed and cannot be tailed while written; "
                    "set spark.eventLog.compress=false (the JobLauncher does)"
                )
            key = name.removesuffix(_INPROGRESS)
            known = self._files.get(key)
            if known is None:
                self._files[key] = _LogFile(key, p)
                self._order.append(key)
            elif known.path != p and not known.path.exists():
                known.path = p  # renamed from .inprogress on a clean stop; keep our offset

    def _discover_rolling(self, d: Path) -> None:
        parts = []
        for f in d.iterdir():
            m = re.match(r"events_(\d+)_(.*)$", f.name)
            if not m:
                continue
            if f.name.endswith(_COMPRESSED):
                raise EventLogError(
                    f"event log {f} is compressed and cannot be tailed while written; "
                    "set spark.eventLog.compress=false (the JobLauncher does)"
                )
            parts.append((int(m.group(1)), f))
        for index, f in sorted(parts):
            key = f"{d.name}/{index}"
            if key not in self._files:
                self._files[key] = _LogFile(key, f)
                self._order.append(key)

    def poll(self) -> list[tuple[str, SparkEvent]]:
        """New events since the last call, as ``(app_key, event)`` pairs in file order."""
        self._discover()
        out: list[tuple[str, SparkEvent]] = []
        for key in self._order:
            lf = self._files[key]
            try:
                with open(lf.path, "rb") as fh:
                    fh.seek(lf.offset)
                    chunk = fh.read()
            except FileNotFoundError:
                # Renamed between discovery and open: pick the new name up next time.
                alt = lf.path.with_name(lf.path.name.removesuffix(_INPROGRESS))
                if alt != lf.path and alt.exists():
                    lf.path = alt
                continue
            end = chunk.rfind(b"\n")
            if end < 0:
                continue  # no complete line yet
            lf.offset += end + 1
            app = _app_of(key)
            for line in chunk[: end + 1].splitlines():
                if not line.strip():
                    continue
                try:
                    out.append((app, json.loads(line)))
                except ValueError:
                    continue  # a torn line of a killed driver; Spark's own history server skips them too
        return out


def _own_time(ev: SparkEvent) -> float | None:
    """An event's own time (its ``Timestamp``, epoch ms), in epoch seconds; None when it has none."""
    ts = ev.get("Timestamp")
    return ts / 1000.0 if isinstance(ts, (int, float)) else None


def _known_by(events: list[tuple[str, SparkEvent]], read_at: float) -> list[float]:
    """For each event, the own time of the next event of the same application that has one, else
    ``read_at``: the earliest instant by which it is known to have happened."""
    out = [read_at] * len(events)
    later: dict[str, float] = {}
    for i in range(len(events) - 1, -1, -1):
        app, ev = events[i]
        out[i] = later.get(app, read_at)
        own = _own_time(ev)
        if own is not None:
            later[app] = own
    return out


class SparkProgress:
    """Micro-batch progress and driver/executor events of one job, from its event-log directory.

    Call :meth:`poll` whenever you want fresh data (it is cheap: it reads only new bytes).

    ``batches``: one dict per ``QueryProgressEvent`` in arrival order -- Spark's StreamingQueryProgress
    JSON (``batchId``, ``timestamp``, ``numInputRows``, ``durationMs``, ``sources`` with
    ``startOffset``/``endOffset``, ...) plus ``t_start``/``t_end`` (epoch seconds of the trigger and
    of its end) and ``app_id`` (which driver launch ran it). A batch re-run after a driver restart
    appears twice, once per launch.

    ``timeline``: :class:`TimelineEvent` of kind ``driver_started`` / ``driver_stopped`` (per
    application), ``query_started`` / ``query_terminated``, ``executor_added`` / ``executor_removed``
    (target ``executor-<id>``; detail has ``app_id``, ``host``/``cores`` or ``reason``), and
    ``task_failed`` (a task ended by an exception: its class and the first line of its message), and on a
    Spark Connect server its sessions: ``connect_session_started`` / ``_closed`` -- a listener event a backend
    names a kind of its own after (``events.listened_kind``: Spark Connect's ``ConnectKind``).

    ``writes``: the files a streaming query's batches wrote with a batch ``DataFrameWriter`` (in
    ``foreachBatch``), ``{"query_id", "batch", "path", "t"}`` per write (:mod:`.sinks`).
    """

    def __init__(self, event_log_dir: str | os.PathLike) -> None:
        self.tailer = EventLogTailer(event_log_dir)
        self.batches: list[BatchProgress] = []
        self.timeline: list[TimelineEvent] = []
        self.app_ids: list[str] = []
        self.live_executors: dict[tuple[str, str], float] = {}
        #: executors already reported removed: on YARN the timeline showed a lost NodeManager's executor
        #: removed twice, and an executor id is never reused within an application
        self._removed: set[tuple[str, str]] = set()
        #: ``spark.master`` of each application as the driver actually ran it (a job may set its own
        #: ``.master("local[3]")`` in code, which overrides the one the plugin passed)
        self.masters: dict[str, str] = {}
        #: where each application's driver resolves relative paths: its JVM's working directory
        #: (``user.dir``) and its default filesystem (``fs.defaultFS``), as its environment event says
        self.drivers: dict[str, DriverDirs] = {}
        self.writes: list[BatchWrite] = []

    def poll(self) -> int:
        """Consume new events; return how many were read.

        An event without a time of its own (Spark's ``QueryTerminatedEvent`` has none) is stamped at the
        earliest instant it is known to have happened by: the time of the next event of its application
        that has one (the log is written in order), else the moment it was read. Never the time of the
        event before it: a query that failed because the NameNode was killed would then be stamped
        before the kill -- an effect before its cause."""
        events = self.tailer.poll()
        for (app, ev), known_by in zip(events, _known_by(events, time.time()), strict=True):
            self._handle(app, ev, known_by)
        return len(events)

    def _handle(self, app: str, ev: SparkEvent, known_by: float) -> None:
        kind = ev.get("Event", "")
        own = _own_time(ev)
        t = own if own is not None else known_by
        if kind == "SparkListenerApplicationStart":
            app_id = ev.get("App ID") or app
            if app_id not in self.app_ids:
                self.app_ids.append(app_id)
            self._add(t, app, Kind.DRIVER_STARTED, "driver", {"app_id": app_id, "app_name": ev.get("App Name")})
        elif kind == "SparkListenerEnvironmentUpdate":
            self._environment(app, ev)
        elif kind == "SparkListenerApplicationEnd":
            self._add(t, app, Kind.DRIVER_STOPPED, "driver", {"app_id": app, "exit_code": ev.get("ExitCode")})
        elif kind == "SparkListenerExecutorAdded":
            exec_id = str(ev.get("Executor ID"))
            if exec_id == "driver":  # local mode's in-driver executor, not a separate process
                return
            info = ev.get("Executor Info") or {}
            self.live_executors[(app, exec_id)] = t
            self._add(t, app, Kind.EXECUTOR_ADDED, f"executor-{exec_id}",
                      {"app_id": app, "host": info.get("Host"), "cores": info.get("Total Cores")})
        elif kind == "SparkListenerExecutorRemoved":
            exec_id = str(ev.get("Executor ID"))
            self.live_executors.pop((app, exec_id), None)
            if (app, exec_id) in self._removed:
                return
            self._removed.add((app, exec_id))
            self._add(t, app, Kind.EXECUTOR_REMOVED, f"executor-{exec_id}",
                      {"app_id": app, "reason": ev.get("Removed Reason")})
        elif kind == "SparkListenerTaskEnd":
            self._task_end(t, app, ev)
        elif kind == EV_QUERY_STARTED:
            t = parse_spark_time(ev.get("timestamp")) or t
            self._add(t, app, Kind.QUERY_STARTED, "query",
                      {"app_id": app, "id": ev.get("id"), "run_id": ev.get("runId"), "name": ev.get("name")})
        elif kind == EV_QUERY_TERMINATED:
            self._add(t, app, Kind.QUERY_TERMINATED, "query",
                      {"app_id": app, "id": ev.get("id"), "run_id": ev.get("runId"),
                       "exception": ev.get("exception")})
        elif kind == EV_SQL_START:
            self._sql_start(t, ev)
        elif kind == EV_PROGRESS:
            progress = (ev.get("progress") or BatchProgress()).copy()
            start = parse_spark_time(progress.get("timestamp"))
            if start is None:
                return
            duration = progress.get("batchDuration")
            if duration is None:
                duration = (progress.get("durationMs") or {}).get("triggerExecution", 0)
            _normalise(progress)
            progress["t_start"] = start
            progress["t_end"] = start + duration / 1000.0
            progress["app_id"] = app
            self.batches.append(progress)
        elif (backend_kind := listened_kind(str(kind))) is not None:
            self._listened(t, app, backend_kind, ev)

    def _environment(self, app: str, ev: SparkEvent) -> None:
        """The driver's master as it ran (:attr:`masters`) and where it resolves paths (:attr:`drivers`)."""
        props = _props(ev.get("Spark Properties"))
        if "spark.master" in props:
            self.masters[app] = str(props["spark.master"])
        cwd = _props(ev.get("System Properties")).get("user.dir")
        if cwd:
            default_fs = _props(ev.get("Hadoop Properties")).get("fs.defaultFS") or LOCAL_FS
            self.drivers[app] = DriverDirs(str(cwd), str(default_fs))

    def _listened(self, t: float, app: str, kind: StrEnum, ev: SparkEvent) -> None:
        """A listener event a backend records as its own kind (a Connect server's session started): at its own
        ``eventTime`` (epoch ms) when it has one, its target what the kind is of (``connect-session``), its detail
        the event's own fields in snake case (``session_id``, ``user_id``)."""
        at = ev.get("eventTime")
        detail = {events.snake(k): v for k, v in ev.items() if k not in ("Event", "eventTime")}
        self._add(at / 1000.0 if isinstance(at, (int, float)) else t, app, kind,
                  "-".join(str(kind).split("_")[:-1]), {"app_id": app, **detail})

    def _sql_start(self, t: float, ev: SparkEvent) -> None:
        """A file or Delta write run by a streaming query's batch (``foreachBatch``): where it went (``format``:
        an :class:`~.output_names.OutputKind`, ``file`` or ``delta``)."""
        plan = str(ev.get("physicalPlanDescription") or "")
        write = _FILE_WRITE.search(plan) if "InsertIntoHadoopFsRelationCommand" in plan else None
        delta = _DELTA_WRITE.search(plan) if write is None and "DeltaDataSource" in plan else None
        found = write or delta
        batch = _QUERY_BATCH.search(str(ev.get("description") or "")) if found else None
        if found and batch:
            self.writes.append({"query_id": batch.group(1), "batch": int(batch.group(2)), "path": found.group(1),
                                "t": (ev.get("time") or 0) / 1000.0 or t,
                                "format": OutputKind.DELTA if delta else OutputKind.FILE})

    def _task_end(self, t: float, app: str, ev: SparkEvent) -> None:
        """A task that failed with an exception (a Kafka fetch that timed out, a poison record): the
        system noticed something. Successful tasks and tasks killed on purpose leave no event."""
        reason = ev.get("Task End Reason") or {}
        if reason.get("Reason") != "ExceptionFailure":
            return
        info = ev.get("Task Info") or {}
        t = (info.get("Finish Time") or 0) / 1000.0 or t
        message = str(reason.get("Description") or "").splitlines()[0][:300] if reason.get("Description") else ""
        self._add(t, app, Kind.TASK_FAILED, f"executor-{info.get('Executor ID')}",
                  {"app_id": app, "exception": reason.get("Class Name"), "message": message,
                   "stage": ev.get("Stage ID"), "attempt": info.get("Attempt")})

    def _add(self, t: float, app: str, kind: Kind | StrEnum, target: str, detail: dict[str, Any]) -> None:
        self.timeline.append(TimelineEvent(t=t, kind=kind, target=target, detail=detail))

    # -- convenience -------------------------------------------------------------------------------

    def last_batch_id(self) -> int | None:
        """The highest ``batchId`` reported so far (None before the first progress event)."""
        return max((b["batchId"] for b in self.batches), default=None)

    def wait_for(self, predicate: Callable[[SparkProgress], bool], timeout: float, what: str,
                 interval: float = 0.25) -> None:
        """Poll until ``predicate(self)`` holds; raise ``TimeoutError`` naming ``what`` and the last state."""

        def holds() -> bool:
            self.poll()
            return bool(predicate(self))

        def timed_out(_: bool) -> TimeoutError:
            return TimeoutError(
                f"timed out after {timeout:.0f}s waiting for {what}; last seen: apps={self.app_ids}, "
                f"{len(self.batches)} progress events (last batchId {self.last_batch_id()}), "
                f"timeline kinds {[str(e.kind) for e in self.timeline[-5:]]} in {self.tailer.directory}"
            )

        poll(holds, timeout, timed_out, interval=interval)
