"""Aimed faults say whether they hit: the micro-batch phase detectors on a checkpoint directory laid out
the way Spark writes it (``offsets/N``, ``commits/N``), an output stamp the test controls, and the
``aim`` the scheduler records and the metrics expose."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from pytest_streamchaos.analysis.metrics import FaultMetrics
from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.kind import FaultAction
from pytest_streamchaos.faults.moments import MAX_AIM_ATTEMPTS, Aim, batch_phase, wait_uncommitted_output
from pytest_streamchaos.faults.registry import parse
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.testing import wait_for


class Output:
    """The collector's two clocks, set by the test."""

    def __init__(self) -> None:
        self.last_written: float | None = None
        self.last_arrival: float | None = None


class Job:
    """Records the detector's freezes; ``on_pause`` plays what Spark does meanwhile."""

    def __init__(self, on_pause=None) -> None:
        self.calls: list[str] = []
        self.on_pause = on_pause

    def pause(self) -> None:
        self.calls.append("pause")
        if self.on_pause is not None:
            self.on_pause()

    def resume(self) -> None:
        self.calls.append("resume")


def write(cp: Path, sub: str, batch: int, at: float) -> None:
    f = cp / sub / str(batch)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("v1\n")
    os.utime(f, (at, at))


def context(cp: Path, out: Output, job: Job) -> FaultContext:
    return FaultContext(cluster=None, kafka=None, job=job, input_topic="in", checkpoint=CheckpointWatcher(cp),
                        collector=out)


def test_batch_phase_follows_the_checkpoint_and_the_broker_stamp(tmp_path: Path) -> None:
    out, now = Output(), time.time()
    ctx = context(tmp_path, out, Job())
    assert batch_phase(ctx, None) == "idle"
    write(tmp_path, "offsets", 0, now - 10)
    write(tmp_path, "commits", 0, now - 9)
    write(tmp_path, "offsets", 1, now - 5)
    out.last_written = now - 9.5  # batch 0's output, appended before batch 1 was planned
    assert batch_phase(ctx, 1) == "running"
    out.last_arrival = now - 4.0  # ... read late by the collector: the stamp, not the arrival, decides
    assert batch_phase(ctx, 1) == "running"
    out.last_written = now - 4.9
    assert batch_phase(ctx, 1) == "sink_written"
    write(tmp_path, "commits", 1, now - 4)
    assert batch_phase(ctx, 1) == "committed"


def test_without_a_stamp_the_arrival_decides_with_slack(tmp_path: Path) -> None:
    out, now = Output(), time.time()
    ctx = context(tmp_path, out, Job())
    write(tmp_path, "offsets", 3, now - 5)
    out.last_arrival = now - 4.99  # within the slack: the previous batch's output read late
    assert batch_phase(ctx, 3) == "running"
    out.last_arrival = now - 4.5
    assert batch_phase(ctx, 3) == "sink_written"


def test_output_moment_hits_while_the_driver_is_frozen(tmp_path: Path) -> None:
    out, now, job = Output(), time.time(), Job()
    write(tmp_path, "offsets", 7, now - 1)
    out.last_written = now - 0.5
    aim = wait_uncommitted_output(context(tmp_path, out, job))(None, threading.Event(), now + 5)
    assert aim == Aim("uncommitted_output", 7, "sink_written", True, 1)
    assert job.calls == ["pause"], "a hit leaves the driver frozen for the kill"


def test_a_commit_that_wins_the_race_is_retried_on_the_next_batch_then_reported_missed(tmp_path: Path) -> None:
    out = Output()
    state = {"batch": 0}

    def next_batch() -> None:
        """Batch n had written its output; by the time the driver froze it had committed too."""
        t = time.time()
        n = state["batch"]
        write(tmp_path, "commits", n, t)
        write(tmp_path, "offsets", n + 1, t + 0.001)
        out.last_written = t + 0.002
        state["batch"] = n + 1

    job = Job(on_pause=next_batch)
    write(tmp_path, "offsets", 0, time.time() - 1)
    out.last_written = time.time() - 0.5
    aim = wait_uncommitted_output(context(tmp_path, out, job))(None, threading.Event(), time.time() + 10)
    assert aim is not None and not aim.hit and aim.phase == "committed"
    assert aim.attempts == MAX_AIM_ATTEMPTS and aim.batch == MAX_AIM_ATTEMPTS - 1
    assert job.calls == ["pause", "resume"] * (MAX_AIM_ATTEMPTS - 1) + ["pause"]


def test_the_moment_that_never_comes_gives_none(tmp_path: Path) -> None:
    write(tmp_path, "offsets", 0, time.time())
    got = wait_uncommitted_output(context(tmp_path, Output(), Job()))(None, threading.Event(), time.time() + 0.2)
    assert got is None


class Target(FaultAction):
    def __init__(self) -> None:
        self.injected = 0

    def target(self, planned) -> str:
        return "driver"

    def inject(self, planned) -> None:
        self.injected += 1

    def heal(self, planned, handle) -> None:
        pass


@pytest.mark.parametrize("hit", [True, False])
def test_the_scheduler_records_the_aim_and_the_metrics_expose_hit(hit: bool) -> None:
    rec = Recorder()
    aim = Aim("uncommitted_output", 4, "sink_written" if hit else "committed", hit, 1 if hit else 5)
    spec = parse("kill_driver", kwargs={"when": "uncommitted_output", "after": 0, "timeout": 2})
    sched = FaultScheduler(plan([spec]), {"kill_driver": Target()}, rec,
                           moments={"uncommitted_output": lambda p, stop, deadline: aim})
    sched.start(time.time())
    ev = wait_for(lambda: [e for e in rec.events() if e.kind == "fault_injected"], 5, "the aimed injection")[0]
    sched.stop()
    assert ev.detail["aim"] == {"moment": "uncommitted_output", "batch": 4, "phase": aim.phase, "hit": hit,
                                "attempts": aim.attempts}
    fm = FaultMetrics(t=ev.t, kind="kill_driver", target="driver", horizon=ev.t + 1, downtime=0.0, gap_start=None,
                      gap_end=None, output_symptom=None, output_gap=0.0, catch_up=None, recovery_time=None,
                      recovered_at=None, first_output_after=None, peak_latency=0.0, failure_cost=None,
                      verdict="masked", aim=ev.detail["aim"])
    assert fm.hit is hit
    assert FaultMetrics(**{**fm.__dict__, "aim": None}).hit is None
