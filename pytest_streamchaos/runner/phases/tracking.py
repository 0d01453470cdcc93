"""What the phases keep looking at from warm-up to verdict: where the query's checkpoint is
(:class:`CheckpointTracker`) and whether the job's output can be read at all (:class:`SinkJudge`)."""

from __future__ import annotations

import posixpath
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_streamchaos.events import Kind, QueryStarted
from pytest_streamchaos.facts import StateStoreFacts
from pytest_streamchaos.observe import delta
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher, find_checkpoints, logged_checkpoints
from pytest_streamchaos.observe.file_sink import columns_of
from pytest_streamchaos.observe.outputs import NoIds
from pytest_streamchaos.observe.paths import DriverDirs, elsewhere, qualify, same_fs
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.observe.sinks import UNREADABLE, QuerySink, judge, judge_named, query_sinks
from pytest_streamchaos.observe.storage import Place
from pytest_streamchaos.records import BatchProgress
from pytest_streamchaos.runner.context import Reader, RunContext
from pytest_streamchaos.runner.errors import RunError, job_failed
from pytest_streamchaos.stack.base import JobHandle


class CheckpointTracker:
    """Points the checkpoint watcher at the tracked query's checkpoint (:func:`tracked_query`), wherever the job put
    it (a restarted driver of a job without a checkpoint location starts a new query elsewhere), and
    before the faults checks that the query did not resume from an earlier run's. Where to look: the
    places the run could tell before the job started (its working directory, the paths its code and
    arguments name), and every checkpoint root Spark's driver log says it resolved
    (:func:`~pytest_streamchaos.observe.checkpoints.logged_checkpoints`: a path a helper module builds)."""

    def __init__(self, ctx: RunContext, watcher: CheckpointWatcher, roots: list, job: JobHandle) -> None:
        self.ctx = ctx
        self.watcher = watcher
        self.roots = roots
        self.job = job
        self.found = False  #: the query's checkpoint was found
        self._qid: str | None = None  # the query whose checkpoint the watcher reads
        self._looked: tuple | None = None  # the started queries and unreadable sinks last looked for in full
        self._log_read = 0  # how much of the driver log has been read for resolved checkpoint roots

    @property
    def checkpoint_dir(self) -> str | None:
        """The query's checkpoint, once found."""
        return self.watcher.checkpoint_dir if self.found else None

    def offsets_fixed(self) -> bool:
        """Spark's Kafka source writes the offsets it starts from to the checkpoint (``sources/0/0``)
        before its first micro-batch is planned."""
        return self.watcher.starting_offsets_written()

    def find(self, progress: SparkProgress) -> None:
        """Follow the tracked query (:func:`tracked_query`) to its checkpoint (a fresh one checked, before the
        faults)."""
        ids = [str(q) for e in progress.timeline if e.kind == Kind.QUERY_STARTED and (q := QueryStarted.of(e).id)]
        if not ids:
            return
        unreadable = {q.query_id for q in query_sinks(progress.batches, progress.writes) if q.kind in UNREADABLE}
        key = (tuple(ids), frozenset(unreadable))
        if key == self._looked:
            return
        found = find_checkpoints(self.roots)
        if not set(ids) <= set(found) and self._logged_roots():
            found = find_checkpoints(self.roots)
        qid = tracked_query(ids, {i: found[i] for i in ids if i in found}, unreadable)
        if set(ids) <= set(found) or (qid is not None and qid not in unreadable and not temporary(found[qid])):
            self._looked = key  # nothing better to find until another query starts or reports its sink
        if qid is None or qid == self._qid:
            return
        self.watcher.point_at(found[qid])
        self._qid = qid
        self.found = True
        if "warmup_end" not in self.ctx.phases:
            self.check_fresh(progress, found[qid])

    def state_store(self) -> StateStoreFacts | None:
        """The query's state store as its checkpoint shows it, for the run's facts; None without state,
        without a checkpoint found, or when it cannot be read."""
        try:
            store = self.watcher.state_store() if self.found else None
        except (OSError, ValueError):
            return None
        return None if store is None else StateStoreFacts(store.provider, tuple(store.files), store.format_v2,
                                                          store.describe())

    def _logged_roots(self) -> bool:
        """Add the checkpoint roots the driver logged since the last look to :attr:`roots`; whether any was new."""
        try:
            with open(self.job.log_path, "rb") as log:
                log.seek(self._log_read)
                text = log.read()
        except OSError:
            return False
        text = text[:text.rfind(b"\n") + 1]  # a line still being written is read next time
        self._log_read += len(text)
        known = {str(r) for r in self.roots}
        new = []
        for root in logged_checkpoints(text.decode(errors="replace")):
            try:
                place = self.ctx.storage.place(root)
            except ValueError:
                continue  # another filesystem's (an object store): not this run's to watch
            if str(place) not in known:
                new.append(place)
        self.roots.extend(new)
        return bool(new)

    def check_fresh(self, progress: SparkProgress, place: Place | None = None) -> None:
        """Before the faults (no restart yet): a query that resumed from an earlier run's checkpoint the
        run could not see beforehand (a path the job computes) fails the run, naming it
        (:func:`resumed_from_earlier`)."""
        made = place.child("metadata").mtime() if place is not None else None
        how = resumed_from_earlier(progress.batches, made, self.ctx.phases["start"])
        if how is None:
            return
        where = str(place) if place is not None else (self.watcher.checkpoint_dir if self.found
                                                       else "its checkpoint (not found)")
        raise job_failed(self.job, f"the query resumed from a checkpoint an earlier run left ({where}: {how}); the "
                                   "run could not see it before the job started (its path is computed in the code): "
                                   "delete it, or give the job a fresh path per run (args=[\"{checkpoint_dir}\"])",
                         self.ctx.inputs.script)


