"""Helpers of the YARN integration tests: test traffic (numbered records into the input topic, and every
output record with when it was read, from a consumer that runs for the whole test, so an id seen twice
stays visible), and the processes left under a directory."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

import psutil
from confluent_kafka import Consumer, Producer, TopicPartition

from pytest_streamchaos.poll import wait_for


class Traffic:
    """Sends ids (the record's value is the id) and collects the output's ids with their arrival times."""

    def __init__(self, servers: str, source: str, output: str, partitions: int = 2) -> None:
        self.servers, self.source, self.output, self.partitions = servers, source, output, partitions
        self.sent: dict[int, float] = {}
        self.seen: list[tuple[int, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "linger.ms": 5})
        self._thread = threading.Thread(target=self._consume, name="yarn-traffic", daemon=True)
        self._thread.start()

    def send(self, ids: Iterable[int]) -> None:
        """Produce ``ids`` and return once the brokers acknowledged all of them."""
        for i in ids:
            self._producer.produce(self.source, key=b"k%d" % i, value=b"%d" % i, partition=i % self.partitions)
            self.sent[i] = time.time()
        assert self._producer.flush(30) == 0, "the brokers did not acknowledge every record"

    def ids(self) -> set[int]:
        with self._lock:
            return {i for i, _ in self.seen}

    def first_output_after(self, t: float) -> float | None:
        """When the first output record read after ``t`` arrived."""
        with self._lock:
            return min((at for _, at in self.seen if at > t), default=None)

    def wait_all(self, ids: Iterable[int], timeout: float, what: str) -> float:
        """Wait until every id of ``ids`` was read from the output; when the last one arrived."""
        want = set(ids)
        wait_for(lambda: want <= self.ids(), timeout, f"{what}: all {len(want)} ids in {self.output}",
                 lambda: f"{len(want - self.ids())} missing, e.g. {sorted(want - self.ids())[:5]}")
        with self._lock:
            return max(at for i, at in self.seen if i in want)

    def close(self) -> None:
        """Stop reading, and let go of the producer while the brokers still answer (a librdkafka client
        destroyed after they are gone can hold the interpreter's exit)."""
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(5)
        self._producer = None  # type: ignore[assignment]

    def _consume(self) -> None:
        c = Consumer({"bootstrap.servers": self.servers, "group.id": f"yarn-traffic-{self.output}",
                      "enable.auto.commit": False, "isolation.level": "read_committed"})
        try:
            c.assign([TopicPartition(self.output, p, 0) for p in range(self.partitions)])
            while not self._stop.is_set():
                for m in c.consume(500, timeout=0.2):
                    if m.error() is None and m.value() is not None:
                        with self._lock:
                            self.seen.append((int(m.value()), time.time()))
        finally:
            c.close()


def processes_under(workdir: Path) -> list[int]:
    """PIDs of live processes whose command line names ``workdir`` (YARN's daemons and containers do)."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and str(workdir) in " ".join(p.info["cmdline"] or ()):
                found.append(p.pid)
        except psutil.Error:
            continue
    return found
