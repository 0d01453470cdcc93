"""Where each streaming query of a job writes, from Spark's own reports, and whether the run can read it.

Every ``StreamingQueryProgress`` names its query's sink (``sink.description``): the console
(``...ConsoleTable$@...``), ``MemorySink``, ``NoopTable``, ``ForeachWriterTable(...)``,
``ForeachBatchSink``, Kafka (``...KafkaSourceProvider$KafkaTable@...``), the file sink
(``FileSink[<path>]``) or Delta Lake's (``DeltaSink[<path>]``). What a ``foreachBatch`` function
writes with the batch ``DataFrameWriter`` shows in the event log as a SQL execution of that query and
batch (``InsertIntoHadoopFsRelationCommand <path>``, see :class:`~.progress.SparkProgress`). So the first
micro-batch tells the run whether the collector can read the job's output at all, instead of a 120 s
wait for output that cannot come.

:func:`judge` makes that call for a run without ``outputs=`` (the collector reads the run's own
output topic): the console, memory, ``noop`` and ``foreach`` sinks are never readable, and the run
measures what Spark's progress gives (``outputs={}``); files it can read but was not told about are
refused, naming the exact ``outputs=``. Pure: the runner feeds it what it observed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_streamchaos.events import StrEnum
from pytest_streamchaos.observe.output_names import OutputKind, output_path
from pytest_streamchaos.observe.progress import BatchWrite
from pytest_streamchaos.records import BatchProgress


class SinkKind(StrEnum):
    """Where a query writes, as its sink's description names it (:func:`classify`); the string is what the run's
    JSON and the ``outputs_unreadable`` event carry."""

    CONSOLE = "console"
    MEMORY = "memory"
    NOOP = "noop"
    FOREACH = "foreach"
    FOREACH_BATCH = "foreachBatch"
    KAFKA = "kafka"
    FILE = "file"
    DELTA = "delta"
    OTHER = "other"


#: sinks whose output no collector can read (a ``foreach`` writer or a ``foreachBatch`` function may write
#: anywhere, the run's output topic included: they are judged by what reached it)
UNREADABLE = (SinkKind.CONSOLE, SinkKind.MEMORY, SinkKind.NOOP)
#: sinks that write where the code says: silent after :data:`GRACE_S`, they wrote nothing the run reads
OPAQUE = (SinkKind.FOREACH, SinkKind.FOREACH_BATCH, SinkKind.OTHER)
#: sinks that write to a directory their description names (``FileSink[<path>]``)
_AT_PATH = (SinkKind.FILE, SinkKind.DELTA)
_KINDS = (("ConsoleTable", SinkKind.CONSOLE), ("MemorySink", SinkKind.MEMORY), ("NoopTable", SinkKind.NOOP),
          ("ForeachWriterTable", SinkKind.FOREACH), ("ForeachBatchSink", SinkKind.FOREACH_BATCH),
          ("KafkaTable", SinkKind.KAFKA), ("KafkaSink", SinkKind.KAFKA), ("FileSink[", SinkKind.FILE),
          ("DeltaSink[", SinkKind.DELTA))
_LABELS = {SinkKind.CONSOLE: "the console", SinkKind.MEMORY: "the memory sink", SinkKind.NOOP: "the noop sink",
           SinkKind.FOREACH: "a foreach writer", SinkKind.FOREACH_BATCH: "foreachBatch", SinkKind.KAFKA: "Kafka",
           SinkKind.FILE: "files", SinkKind.DELTA: "a Delta table", SinkKind.OTHER: "a sink the run does not know"}
#: how long after its first micro-batch with input a query's silence is judged (a sink writes a batch's
#: output before the batch ends, so this is the collector's lag with a wide margin)
GRACE_S = 5.0
#: how long after the latest of a job's queries started the run waits for another one before it judges the
#: job's sinks: a job starts its queries one after another (``start()``, ``start()``, then
#: ``awaitAnyTermination()``), each within a few seconds of the one before
STARTS_SETTLE_S = 10.0


def classify(description: str) -> tuple[SinkKind, str | None]:
    """``(kind, path)`` of a sink description (path: the directory of a file or Delta sink; ``OTHER``: a sink the
    run does not know)."""
    for marker, kind in _KINDS:
        if marker in description:
            if kind in _AT_PATH:
                m = re.search(re.escape(marker) + r"(.*)\]", description)
                return kind, m.group(1) if m else None
            return kind, None
    return SinkKind.OTHER, None


def write_root(path: str, batch: int | None = None) -> str:
    """The directory a batch write's path belongs to: ``lake/views/batch=7`` -> ``lake/views``, and a
    directory named after the batch id (``out/7``) likewise."""
    parts = path.rstrip("/").split("/")
    while len(parts) > 1 and ("=" in parts[-1] or (batch is not None and parts[-1] == str(batch))):
        parts.pop()
    return "/".join(parts)


@dataclass
class QuerySink:
    """One streaming query and where it writes."""

    query_id: str
    name: str | None
    description: str
    kind: SinkKind
    path: str | None = None  #: the file sink's directory
    writes: list[str] = field(default_factory=list)  #: directories its foreachBatch wrote files to
    tables: list[str] = field(default_factory=list)  #: Delta tables its foreachBatch appended to
    output_rows: int = 0  #: rows its sink reported (V2 sinks; -1: not reported, e.g. foreachBatch)
    stateful: bool = False  #: it keeps state (aggregation, join): its output may lag its input
    first_input_end: float | None = None  #: when its first micro-batch with input ended
    first_start: float | None = None  #: when its first reported micro-batch started

    def paths(self) -> list[str]:
        """Every path it is seen writing: its sink's (as the job wrote it), its ``foreachBatch`` writes'."""
        return ([self.path] if self.path else []) + self.writes + self.tables

    @property
    def label(self) -> str:
        """``query 'name'`` or ``query <id prefix>``."""
        return f"query {self.name!r}" if self.name else f"query {self.query_id[:8]}"

    def where(self) -> str:
        """What it writes to, for a person."""
        text = _LABELS.get(self.kind, self.kind)
        if self.path:
            text += f" in {self.path}"
        if self.writes:
            text += f" (writing files to {', '.join(self.writes)})"
        if self.tables:
            text += f" (writing Delta tables {', '.join(self.tables)})"
        return text

    def to_dict(self) -> dict[str, object]:
        return {"query": self.name, "id": self.query_id, "kind": str(self.kind), "description": self.description,
                "path": self.path, "writes": list(self.writes), "tables": list(self.tables)}


def query_sinks(batches: list[BatchProgress], writes: list[BatchWrite]) -> list[QuerySink]:
    """The sink of every query seen in ``batches`` (progress dicts), in order of first progress, with
    the files each query's batches wrote (``writes``: ``{"query_id", "batch", "path"}``)."""
    out: dict[str, QuerySink] = {}
    for b in batches:
        qid = str(b.get("id") or "")
        desc = str((b.get("sink") or {}).get("description") or "")
        q = out.get(qid)
        if q is None:
            kind, path = classify(desc)
            q = out[qid] = QuerySink(qid, b.get("name") or None, desc, kind, path)
        rows = (b.get("sink") or {}).get("numOutputRows")
        q.output_rows = -1 if rows is None or rows < 0 else q.output_rows + int(rows)
        q.stateful = q.stateful or bool(b.get("stateOperators"))
        if q.first_input_end is None and (b.get("numInputRows") or 0) > 0:
            q.first_input_end = b.get("t_end")
        if q.first_start is None:
            q.first_start = b.get("t_start")
    for w in writes:
        q = out.get(str(w.get("query_id")))
        if q is None:
            continue
        if w.get("format") == OutputKind.DELTA:
            if str(w["path"]) not in q.tables:
                q.tables.append(str(w["path"]))
            continue
        root = write_root(str(w["path"]), w.get("batch"))
        if root not in q.writes:
            q.writes.append(root)
    return list(out.values())


