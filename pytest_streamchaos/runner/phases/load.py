"""Phase 5: the load for the run's duration from steady state, with the faults on their timeline;
a run without a ``duration`` ends it once every fault has recovered for good."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import cast

from pytest_streamchaos.analysis.metrics import recovery_settled
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.events import Kind, Phase
from pytest_streamchaos.faults.timeline import load_end
from pytest_streamchaos.history import executors_back
from pytest_streamchaos.runner.context import RunContext, Status, check_user_code, poll_until
from pytest_streamchaos.runner.phases.observers import ObservedPhase, Observers
from pytest_streamchaos.runner.phases.topics import RunTopics
from pytest_streamchaos.stack.base import JobHandle

#: how often a run without a ``duration`` asks whether every fault has recovered for good (each ask
#: is a verdict on the run so far: tens of milliseconds for a few thousand records)
RECOVERY_CHECK_S = 1.0
#: how long past its planned end a run given its input's size waits for the last of it to be sent
INPUT_GRACE_S = 120.0
#: the micro-batches with input an explored run's job must complete after the schedule's last heal before
#: its load may end early: the batch a killed driver replays, and the ones after it
AFTER_HEAL_BATCHES = 3


@dataclass
class LoadResult:
    """How the load went against its plan."""

    ended: str | None = None  #: why the load did not last its planned length (None: it did)
    #: the load could end on recovery (``RunSpec.end_on_recovery``, off once judging mid-run failed)
    end_on_recovery: bool = False


class LoadPhase(ObservedPhase):
    """Starts the faults' clock at steady state and keeps the load on (:meth:`run`)."""

    def __init__(self, ctx: RunContext, job: JobHandle, topics: RunTopics, obs: Observers, status: Status) -> None:
        super().__init__(ctx, job, topics, obs, status)
        self.result = LoadResult(end_on_recovery=ctx.spec.end_on_recovery)
        self._next_check = 0.0  # when to ask again whether every fault has recovered
        self._input_warned = False

    def run(self, steady: float) -> LoadResult:
        """Keep the load on until ``steady`` + duration, then stop it and the faults. A run without a
        ``duration`` goes on past it while its faults heal later than planned (:meth:`_load_end`), and
        ends as soon as every fault has recovered for good (:meth:`_recovered_for_good`)."""
        self.obs.scheduler.start(steady)
        planned_until = steady + self.ctx.spec.duration
        poll_until(lambda: self._over(planned_until), math.inf)  # its end moves: _over checks it
        self.obs.generator.stop()
        self.ctx.phases[Phase.LOAD_END] = time.time()
        self.ctx.recorder.record(Kind.LOAD_END)
        self.obs.scheduler.stop()
        return self.result

    def _over(self, planned_until: float) -> bool:
        """One look during the load: whether it is over (never before a counted input was sent whole)."""
        obs = self.obs
        if self._input_left(planned_until):
            return False
        if time.time() >= self._load_end(planned_until):
            return True
        obs.progress.poll()
        check_user_code(obs.generator, obs.collector)
        if self.result.end_on_recovery and time.time() >= self._next_check and obs.scheduler.done():
            self._next_check = time.time() + RECOVERY_CHECK_S
            if self._batches_after_heal() and (not self.ctx.inputs.planned or self._recovered_for_good()):
                return True
        obs.supervisor.check()  # an exit is a finding; supervised, the driver comes back
        self.status("load", self.ctx.spec.duration)
        return False

    def _load_end(self, planned_until: float) -> float:
        """When the load ends (:func:`~pytest_streamchaos.faults.timeline.load_end`: a run without a
        ``duration`` counts its recovery window from the actual last heal, and waits for an aimed
        fault still looking for its moment); says so once it has run a second past the plan."""
        window, planned = self.ctx.spec.recovery_window, self.ctx.inputs.planned
        explored = any(p.spec.anchor is not None for p in planned)
        due = self.obs.scheduler.last_heal_due() if window or explored else None
        end = load_end(planned_until, window, due, aim_slack(planned), explored)
        if self.result.ended is None and time.time() >= planned_until + 1.0:
            if window is not None:
                self.result.ended = ("extended past the plan: the faults healed later than planned (a fault aimed "
                                     "at a moment fires when it comes, or gives up after its timeout), and the "
                                     f"recovery window of {window:g}s counts from the actual last heal")
            elif explored:
                self.result.ended = ("extended past the plan: a step of the explored schedule was still waiting "
                                     "for its moment (each step arms once the one before it fired)")
        return end

    def _input_left(self, planned_until: float) -> bool:
        """A run given its input's size (``RunSpec.input_counts``: the same records as its reference run)
        goes on until every record was sent, at most :data:`INPUT_GRACE_S` past its planned end."""
        if self.ctx.spec.input_counts is None or not self.obs.generator.running:
            return False
        if time.time() < planned_until + INPUT_GRACE_S:
            return True
        if not self._input_warned:
            self._input_warned = True
            self.ctx.warnings.append(f"the load ended {INPUT_GRACE_S:g}s past its plan with the input not sent whole "
                                     f"(the reference run's {self.ctx.spec.input_counts} records): the comparison "
                                     "with the reference is of different inputs")
        return False

    def _batches_after_heal(self) -> bool:
        """An explored run's job completed :data:`AFTER_HEAL_BATCHES` batches with input after the schedule's
        last heal (the steady state in the control run, which has no fault); always True for a run
        without a ``duration``, whose recovery window counts from that heal."""
        if not self.ctx.spec.explored:
            return True
        healed = self.obs.scheduler.last_heal_due()
        if healed is None:
            return False
        after = [b for b in self.obs.progress.batches
                 if b["t_start"] >= healed and (b.get("numInputRows") or 0) > 0]
        if len(after) < AFTER_HEAL_BATCHES:
            return False
        if not self.ctx.inputs.planned:  # the control run: nothing to recover from
            self.result.ended = (f"ended early: an explored run without faults, {AFTER_HEAL_BATCHES} batches with "
                                 "input after the steady state")
        return True

    def _recovered_for_good(self) -> bool:
        """Whether the verdict on the run so far settles every fault's recovery point
        (:func:`~pytest_streamchaos.analysis.metrics.recovery_settled`) and the job has its executors back
        (:func:`~pytest_streamchaos.history.executors_back`): then more load would not change it, and the
        load ends. The same analysis as the final verdict, on what was seen so far;
        if it fails the load runs its planned length."""
        ctx, t = self.ctx, time.time()
        try:
            history = self.obs.history(ctx, self.job, self.topics)
            metrics = ChaosRun.judge(history, ctx.inputs.oracle, ctx.spec.guarantee, ctx.inputs.params).metrics
        except Exception as exc:  # the verdict at the end will say what is wrong; here only the length is at stake
            self.result.end_on_recovery = False
            ctx.warnings.append(f"the load ran its planned length: judging recovery mid-run failed ({exc})")
            return False
        if not recovery_settled(metrics, history.timeline) or not executors_back(history.timeline):
            return False
        # settled: every fault has a recovery time in seconds (none is NOT_RECOVERED or unknown)
        ctx.recorder.record(Kind.LOAD_ENDED_ON_RECOVERY, "", t=t,
                            recovery_time=[round(float(cast(float, f.recovery_time)), 3) for f in metrics.faults],
                            masked=[f.output_symptom is None for f in metrics.faults])
        extended = f"{self.result.ended}; then " if self.result.ended else ""
        self.result.ended = extended + ("ended early: every fault had recovered (or, noticed by the system, left no "
                                        "sign in the output) and more load could not change its recovery time")
        if ctx.spec.explored:
            self.result.ended += f", and the job had run {AFTER_HEAL_BATCHES} batches with input since the last heal"
        return True


def aim_slack(planned: list) -> float:
    """How much longer than planned an aimed fault may wait for its moment: the longest
    ``timeout`` of the run's aimed faults (0 without)."""
    return max((p.spec.timeout for p in planned if p.at is None), default=0.0)
