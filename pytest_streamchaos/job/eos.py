"""The exactly-once sink's commit protocol: which output records count. Pure logic, no I/O.

:class:`~pytest_streamchaos.job.kafka_sink.ExactlyOnceKafkaSink` writes each micro-batch as one
*attempt*: every data record carries the header ``streamchaos.attempt`` and, in the same Kafka
transaction, a ``commit`` marker goes to a one-partition control topic. A sink instance announces
itself with an ``open`` marker carrying a generation number higher than any before.

Replaying the control topic in order with :class:`CommitLog` decides, for every attempt, whether it
counts:

- a ``commit`` of generation ``g`` counts only if no ``open`` of a newer generation came before it
  (an instance that was replaced -- a zombie driver -- never counts again);
- only the first counted commit of a ``(sink, batch_id)`` counts (a replayed batch never counts twice).

A data record counts iff its attempt counts. The broker's transactions (a zombie fenced by its
``transactional.id``, aborted records hidden from ``read_committed`` consumers) are what make the output
exactly-once; this log is what lets the sink skip a batch Spark replays after it was committed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

ATTEMPT_HEADER = "streamchaos.attempt"
CONTROL_SUFFIX = ".streamchaos-commits"


def control_topic_for(topic: str) -> str:
    """The control topic of an output topic: ``<topic>.streamchaos-commits`` (one partition)."""
    return topic + CONTROL_SUFFIX


def open_marker(sink: str, gen: int) -> bytes:
    return json.dumps({"type": "open", "sink": sink, "gen": gen}).encode()


def commit_marker(sink: str, gen: int, batch_id: int, attempt: str, records: int) -> bytes:
    return json.dumps({"type": "commit", "sink": sink, "gen": gen, "batch": batch_id,
                       "attempt": attempt, "records": records}).encode()


@dataclass
class CommitLog:
    """State after replaying control-topic records in offset order (see the module docstring)."""

    gen: dict[str, int] = field(default_factory=dict)  #: newest generation opened per sink
    committed: dict[str, dict[int, str]] = field(default_factory=dict)  #: sink -> batch -> attempt
    counted_attempts: set[str] = field(default_factory=set)
    rejected_attempts: set[str] = field(default_factory=set)

    def apply(self, raw: bytes | str | dict) -> str | None:
        """Apply one control record. Returns the attempt id it made count, if any."""
        rec = raw if isinstance(raw, dict) else json.loads(raw)
        sink = rec["sink"]
        if rec["type"] == "open":
            self.gen[sink] = max(self.gen.get(sink, rec["gen"]), rec["gen"])
            return None
        if rec["type"] != "commit":
            return None
        attempt, batch = rec["attempt"], int(rec["batch"])
        batches = self.committed.setdefault(sink, {})
        if rec["gen"] < self.gen.get(sink, rec["gen"]) or batch in batches:
            self.rejected_attempts.add(attempt)
            return None
        batches[batch] = attempt
        self.counted_attempts.add(attempt)
        return attempt

    def last_batch(self, sink: str) -> int:
        """The highest batch id that counts for ``sink`` (-1 if none)."""
        return max(self.committed.get(sink, {}), default=-1)

    def decided(self, attempt: str) -> bool | None:
        """True: counts; False: never will; None: not decided yet (its marker has not been seen)."""
        if attempt in self.counted_attempts:
            return True
        if attempt in self.rejected_attempts:
            return False
        return None


def attempt_of(headers: list[tuple[str, bytes]] | None) -> str | None:
    """The attempt id in a record's headers (None if it was not written by the exactly-once sink)."""
    for k, v in headers or ():
        if k == ATTEMPT_HEADER:
            return v.decode() if isinstance(v, bytes | bytearray) else str(v)
    return None