@dataclass
class SinkVerdict:
    """What the run does about its outputs: ``wait`` (nothing known yet), ``read`` (the collector
    reads them), ``progress_only`` (measure from Spark's progress; ``message`` says so in one line)
    or ``refuse`` (``message`` names the ``outputs=`` to write)."""

    action: str
    message: str = ""
    dirs: list[str] = field(default_factory=list)  #: ``refuse``: the directories to name in ``outputs=``


def judge(sinks: list[QuerySink], outputs_seen: int, now: float, output_topic: str | None,
          grace: float = GRACE_S, bases: tuple[str, ...] = (),
          starts: Mapping[str, float] | None = None) -> SinkVerdict:
    """For a run without ``outputs=``: can the collector (reading ``output_topic``) read the job?
    ``bases``: directories the job's relative paths resolve against (its working directory, its HDFS
    home): a path under one is named relative to it, as the job wrote it. ``starts``: when each query of the
    job started; nothing is decided before they all reported their sinks (:func:`all_started`)."""
    if outputs_seen > 0:
        return SinkVerdict("read")
    if not sinks or not all_started(sinks, starts or {}, now):
        return SinkVerdict("wait")
    if all(q.kind in UNREADABLE for q in sinks):
        where = "; ".join(f"{q.label} writes to {q.where()}" for q in sinks)
        return SinkVerdict("progress_only", f"{where}, which the run cannot read: it measures downtime and recovery "
                                            "from Spark's progress only, with no per-record verdict (as with "
                                            "outputs={}); for one, write to Kafka or files and name them in "
                                            "outputs={...}")
    judged = [q for q in sinks if q.first_input_end is not None and now - q.first_input_end >= grace]
    tables = [q for q in sinks if q.kind == SinkKind.DELTA and q.path] + [q for q in judged if q.tables]
    if tables and not any(q.kind == SinkKind.KAFKA for q in sinks):
        dirs = list(dict.fromkeys(relative(d, bases) for q in tables for d in (q.tables or [q.path or ""])))
        return SinkVerdict("refuse", _name_files(tables, dirs, OutputKind.DELTA), dirs)
    files = [q for q in sinks if q.kind == SinkKind.FILE and q.path]
    files += [q for q in judged if q.kind != SinkKind.FILE and q.writes]
    if files and not any(q.kind == SinkKind.KAFKA for q in sinks):
        dirs = list(dict.fromkeys(relative(d, bases) for q in files for d in (q.writes or [q.path or ""])))
        return SinkVerdict("refuse", _name_files(files, dirs), dirs)
    if any(q.kind == SinkKind.KAFKA and q.output_rows > 0 for q in judged):
        return SinkVerdict("refuse", f"the job writes to Kafka, but nothing came to the run's output topic "
                                     f"{output_topic}: name the topic it writes: outputs={{'<topic>': 'key' or "
                                     "'<JSON field with the input id>'}}")
    silent = [q for q in judged if q.kind in OPAQUE and not q.stateful]
    if silent and len(judged) == len(sinks) and all(q.kind in UNREADABLE or q in silent for q in sinks):
        where = "; ".join(f"{q.label} writes to {q.where()}" for q in sinks)
        return SinkVerdict("progress_only", f"{where}; nothing came to the run's output topic {output_topic} "
                                            f"within {grace:g}s of the first micro-batch with input, so the run "
                                            "measures downtime and recovery from Spark's progress only, with no "
                                            "per-record verdict (as with outputs={}); for one, name where the "
                                            "job writes in outputs={...}")
    return SinkVerdict("wait")


