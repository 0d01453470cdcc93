"""One schedule of one history (docs/explore.md#one-history): its faults played on the job that is already
running, from the moment the schedule arms -- a plain run that gave its ``duration`` (a window of a shared
history, docs/shared-history.md) at least that long --, until they are over -- every fault fired and healed (or gave up
on its moment), a micro-batch planned after the last heal committed (the batch a killed driver replays is
in), and each fault back: recovered, or noticed by the system and quiet since
(:func:`~pytest_streamchaos.analysis.run_metrics.faults_back`) -- or until its longest, after which the job
is not back and the history ends."""

from __future__ import annotations

import math
import time

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.run_metrics import back_due, faults_back
from pytest_streamchaos.faults.timeline import load_end, recovery_window
from pytest_streamchaos.history import executors_back
from pytest_streamchaos.runner.context import PHASE_POLL_S, check_user_code, poll_until
from pytest_streamchaos.runner.phases.load import AFTER_HEAL_BATCHES, LoadPhase, LoadResult, aim_slack

#: at the longest, how long a schedule waits before it asks again whether its faults are over (each ask judges
#: the history so far: 0.15 s of a core for 90,000 records, which the job's recovery must not pay for more
#: often); it asks at the instants the answer may change (:func:`~pytest_streamchaos.analysis.run_metrics.back_due`:
#: one a metrics bucket, 1 s), which come no less often
BACK_CHECK_S = 1.0
#: how long after :func:`back_due`'s instant an ask comes: the history's sends are the acknowledged ones, a
#: few milliseconds behind the clock
BACK_DUE_SLACK_S = 0.05


