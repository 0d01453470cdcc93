"""The names a test gave that only the running job can confirm, checked during the warm-up, before the load and
its faults (docs/names.md): the input topics against what the job's queries subscribe to, the Kafka output
topics against what the job writes, each output's id spec and the oracle's fields against its first records.

:class:`NameCheck` is asked once per look of the warm-up (:meth:`NameCheck.check`, from
:mod:`~pytest_streamchaos.runner.phases.warmup`); the judging is the pure functions of
:mod:`pytest_streamchaos.observe.seen_names`, fed what the run observed. A refusal is a
:class:`~pytest_streamchaos.runner.errors.RunError` in one line; the run then stops the job and cleans up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_streamchaos.events import Kind, QueryStarted
from pytest_streamchaos.observe.output_names import OutputKind, output_kind
from pytest_streamchaos.observe.outputs import NoIds, Outputs
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.observe.seen_names import (
    SAMPLE,
    idless,
    mentioned_topics,
    missing_fields,
    missing_source,
    missing_topics,
    subscriptions,
    unread_inputs,
    unwritten_outputs,
)
from pytest_streamchaos.observe.sinks import SinkKind, query_sinks
from pytest_streamchaos.runner.context import Reader, RunContext
from pytest_streamchaos.runner.errors import RunError

log = logging.getLogger(__name__)

#: how long after the latest query started its progress must have come before the queries' sources are
#: judged (a job starts its queries one after another: the last one may not have reported yet)
SETTLE_S = 5.0
#: the most of the driver's log one look reads (a look reads what was written since the last)
LOG_READ_MAX = 1 << 20
#: how long after every Kafka sink of the job reported rows written the named topics may still be empty (the
#: collector's lag, with a wide margin)
GRACE_S = 5.0


class NameCheck:
    """Every check of the module docstring that still has something to judge; each is done once it passed or
    refused (``check`` raises the refusal)."""

    def __init__(self, ctx: RunContext, collector: Reader, progress: SparkProgress,
                 written: Callable[[float, set[str]], list[str]] | None = None, log: Path | None = None,
                 job_args: Sequence[str] = ()) -> None:
        self.ctx = ctx
        self.collector = collector
        self.progress = progress
        #: the topics with records stamped after a time, but the ones given (the brokers' view; None: not asked)
        self.written = written
        #: the driver's log: a task's failure shows there at once (the event log holds it until a stage ends)
        self.log = log
        self._log_read = 0
        self._failures: list[str] = []
        self.job_args = list(job_args)  #: the job's own argv: the topics it names, for a refusal's hint
        self._inputs_done = ctx.spec.inputs is None
        self._topics_done = not self._named_topics()
        self._parts_done: set[str] = set()
        self._kafka_wrote_at: float | None = None

    def check(self) -> None:
        """One look: raise the first refusal found (:class:`RunError`)."""
        for why in (self._inputs(), self._source(), self._topics(), *self._outputs()):
            if why:
                raise RunError(why)

    # -- inputs and output topics: the queries' progress ----------------------------------------------------
    def _settled(self) -> bool:
        """Every query that started reported progress, the latest start :data:`SETTLE_S` ago."""
        starts = [e for e in self.progress.timeline if e.kind == Kind.QUERY_STARTED]
        reported = {str(b.get("id") or "") for b in self.progress.batches}
        return bool(starts) and all(QueryStarted.of(e).id in reported for e in starts) \
            and time.time() - max(e.t for e in starts) >= SETTLE_S

    def _inputs(self) -> str | None:
        if self._inputs_done or not self._settled():
            return None
        self._inputs_done = True
        return unread_inputs(list(self.ctx.spec.inputs or []), subscriptions(self.progress.batches))

    def _source(self) -> str | None:
        """The job's Kafka source stopped on a topic the brokers lack (the query dies before its first progress)."""
        if self.ctx.spec.inputs is None:
            return None
        # a query's end, not a task's: a sink's write to a missing topic logs the same cause under its own failure
        failures = [str(e.detail.get("exception") or "") for e in self.progress.timeline
                    if e.kind == Kind.QUERY_TERMINATED]
        failures += [line for line in self._logged_failures() if "terminated with exception" in line]
        if not failures:
            return None
        try:
            script = self.ctx.inputs.script.read_text()
        except OSError:
            script = ""
        return missing_source(list(self.ctx.spec.inputs), failures, mentioned_topics(self.job_args, script))

    def _failed(self) -> list[str]:
        """What the job's failed tasks and terminated queries said (Spark's event log)."""
        return [str(e.detail.get("message") or e.detail.get("exception") or "") for e in self.progress.timeline
                if e.kind in (Kind.TASK_FAILED, Kind.QUERY_TERMINATED)]

    def _named_topics(self) -> list[str]:
        return [o for o in self.ctx.spec.outputs or [] if output_kind(o) == OutputKind.KAFKA]

    def _topics(self) -> str | None:
        if self._topics_done:
            return None
        received = {name: part.count + part.malformed for name, part, _ in self._parts() if name in
                    self._named_topics()}
        if any(received.values()):
            self._topics_done = True
            return None
        why = unwritten_outputs(received, missing_topics([*self._failed(), *self._logged_failures()]))
        if why is None and self._sinks_wrote():
            why = unwritten_outputs(received, [], sinks_wrote=True, written=self._written_elsewhere())
        return why

    def _logged_failures(self) -> list[str]:
        """The driver log's lines that tell of a topic the brokers lack (read on from the last look)."""
        if self.log is None:
            return []
        try:
            with open(self.log, "rb") as f:
                f.seek(self._log_read)
                text = f.read(LOG_READ_MAX)
        except OSError:
            return []
        text = text[:text.rfind(b"\n") + 1]  # a line still being written is read next time
        self._log_read += len(text)
        self._failures += [line for line in text.decode(errors="replace").splitlines()
                           if "not present in" in line or "UnknownTopicOrPartition" in line]
        return self._failures

    def _sinks_wrote(self) -> bool:
        """Every Kafka sink of the job reported rows written, :data:`GRACE_S` ago or more (with every query
        started reporting progress)."""
        sinks = [q for q in query_sinks(self.progress.batches, self.progress.writes) if q.kind == SinkKind.KAFKA]
        if not sinks or not self._settled() or not all(q.output_rows > 0 for q in sinks):
            return False
        now = time.time()
        if self._kafka_wrote_at is None:
            self._kafka_wrote_at = now
        return now - self._kafka_wrote_at >= GRACE_S

    def _written_elsewhere(self) -> list[str]:
        """The topics the brokers hold records of since the job started, but the run's own inputs and outputs."""
        if self.written is None:
            return []
        exclude = {*(self.ctx.spec.inputs or []), *(self.ctx.spec.outputs or [])}
        try:
            return self.written(self.ctx.phases.get("start", time.time()), exclude)
        except Exception as exc:  # the refusal stands without the names
            log.debug("could not list the topics the job wrote: %s", exc)
            return []

    # -- each output's first records --------------------------------------------------------------------------
    def _parts(self) -> Iterator[tuple[str, Any, Any]]:
        """(name, collector, id spec) of every output the run reads."""
        ids = self.ctx.inputs.output_ids
        if isinstance(self.collector, Outputs):
            yield from zip(ids, self.collector.parts, ids.values(), strict=True)
        else:
            yield "", self.collector, self.ctx.inputs.id_reader

    def _outputs(self) -> Iterator[str | None]:
        oracle = self.ctx.inputs.oracle
        aggregate = hasattr(oracle, "collector_options")  # its outputs carry values, not ids
        for name, part, spec in self._parts():
            if name in self._parts_done:
                continue
            samples = part.first_records
            what = f"outputs[{name!r}]" if name else ("Watch(id_reader)" if spec is not None
                                                      else "the run's output topic")
            if not (isinstance(spec, NoIds) or (aggregate and spec is None)):
                yield idless(what, spec, samples)
            if self._judged_by_oracle(name):  # the collector reads an oracle's fields off Kafka records
                yield missing_fields(type(oracle).__name__, repr(name) if name else "the run's output topic",
                                     oracle.output_fields(), samples)
            if len(samples) >= SAMPLE:
                self._parts_done.add(name)

    def _judged_by_oracle(self, name: str) -> bool:
        """Whether the oracle reads output ``name``'s fields: a Kafka output, its main one if it names one, never
        its side output (late records carry no window)."""
        oracle = self.ctx.inputs.oracle
        if name and (output_kind(name) != OutputKind.KAFKA or name == oracle.side_topic):
            return False
        return not (name and oracle.topic is not None and name != oracle.topic)


def written_since(bootstrap: str) -> Callable[[float, set[str]], list[str]]:
    """The brokers' view for :class:`NameCheck`: the topics (internal ones and ``exclude`` left out) holding a
    record stamped at ``since`` or later (Kafka's ``ListOffsets`` for the largest timestamp)."""
    def written(since: float, exclude: set[str]) -> list[str]:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec

        from pytest_streamchaos.stack.kraft.admin import client_conf

        admin = AdminClient(client_conf(bootstrap))
        topics = admin.list_topics(timeout=5).topics
        asked = {TopicPartition(t, p): OffsetSpec.max_timestamp() for t, meta in topics.items()
                 if not t.startswith("__") and t not in exclude for p in meta.partitions}
        if not asked:
            return []
        found = {tp.topic for tp, f in admin.list_offsets(asked, request_timeout=5).items()
                 if (r := f.result(timeout=10)).offset >= 0 and r.timestamp / 1000.0 >= since - 1.0}
        return sorted(found)

    return written