def all_started(sinks: list[QuerySink], starts: Mapping[str, float], now: float,
                settle: float = STARTS_SETTLE_S) -> bool:
    """Whether the job's queries are all known: every query that started (``starts``: query id -> when its
    ``query_started`` came, from Spark's event log) has reported its sink, and ``settle`` seconds passed since
    the latest start -- a job starts its queries one after another, so one that is still to come starts within
    seconds of the one before (a query seen only in progress counts from its first micro-batch)."""
    reported = {q.query_id for q in sinks}
    if not sinks or any(qid not in reported for qid in starts):
        return False
    times = [*starts.values(), *(q.first_start for q in sinks if q.query_id not in starts and q.first_start)]
    return not times or now - max(times) >= settle


def could_write(q: QuerySink, output: str, resolve: Callable[[str], str]) -> bool:
    """Whether query ``q`` can be writing ``output`` (an ``outputs=`` name): a ``foreach`` writer, a
    ``foreachBatch`` function or an unknown sink may write anywhere; Kafka's sink any topic; the file and Delta
    sinks their path, compared as the driver resolves both (``resolve``: :func:`~.paths.qualify` with its dirs)."""
    if q.kind in OPAQUE:
        return True
    path = output_path(output)
    if path is None:
        return q.kind == SinkKind.KAFKA
    target = resolve(path)
    return any(resolve(p) == target for p in q.paths())