def tracked_query(started: Sequence[str], found: Mapping[str, Any], unreadable: set[str]) -> str | None:
    """Which of the job's queries the run follows (its checkpoint is what the aimed faults and the checkpoint faults
    act on): the latest started (``started``: ids in order of ``query_started``; a restarted driver starts its
    queries again) whose checkpoint was ``found``, passing over a query that writes to the console, memory or
    ``noop`` (its sink is ``unreadable``) or keeps its checkpoint where Spark puts one for those sinks
    (``temporary-<uuid>``): such a query's batches are never the output the run reads, whichever started last.
    None: no started query's checkpoint is found yet."""
    latest = list(dict.fromkeys(reversed(started)))  # each id once, the latest start first
    candidates = [q for q in latest if q in found]
    readable = [q for q in candidates if q not in unreadable and not temporary(found[q])]
    best = readable or candidates
    return best[0] if best else None


def temporary(checkpoint: object) -> bool:
    """Whether a checkpoint is one Spark made for a query not given one (``temporary-<uuid>``: only the console,
    memory and ``noop`` sinks may go without)."""
    return posixpath.basename(str(checkpoint).rstrip("/")).startswith("temporary-")


class SinkJudge:
    """Whether the collector can read what the job writes, judged from the queries' first progress;
    when not, the run measures from Spark's progress alone (:attr:`progress_only`)."""

    def __init__(self, ctx: RunContext, job: JobHandle, out_topic: str | None) -> None:
        self.ctx = ctx
        self.job = job
        self.out_topic = out_topic
        #: why the job's output turned out unreadable (its sinks: console, memory, ...): the run then
        #: measures from Spark's progress alone; None: the outputs are read (or nothing is known yet)
        self.note: str | None = None
        self._judged = False

    @property
    def progress_only(self) -> bool:
        """True when no output of the job is readable (``outputs={}``, or its sinks turned out to be
        unreadable: :meth:`check`) or none carries input ids (``outputs=[...]``: rows a reference run
        compares): recovery comes from Spark's progress alone."""
        outputs, ids = self.ctx.spec.outputs, self.ctx.inputs.output_ids
        no_ids = bool(ids) and all(isinstance(v, NoIds) for v in ids.values())  # rows for a reference only
        return self.note is not None or (outputs is not None and not outputs) or no_ids

    def check(self, collector: Reader, progress: SparkProgress) -> None:
        """Once the job's queries have all started (:func:`~pytest_streamchaos.observe.sinks.all_started`: Spark's
        ``query_started`` events, each query's first progress, a few seconds for one still to come), whether the
        collector can read what the job writes. With ``outputs=``: each named output is checked against what the
        queries write, paths as the driver resolves them (:meth:`_check_named`). Without: a job that writes only
        to the console, memory or ``noop`` (or a stateless ``foreach`` / ``foreachBatch`` that sent nothing to
        the output topic) goes on from Spark's progress, saying so in one line; one that writes files it was not
        told about fails, naming the ``outputs=`` to pass (:func:`~pytest_streamchaos.observe.sinks.judge`)."""
        ctx = self.ctx
        if self._judged or (self.progress_only and not ctx.spec.outputs):
            return
        sinks = query_sinks(progress.batches, progress.writes)
        starts = {str(QueryStarted.of(e).id): e.t for e in progress.timeline if e.kind == Kind.QUERY_STARTED}
        if ctx.spec.outputs is not None:  # the test named the outputs (rows for a reference run too)
            self._check_named(sinks, starts, collector, progress)
            return
        bases = tuple(b for b in (str(self.job.workdir), ctx.storage.home) if b)
        verdict = judge(sinks, collector.count, time.time(), self.out_topic, bases=bases, starts=starts)
        if verdict.action == "refuse":
            raise RunError(verdict.message + self._columns_note(verdict.dirs))
        if verdict.action == "progress_only":
            self.note = verdict.message
            # the reason is describe()'s "outputs:" line; the timeline keeps it short
            ctx.recorder.record(Kind.OUTPUTS_UNREADABLE, "query", sinks=",".join(q.kind for q in sinks),
                                first_batch_end=min(b["t_end"] for b in progress.batches))
            if ctx.chaos.progress is not None:
                ctx.chaos.progress(verdict.message)
        self._judged = verdict.action != "wait"

    def driver_dirs(self, progress: SparkProgress) -> DriverDirs:
        """Where the job's driver resolves relative paths: as the latest launch's environment event says (its
        working directory, its default filesystem), else as the run set it up (:meth:`RunStorage.driver_dirs`)."""
        planned = self.ctx.storage.driver_dirs(self.job.workdir)
        seen = progress.drivers.get(progress.app_ids[-1]) if progress.app_ids else None
        if seen is None:
            return planned
        return replace(seen, home=planned.home if same_fs(seen.default_fs, planned.default_fs) else None)

    def _check_named(self, sinks: list[QuerySink], starts: dict[str, float], collector: Reader,
                     progress: SparkProgress) -> None:
        """The outputs the test names against what the job's queries write
        (:func:`~pytest_streamchaos.observe.sinks.judge_named`), and each relative path where the run reads it
        against where the driver put it."""
        dirs = self.driver_dirs(progress)
        verdict = judge_named(sinks, self.ctx.spec.outputs or [], starts, seen=collector.count > 0, now=time.time(),
                              resolve=lambda p: qualify(p, dirs))
        if verdict.action == "refuse":
            raise RunError(verdict.message)
        if verdict.action == "read":
            self._judged = True
            misplaced = elsewhere(self.ctx.spec.outputs or [], dirs, self.ctx.storage.driver_dirs(self.job.workdir))
            if misplaced:
                raise RunError(misplaced)

    def _columns_note(self, dirs: list[str]) -> str:
        """`` (columns in <dir>: a, b)`` for each directory the job wrote files or a Delta table to, to pick
        the id field from ("" when none can be read)."""
        notes = []
        for d in dirs:
            try:
                place = self.ctx.storage.output(d, self.job.workdir)
                table = place.scheme == "file" and place.child("_delta_log").is_dir()
                cols = delta.columns(place.path) if table else columns_of(place)
            except Exception:  # the refusal stands without the hint
                cols = []
            if cols:
                notes.append(f"columns in {d}: {', '.join(cols)}")
        return f" ({'; '.join(notes)})" if notes else ""

    def first_output(self, collector: Reader, progress: SparkProgress) -> float | None:
        """When output first showed: the first collected output, or (progress only) the end of the
        first micro-batch that processed input."""
        if self.progress_only:
            ends = [b["t_end"] for b in progress.batches if (b.get("numInputRows") or 0) > 0]
            return ends[0] if ends else None
        return (collector.last_arrival or time.time()) if collector.count > 0 else None

    def last_output(self, collector: Reader, progress: SparkProgress) -> float | None:
        """When output last showed (progress only: the end of the last micro-batch with input)."""
        if self.progress_only:
            ends = [b["t_end"] for b in progress.batches if (b.get("numInputRows") or 0) > 0]
            return ends[-1] if ends else None
        return collector.last_arrival


def resumed_from_earlier(batches: Sequence[BatchProgress], checkpoint_made: float | None,
                         started: float) -> str | None:
    """How a query shows it resumed from a checkpoint that existed before the job started at ``started``
    (None: it did not): the checkpoint's ``metadata`` was written before (a second of slack), or the
    first micro-batch reported of a query is not batch 0 (a fresh query's first progress is batch 0).
    Only meaningful before any driver restart."""
    if checkpoint_made is not None and checkpoint_made < started - 1.0:
        return "it was written before the job started"
    first: dict[str, int] = {}
    for b in batches:
        first.setdefault(str(b.get("id")), int(b.get("batchId") or 0))
    resumed = [n for n in first.values() if n > 0]
    return f"its first micro-batch was batch {resumed[0]}" if resumed else None
