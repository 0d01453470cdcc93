"""What the Kafka cluster did during a run, as timeline events: leader elections, ISR changes,
brokers fenced and registered, controller changes.

A background thread asks the cluster (through the stack interface, on the harness's own listener) for
the partition state of the run's topics every :data:`POLL_S` and records each change when it first
sees it, so recovery phases can name them ("leader of in[0] moved 1 -> 2 at +4.1 s"). Stamped when
observed: an election shows up to one poll interval after the controller made it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Protocol

from pytest_streamchaos.events import Kind, Records

log = logging.getLogger(__name__)

POLL_S = 0.25


class Partition(Protocol):
    """A partition as the watcher compares it (``stack.base.PartitionView``)."""

    @property
    def leader(self) -> int: ...

    @property
    def isr(self) -> Sequence[int]: ...


class KafkaState(Protocol):
    """What the watcher asks the cluster each poll (``stack.base.KafkaCluster``, which ``observe/`` may not import)."""

    def partition_states(self, topic: str) -> Mapping[int, Partition] | None: ...

    def registered_brokers(self) -> list[int]: ...

    def controller_id(self) -> int | None: ...


class KafkaWatcher:
    """Watches ``topics`` of ``kafka`` and records changes with ``recorder`` (see the module docstring)."""

    def __init__(self, kafka: KafkaState, topics: Sequence[str], recorder: Records) -> None:
        self.kafka, self.topics, self.recorder = kafka, [t for t in topics if t], recorder
        self._parts: dict[tuple[str, int], Partition] = {}
        self._brokers: set[int] | None = None
        self._controller: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> KafkaWatcher:
        self.poll()  # the state before the run: changes are relative to it
        self._thread = threading.Thread(target=self._run, name="streamchaos-kafka-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.poll()
            except Exception as exc:  # no broker reachable this moment: the next poll sees what changed
                log.debug("kafka watcher: %s", exc)

    def poll(self) -> None:
        """Compare the cluster's state now with the last one seen and record the differences."""
        for topic in self.topics:
            for p, state in (self.kafka.partition_states(topic) or {}).items():
                self._partition(topic, p, state)
        self._membership(set(self.kafka.registered_brokers()))
        controller = self.kafka.controller_id()
        if controller is not None and controller != self._controller:
            if self._controller is not None:
                self.recorder.record(Kind.CONTROLLER_ELECTED, f"broker-{controller}", previous=self._controller)
            self._controller = controller

    def _partition(self, topic: str, p: int, state: Partition) -> None:
        old = self._parts.get((topic, p))
        self._parts[(topic, p)] = state
        if old is None:
            return
        where = f"{topic}[{p}]"
        if state.leader != old.leader:
            kind = Kind.LEADER_ELECTED if state.leader >= 0 else Kind.LEADER_LOST
            self.recorder.record(kind, where, leader=state.leader, previous=old.leader, isr=list(state.isr))
        if set(state.isr) != set(old.isr):
            kind = Kind.ISR_SHRUNK if len(state.isr) < len(old.isr) else Kind.ISR_EXPANDED
            self.recorder.record(kind, where, isr=list(state.isr), previous=list(old.isr))

    def _membership(self, brokers: set[int]) -> None:
        if self._brokers is not None:
            for b in sorted(self._brokers - brokers):
                self.recorder.record(Kind.BROKER_FENCED, f"broker-{b}")
            for b in sorted(brokers - self._brokers):
                self.recorder.record(Kind.BROKER_REGISTERED, f"broker-{b}")
        self._brokers = brokers
