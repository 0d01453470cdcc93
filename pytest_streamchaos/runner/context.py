"""What every phase of one run shares: the run's spec and inputs, its directory and storage, the
recorder of its timeline, its warnings and phase times; the live status line; the polling pace."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.timeline import Recorder
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.outputs import Outputs
from pytest_streamchaos.observe.storage import RunStorage
from pytest_streamchaos.poll import poll
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.spec import RunInputs, RunSpec
from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster
from pytest_streamchaos.usercode import UserCodeError
from pytest_streamchaos.workload.generator import Generator
from pytest_streamchaos.workload.joined import JoinedGenerators

log = logging.getLogger(__name__)

#: how often the run's phases look at the job, the observers and the clock
POLL_S = 0.25
#: how often the warm-up and the drain look: each of their steps (the query started, its starting offsets
#: fixed -- the load starts then --, steady state, caught up, idle) ends when a look sees it, so every step
#: costs half an interval on average; a look reads only what is new (the event log's bytes, a checkpoint
#: listing): 0.1 s cost ~0.05 cores of the pytest process
PHASE_POLL_S = 0.1

T = TypeVar("T")

#: what sends a run's records (one generator per input topic, several joined)
Sender = Generator | JoinedGenerators
#: what reads a run's outputs (the run's own topic, or every output the test named)
Reader = Collector | Outputs


class RunOwner(Protocol):
    """What a run takes from the ``chaos`` fixture that starts it (:class:`~pytest_streamchaos.runner.chaos.Chaos`):
    the stack, the test's identity and seed, how the job's JVMs start, where progress lines go."""

    cluster: SparkCluster
    kafka: KafkaCluster
    #: a fixture by name: the service of a checkpoint storage, started on first use (None: none on this backend)
    fixture: Callable[[str], Any] | None
    nodeid: str
    seed: int
    java_home: str | None
    jit: str
    progress: Callable[[str], None] | None
    status: Callable[[dict[str, Any]], None] | None
    workdir: Path
    started: int


class _Passed(Exception):
    """The timeout of :func:`poll_until` passed (never leaves it)."""


@dataclass
class RunContext:
    """One run's shared state. ``chaos`` is the :class:`~pytest_streamchaos.runner.chaos.Chaos` that
    started it (its stack, seed, callbacks); ``recorder``, ``warnings`` and ``phases`` (name -> time)
    are what the phases add to as they go."""

    chaos: RunOwner
    spec: RunSpec
    inputs: RunInputs
    dir: Path
    storage: RunStorage
    tag: str  #: names the run's own topics (unique per run: nothing of an earlier run is ever read)
    recorder: Recorder = field(default_factory=Recorder)
    warnings: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)


def poll_until(cond: Callable[[], T], timeout: float, interval: float = POLL_S) -> T | None:
    """``cond``'s first truthy result, asked every ``interval`` s on the run's clock (``time.time``);
    None once ``timeout`` seconds passed without one (the caller says what that means)."""
    try:
        return poll(cond, timeout, lambda _: _Passed(), interval=interval, clock=time.time)
    except _Passed:
        return None


def check_user_code(generator: Sender, collector: Reader) -> None:
    """Stop the run at once when the load or the output reading stopped working: a callable of the test
    raised (the factory or an ``annotate`` / oracle callable in the generator's thread, an output id
    reader in the collector's; its :class:`~pytest_streamchaos.usercode.UserCodeError` is raised here,
    the user's traceback chained), or the generator's thread ended for another reason."""
    if generator.failure is not None:
        err = generator.claim_failure()  # reported here: stopping the generator will not raise it again
        if isinstance(err, UserCodeError):
            raise err
        raise RunError(f"the load generator stopped: {err!r}") from err
    col_failure = collector.failure
    if col_failure is not None:
        raise col_failure


class Status:
    """Tells ``Chaos.status`` (at most once a second) how the run goes: ``phase``, ``elapsed`` in it
    and its ``planned`` length (a timeout for warm-up and drain), records ``sent`` (acked),
    ``outputs`` read, ``backlog`` (sent ids not yet seen in the output) and ``faults`` injected."""

    def __init__(self, callback: Callable[[dict[str, Any]], None] | None, recorder: Recorder) -> None:
        self.callback = callback
        self.recorder = recorder
        self.generator: Sender | None = None  #: what sends (``acked``), once the observers are wired
        self.collector: Reader | None = None  #: what reads (``count``, ``ids_seen``)
        self.last = 0.0  #: when the callback was last called
        self.phase: tuple[str, float, float] = ("start", time.time(), 0.0)  # name, since, planned s

    def watch(self, generator: Sender, collector: Reader) -> None:
        """Count what ``generator`` sent and ``collector`` read from now on."""
        self.generator, self.collector = generator, collector

    def __call__(self, phase: str, planned: float) -> None:
        now = time.time()
        if self.phase[0] != phase:
            self.phase = (phase, now, planned)
        if self.callback is None or now - self.last < 1.0:
            return
        self.last = now
        sent = self.generator.acked if self.generator is not None else 0
        count, seen = (self.collector.count, self.collector.ids_seen) if self.collector is not None else (0, 0)
        fields = {"phase": phase, "elapsed": now - self.phase[1], "planned": planned, "sent": sent,
                  "outputs": count, "backlog": max(0, sent - seen),
                  "faults": sum(e.kind == Kind.FAULT_INJECTED for e in self.recorder.events())}
        try:
            self.callback(fields)
        except Exception:  # a display problem must never fail the run
            log.exception("status callback failed")
