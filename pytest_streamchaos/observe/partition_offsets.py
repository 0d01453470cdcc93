"""What the offsets read from each output partition tell: transaction markers, and outputs lost to retention.

The collector reads with ``isolation.level=read_committed``, so the broker, not a sink's own
bookkeeping, verifies exactly-once output: records of aborted transactions are never seen. A
transaction's commit or abort marker takes an offset but is never handed to a consumer, so a jump
between two offsets read from a partition is a marker (or aborted records): transactional output is
detected without the job's help. An offset the broker already deleted (retention) is a gap that is
recorded, and reading resumes at the log start; such a skip is not counted as markers.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

log = logging.getLogger(__name__)


class PartitionOffsets:
    """Per output partition: the last offset read, the offsets skipped (markers), the retention gaps."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # markers are read from other threads
        self._last: dict[tuple[str, int], int] = {}  #: last offset read per output partition
        self._markers: dict[str, int] = {}  #: "topic[partition]" -> control records (offset jumps) seen
        self._gaps: list[dict[str, Any]] = []

    def note(self, topic: str, partition: int, offset: int) -> None:
        """An offset jump between two records read from a partition is control records: the markers
        of transactions (consumers never receive them)."""
        prev = self._last.get((topic, partition))
        if prev is not None and offset > prev + 1:
            where = f"{topic}[{partition}]"
            with self._lock:  # rare (once per transaction)
                self._markers[where] = self._markers.get(where, 0) + offset - prev - 1
        self._last[(topic, partition)] = offset

    @property
    def markers(self) -> dict[str, int]:
        """``Collector.transaction_markers``: offsets skipped per ``"topic[p]"``."""
        with self._lock:
            return dict(self._markers)

    @property
    def gaps(self) -> list[dict[str, Any]]:
        """One dict per range deleted before it was read: topic, partition, from/to offset, skipped, time."""
        return list(self._gaps)

    @property
    def lost(self) -> int:
        """Offsets (outputs) the broker deleted before they were read."""
        return sum(g["skipped"] for g in self._gaps)

    def skip_deleted(self, consumer: Consumer, topic: str, partition: int, wanted: int) -> None:
        """The offset we need is gone (retention): record the gap and go on from the log start."""
        tp = TopicPartition(topic, partition)
        wanted = max(wanted, 0)
        try:
            low = consumer.get_watermark_offsets(tp, timeout=5.0)[0]
        except KafkaException as e:  # broker unreachable right now: resume at the log start anyway
            self._gaps.append({"topic": topic, "partition": partition, "from": wanted, "to": None,
                               "skipped": 0, "t": time.time()})
            log.warning("collector: %s[%d] offset %d was deleted before it was read; the log start is "
                        "unknown (%s), so the number of missing outputs is not known", topic, partition,
                        wanted, e)
            self._reassign(consumer, tp, OFFSET_BEGINNING)
            return
        gap = {"topic": topic, "partition": partition, "from": wanted, "to": low,
               "skipped": max(low - wanted, 0), "t": time.time()}
        self._gaps.append(gap)
        log.warning("collector: outputs %s[%d] offsets %d..%d were deleted by the broker before they were "
                    "read (retention); %d outputs are missing from the record", topic, partition, wanted,
                    low - 1, gap["skipped"])
        self._reassign(consumer, tp, low)

    def _reassign(self, consumer: Consumer, tp: TopicPartition, offset: int) -> None:
        # A partition in the reset-error state cannot be seek()ed; re-assign it at the new offset.
        self._last.pop((tp.topic, tp.partition), None)  # the skip is retention, not transaction markers
        consumer.incremental_unassign([tp])
        consumer.incremental_assign([TopicPartition(tp.topic, tp.partition, offset)])
