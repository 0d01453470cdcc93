"""What the phases keep looking at from warm-up to verdict: where the query's checkpoint is
(:class:`CheckpointTracker`) and whether the job's output can be read at all (:class:`SinkJudge`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_streamchaos.events import Kind, QueryStarted
from pytest_streamchaos.facts import StateStoreFacts
from pytest_streamchaos.observe import delta
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher, find_checkpoints, logged_checkpoints
from pytest_streamchaos.observe.file_sink import columns_of
from pytest_streamchaos.observe.output_names import output_kind, output_path
from pytest_streamchaos.observe.outputs import NoIds
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.observe.sinks import UNREADABLE, judge, misnamed_tables, query_sinks
from pytest_streamchaos.runner.context import RunContext
from pytest_streamchaos.runner.errors import RunError, job_failed
from pytest_streamchaos.stack.base import JobHandle


class CheckpointTracker:
    """Points the checkpoint watcher at the latest started query's checkpoint, wherever the job put
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
        """Follow the latest ``query_started`` to its checkpoint (a fresh one checked, before the faults)."""
        ids = [QueryStarted.of(e).id for e in progress.timeline if e.kind == Kind.QUERY_STARTED]
        if not ids or ids[-1] == self._qid:
            return
        found = find_checkpoints(self.roots)
        if ids[-1] not in found and self._logged_roots():
            found = find_checkpoints(self.roots)
        if ids[-1] in found:
            self.watcher.point_at(found[ids[-1]])
            self._qid = ids[-1]
            self.found = True
            if "warmup_end" not in self.ctx.phases:
                self.check_fresh(progress, found[ids[-1]])

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

    def check_fresh(self, progress: SparkProgress, place: Any = None) -> None:
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

    def check(self, collector: Any, progress: SparkProgress) -> None:
        """From the queries' first progress, whether the collector can read what the job writes
        (:func:`~pytest_streamchaos.observe.sinks.judge`): a run without ``outputs=`` whose job writes
        only to the console, memory or ``noop`` (or a stateless ``foreach`` / ``foreachBatch`` that sent
        nothing to the output topic) goes on from Spark's progress, saying so in one line; one that
        writes files it was not told about fails, naming the ``outputs=`` to pass."""
        if self._judged or self.progress_only:
            return
        ctx = self.ctx
        sinks = query_sinks(progress.batches, progress.writes)
        if ctx.spec.outputs is not None:  # the test named the outputs
            self._judged = bool(sinks)
            if sinks and all(q.kind in UNREADABLE for q in sinks):
                raise RunError(f"outputs= names {', '.join(ctx.spec.outputs)}, but "
                               + "; ".join(f"{q.label} writes to {q.where()}" for q in sinks)
                               + ": nothing there can be read; pass outputs={} for a run from Spark's progress")
            places = [self.ctx.storage.output(p, self.job.workdir) for o in ctx.spec.outputs
                      if output_kind(o) == "delta" and (p := output_path(o))]
            tables = [pl.path if pl.scheme == "file" else str(pl) for pl in places]  # as the job names them
            misnamed = misnamed_tables(sinks, tables)
            if misnamed:
                raise RunError(misnamed)
            return
        bases = tuple(b for b in (str(self.job.workdir), ctx.storage.home) if b)
        verdict = judge(sinks, collector.count, time.time(), self.out_topic, bases=bases)
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

    def first_output(self, collector: Any, progress: SparkProgress) -> float | None:
        """When output first showed: the first collected output, or (progress only) the end of the
        first micro-batch that processed input."""
        if self.progress_only:
            ends = [b["t_end"] for b in progress.batches if (b.get("numInputRows") or 0) > 0]
            return ends[0] if ends else None
        return (collector.last_arrival or time.time()) if collector.count > 0 else None

    def last_output(self, collector: Any, progress: SparkProgress) -> float | None:
        """When output last showed (progress only: the end of the last micro-batch with input)."""
        if self.progress_only:
            ends = [b["t_end"] for b in progress.batches if (b.get("numInputRows") or 0) > 0]
            return ends[-1] if ends else None
        return collector.last_arrival


def resumed_from_earlier(batches: Sequence[Mapping[str, Any]], checkpoint_made: float | None,
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