class SegmentLoad(LoadPhase):
    """The load phase of one schedule of one history (see the module docstring): the generator keeps
    sending before and after it; only the schedule's faults start and stop here."""

    def run(self, steady: float) -> LoadResult:
        """Play the schedule armed at ``steady`` (its faults' ``after`` count from there) until it is over or
        has run its longest; heal whatever is still injected."""
        self.obs.scheduler.start(steady)
        self._planned_until = steady + self.ctx.spec.duration
        self._armed = steady
        self._graced_until: float | None = None
        self._at_longest = self._went_on = False
        self._play()
        self.obs.scheduler.stop()
        return self.result

    def _play(self) -> None:
        # a look every 0.1 s: an ask due at an instant (BACK_DUE_SLACK_S) waits half a look for it on average
        poll_until(lambda: self._over(self._planned_until), math.inf, PHASE_POLL_S)

    def confirmed(self) -> bool:
        """Whether the schedule's end still stands on the history as it is now, its window's outputs read: it ran
        its longest, or its faults, judged again, are still over. A sign can come after the ask that ended the
        schedule -- a fault that showed none was over once noticed and quiet for a while, and a replacement
        executor's first tasks, slow on a busy machine, then put the latency out of band --; the window's verdict,
        judged on more of the history than that ask, would then call the fault not recovered while its job was
        still recovering. Not confirmed, the schedule goes on (:meth:`resume`)."""
        # a failure to judge (_back warned, and asks no more) keeps the end: waiting would only run out the longest
        if self._at_longest or self._back() or math.isinf(self._next_check):
            return True
        if not self._went_on:  # once a schedule (the warnings are the whole history's: its windows share them)
            self._went_on = True
            self.ctx.warnings.append("the schedule's faults showed a sign after they looked over: it went on "
                                     "until they were over again")
        return False

    def resume(self) -> None:
        """Go on with a schedule whose end :meth:`confirmed` did not confirm, until it is over again or has run
        its longest (its faults have healed: only the waiting is left); :attr:`result` says how it ended."""
        self._play()

    def _over(self, planned_until: float) -> bool:
        obs = self.obs
        if time.time() >= self._longest(planned_until) and not self._grace():
            self._at_longest = True
            self.result.ended = ("the schedule ran its longest without its faults over (a step still waiting for "
                                 "its moment, or the job not back)")
            return True
        obs.progress.poll()
        check_user_code(obs.generator, obs.collector)
        obs.supervisor.check()
        # a plain run that gave its duration (not @explore's, not one that ends on recovery) has its load as long
        if not self.ctx.spec.end_on_recovery and time.time() < planned_until:
            self.status("load", self.ctx.spec.duration)
            return False
        # asked once a batch planned after the last heal committed, then when the answer may change
        if time.time() >= self._next_check and obs.scheduler.done() and self._committed_after_heal():
            self._next_check = time.time() + BACK_CHECK_S  # _back() moves it to when the answer may change
            if self._back():
                self.result.ended = "the schedule's faults were over: each recovered, or noticed and quiet since"
                return True
        self.status("schedule", self.ctx.spec.duration)
        return False

    def _longest(self, planned_until: float) -> float:
        """The schedule's latest end: its ``duration`` after it armed, extended while a step waits for its
        moment (by its timeout) and for a recovery window after the last heal."""
        planned = self.ctx.inputs.planned
        window = recovery_window(self.ctx.spec.trigger_seconds)
        return load_end(planned_until, window, self.obs.scheduler.last_heal_due(), aim_slack(planned))

    def _grace(self) -> bool:
        """At its longest, once: whether the job is visibly recovering -- a batch with input planned after the
        last heal committed -- so that its recovery gets a recovery window more to show (the schedule still ends
        as soon as its faults are back). A killed driver's restart on a busy 2-core machine took 46 s to its
        first batch; cutting the window then ended the history on a fault that was recovering."""
        if self._graced_until is None:
            if not self._committed_after_heal():
                return False
            self._graced_until = time.time() + recovery_window(self.ctx.spec.trigger_seconds)
            self.ctx.warnings.append("the schedule's faults were not back at its longest, but the job's output "
                                     "was: it ran a recovery window more")
        return time.time() < self._graced_until

    def _committed_after_heal(self) -> bool:
        """A micro-batch with input that started after the schedule's last heal has ended (a killed driver's
        replay is one); without faults (the control run), :data:`AFTER_HEAL_BATCHES` after the schedule armed:
        the baseline the first fault of the history is measured against."""
        healed = self.obs.scheduler.last_heal_due()
        if healed is None:
            return False
        need = 1 if self.ctx.inputs.planned else AFTER_HEAL_BATCHES
        after = [b for b in self.obs.progress.batches if b["t_start"] >= healed and (b.get("numInputRows") or 0) > 0]
        return len(after) >= need

    def _back(self) -> bool:
        """Whether every fault of the schedule is over, judged on the whole history so far, and the job has
        its executors back; a failure to judge leaves the schedule to its longest."""
        ctx = self.ctx
        if not ctx.inputs.planned:
            return True
        asked = time.time()
        try:
            history = self.obs.history(ctx, self.job, self.topics)
            metrics = ChaosRun.judge(history, ctx.inputs.oracle, ctx.spec.guarantee, ctx.inputs.params).metrics
        except Exception as exc:  # the window's verdict will say what is wrong; here only the length is at stake
            if not any("judging whether the schedule was over" in w for w in ctx.warnings):
                ctx.warnings.append(f"judging whether the schedule was over failed ({exc}): it ran its longest")
            self._next_check = math.inf
            return False
        labels = {p.label for p in ctx.inputs.planned}
        self._next_check = next_ask(back_due(metrics, labels, history.timeline), asked - metrics.load_end, asked)
        return faults_back(metrics, labels, history.timeline) and executors_back(history.timeline)


def next_ask(due: float, behind: float, asked: float) -> float:
    """When to ask again whether a schedule's faults are over: once the history's sends reach ``due`` (the load
    end at which the answer may change), which they do ``behind`` seconds after the clock at the ask made at
    ``asked`` (the acknowledged sends lag the clock), and :data:`BACK_DUE_SLACK_S` more; at the latest
    :data:`BACK_CHECK_S` after ``asked``."""
    return min(due + max(0.0, behind) + BACK_DUE_SLACK_S, asked + BACK_CHECK_S)