def judge_named(sinks: list[QuerySink], outputs: Sequence[str], starts: Mapping[str, float], *, seen: bool,
                now: float, resolve: Callable[[str], str], settle: float = STARTS_SETTLE_S) -> SinkVerdict:
    """For a run that names its outputs (``outputs=``): ``read`` once output of them was read (``seen``) or
    every one can be among what the reported queries write; else ``wait`` while a query may still be to come
    (:func:`all_started`), then ``refuse`` in one line: a named output that none of the job's queries writes,
    and what each query writes."""
    missing = [o for o in outputs if not any(could_write(q, o, resolve) for q in sinks)]
    if seen or (sinks and not missing):  # a query still to come can add writers, never take one away
        return SinkVerdict("read")
    if not all_started(sinks, starts, now, settle):
        return SinkVerdict("wait")
    where = "; ".join(f"{q.label} writes to {q.where()}" for q in sinks)
    if all(q.kind in UNREADABLE for q in sinks):
        return SinkVerdict("refuse", f"outputs= names {', '.join(outputs)}, but {where}: nothing there can be read; "
                                     "pass outputs={} for a run from Spark's progress")
    named = ", ".join(_resolved(o, resolve) for o in missing)
    return SinkVerdict("refuse", f"outputs= names {named}, which no query of the job writes: {where}; "
                                 f"name what it writes, e.g. outputs={_example(sinks)}")


def _resolved(output: str, resolve: Callable[[str], str]) -> str:
    """``delta:data/bronze (file:///w/jobs/j/data/bronze)``: a path output with where the driver puts it."""
    path = output_path(output)
    return output if path is None or resolve(path) == path else f"{output} ({resolve(path)})"


def _example(sinks: list[QuerySink]) -> str:
    """An ``outputs=`` that names what the first readable query writes, as the job spells it."""
    for q in sinks:
        kind = (OutputKind.DELTA if q.kind == SinkKind.DELTA or q.tables else
                OutputKind.FILE if q.kind == SinkKind.FILE or q.writes else None)
        if kind is not None:
            return f"{{'{kind}:{q.paths()[0]}': '<{_id_field(kind)} with the input id>'}}"
    return "{'<topic>': 'key' or '<JSON field with the input id>'}"


def relative(path: str, bases: tuple[str, ...]) -> str:
    """``path`` (a URL or a path) relative to the first of ``bases`` it is under, else as a plain path
    (``file:`` taken off)."""
    plain = re.sub(r"^file:(//)?", "", path)
    for base in bases:
        b = re.sub(r"^file:(//)?", "", base).rstrip("/")
        if plain.startswith(b + "/"):
            return plain[len(b) + 1:]
    return plain


def _id_field(kind: OutputKind) -> str:
    """What holds the input id in an output of ``kind``: a Delta table's column, a file's (JSON) field."""
    return "column" if kind == OutputKind.DELTA else "field"


def _name_files(queries: list[QuerySink], dirs: list[str], kind: OutputKind = OutputKind.FILE) -> str:
    entries = ", ".join(f"'{kind}:{d}': '<{_id_field(kind)} with the input id>'" for d in dirs)
    where = "; ".join(f"{q.label} writes to {q.where()}" for q in queries)
    return (f"{where}, which the run reads only when told: pass outputs={{{entries}}} (a field path, or a "
            "callable (row, None) -> ids)")
