"""Fire planned faults on the run's clock, heal them, and record what happened.

Each planned occurrence gets a small thread: wait until steady state + ``at`` (or until its aimed
moment is detected), inject, wait ``heal_after``, heal. The steps of an explored schedule (specs with an
``anchor``) fire in order: each arms once the one before it has fired. :meth:`FaultScheduler.stop` heals whatever is
still injected -- on every exit path, including a failing test -- so nothing outlives the run.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.kind import SomeAction
from pytest_streamchaos.faults.moments import Aim, MomentDetector
from pytest_streamchaos.faults.registry import kind_of
from pytest_streamchaos.faults.timeline import PlannedFault, Recorder

#: how often an active fault's ``check`` runs (a delayer that died shows within this)
CHECK_EVERY_S = 1.0


class FaultScheduler:
    """Runs a list of planned faults against actions (one per fault kind, :class:`~.kind.FaultAction`)
    on ``clock``, the run's clock (``time.time``: the recorder's, the moments' and the stamps of
    Spark's files are on it)."""

    def __init__(
        self,
        planned: list[PlannedFault],
        actions: dict[str, SomeAction],
        recorder: Recorder,
        moments: dict[str, MomentDetector] | None = None,
        clock: Callable[[], float] = time.time,
        after_fire: Callable[[PlannedFault], None] | None = None,
    ) -> None:
        missing = sorted({p.spec.kind for p in planned} - set(actions))
        if missing:
            raise ValueError(f"no fault action for {missing}")
        self.planned = planned
        self.actions = actions
        self.recorder = recorder
        self.moments = moments or {}
        self.clock = clock
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._active: dict[int, tuple[PlannedFault, object]] = {}  # handles: opaque here, the kind's own
        self._fired: dict[int, float] = {}  # occurrence -> when it was injected (healed or not)
        self._lock = threading.Lock()
        self.steady_t: float | None = None
        #: called once an aimed fault took effect (or failed to be injected): lets a thread its moment
        #: holds go on (the checkpoint gate's release)
        self.after_fire = after_fire
        self._settled = [threading.Event() for _ in planned]  # occurrence fired, or will not
        self._over = [threading.Event() for _ in planned]  # occurrence healed, or will not act any more

    def start(self, steady_t: float) -> None:
        """Start the clock: ``at`` offsets count from ``steady_t``."""
        self.steady_t = steady_t
        for i, p in enumerate(self.planned):
            at = steady_t + (p.at if p.at is not None else p.spec.after)
            self.recorder.record(Kind.FAULT_PLANNED, p.label, t=at, fault=p.spec.kind, occurrence=p.occurrence)
            th = threading.Thread(target=self._run_one, args=(i, p, at), name=f"fault-{p.label}", daemon=True)
            self._threads.append(th)
            th.start()

    def _run_one(self, i: int, p: PlannedFault, at: float) -> None:
        try:
            try:
                fired = self._fire(i, p, at)
            finally:
                self._settled[i].set()  # the next step of an explored schedule may arm now
            if fired is None:
                return
            handle, t_injected = fired
            # heal_after counts from the injection, not from its confirmation
            self._watch(i, p, handle, None if p.heal_after is None else t_injected + p.heal_after)
            if p.heal_after is not None:
                self._heal(i)
        finally:
            self._over[i].set()  # the fault's next occurrence may fire now

    def _fire(self, i: int, p: PlannedFault, at: float) -> tuple[object, float] | None:
        """Wait for the occurrence's time (a step of an explored schedule: also for the step before it to
        have fired), or its moment; inject, confirm and record it. (handle, injection time), or None when
        it did not fire."""
        action = self.actions[p.spec.kind]
        if self._stop.wait(max(0.0, at - self.clock())):
            return None
        before = self._previous_step(i)
        if before is not None:
            while not self._settled[before].wait(0.2):
                if self._stop.is_set():
                    return None
        earlier = self._previous_occurrence(i)
        if earlier is not None:  # a late heal delays the next occurrence: two at once would fight (a reassignment
            while not self._over[earlier].wait(0.2):  # moved on while the one before is moved back)
                if self._stop.is_set():
                    return None
        found: Aim | bool | None = None
        if p.at is None:  # aimed: wait for the moment
            found = self._await_moment(p)
            if found is None:
                return None
        try:
            handle = action.inject(p)
        except Exception as exc:  # a fault that cannot be injected is a finding, not a crash of the run
            self._error(p, f"inject failed: {exc}")
            self._after_fire(p)
            return None
        # The fault's time is when it took effect: inject returns right after the signal / rule /
        # broker-down, before any wait for confirmation (a reap can take seconds, which would put
        # the fault after the system's own reaction to it and shorten every measured delay).
        t_injected = self.clock()
        with self._lock:
            self._active[i] = (p, handle)
            self._fired[i] = t_injected
        unconfirmed = None
        confirmed: float | None = 0.0
        measured: dict[str, object] = {}
        try:
            measured = action.confirm(p, handle) or {}
            confirmed = self.clock() - t_injected
        except Exception as exc:
            confirmed, unconfirmed = None, f"not confirmed: {exc}"
        if p.at is None:  # a thread held at the moment (the checkpoint gate) goes on once the fault took effect
            self._after_fire(p)
        try:
            target = action.target(p)  # after inject: a role ('busiest') resolves to an instance there
        except Exception as exc:
            target = p.label
            unconfirmed = unconfirmed or f"target unknown: {exc}"
        permanent = kind_of(p.spec).permanent(p.spec)
        self.recorder.record(Kind.FAULT_INJECTED, target, t=t_injected, fault=p.spec.kind, label=p.label,
                             confirmed=None if confirmed is None else round(confirmed, 3), **measured,
                             **self._landed(p, handle, found), **({"permanent": True} if permanent else {}))
        if permanent:  # nothing to heal, nothing that can stop acting: it is done once it took effect
            with self._lock:
                self._active.pop(i, None)
        if unconfirmed:
            self._error(p, unconfirmed)
        return handle, t_injected

    def _landed(self, p: PlannedFault, handle: object, found: Aim | bool | None) -> dict[str, object]:
        """The ``aim`` detail of an aimed fault's ``fault_injected``: its moment's :class:`Aim` as the fault's
        kind judges it once the fault took effect (a broker kill whose leader moved meanwhile missed)."""
        if not isinstance(found, Aim):
            return {}
        try:
            found = self.actions[p.spec.kind].landed(p, handle, found)
        except Exception as exc:  # where it landed unknown: not a hit
            self._error(p, f"landing unknown: {exc}")
            found = dataclasses.replace(found, hit=False)
        return {"aim": dataclasses.asdict(found)}

    def _previous_step(self, i: int) -> int | None:
        """The occurrence that must have fired before occurrence ``i`` arms: the step before it in an
        explored schedule (specs with an ``anchor``); None for a mark's fault."""
        if self.planned[i].spec.anchor is None:
            return None
        earlier = [j for j in range(i) if self.planned[j].spec.anchor is not None]
        return earlier[-1] if earlier else None

    def _previous_occurrence(self, i: int) -> int | None:
        """The occurrence of the same recurring fault before occurrence ``i``, which must be over (healed) before
        ``i`` fires; None for a first occurrence."""
        p = self.planned[i]
        return next((j for j, q in enumerate(self.planned)
                     if q.spec is p.spec and q.occurrence == p.occurrence - 1), None)

    def _after_fire(self, p: PlannedFault) -> None:
        if self.after_fire is not None and p.at is None:
            try:
                self.after_fire(p)
            except Exception as exc:  # a held thread the gate fails to let go is released by its max hold
                self.errors.append(f"releasing the aimed moment failed: {exc}")

    def _await_moment(self, p: PlannedFault) -> Aim | bool | None:
        """Wait for an aimed fault's moment; None (recorded as skipped) when it did not come."""
        wait = self.moments.get(p.spec.when or "")
        if wait is None:
            self._error(p, f"no detector for moment {p.spec.when!r}")
            return None
        found = wait(p, self._stop, self.clock() + p.spec.timeout)
        if not found:
            why = (f"the load phase ended before moment {p.spec.when!r} came" if self._stop.is_set()
                   else f"moment {p.spec.when!r} not seen within timeout={p.spec.timeout:g}s")
            self.recorder.record(Kind.FAULT_SKIPPED, p.label, reason=why)
            self.errors.append(f"{p.label}: skipped: {why}")
            return None
        return found

    def _watch(self, i: int, p: PlannedFault, handle: object, heal_at: float | None) -> None:
        """Wait until ``heal_at`` (None: until stop), asking the action's ``check`` meanwhile
        whether the fault still acts; the first time it does not is a fault error. (A wait on the
        stop event: a scheduled delay, which stop() cuts short to heal early.)"""
        check = self.actions[p.spec.kind].check
        while not self._stop.is_set() and (heal_at is None or self.clock() < heal_at):
            with self._lock:
                if i not in self._active:
                    return  # healed by stop()
            try:
                why = check(p, handle)
            except Exception as exc:  # a probe that breaks must not stop the heal
                why = f"check failed: {exc}"
            if why:
                self._error(p, f"stopped acting while active: {why}")
                self.recorder.record(Kind.FAULT_STOPPED_ACTING, self.actions[p.spec.kind].target(p), reason=why)
                break
            wait = CHECK_EVERY_S if heal_at is None else min(CHECK_EVERY_S, max(0.0, heal_at - self.clock()))
            self._stop.wait(wait)
        if heal_at is not None:
            self._stop.wait(max(0.0, heal_at - self.clock()))

    def _heal(self, i: int) -> None:
        with self._lock:
            entry = self._active.pop(i, None)
        if entry is None:
            return
        p, handle = entry
        try:
            self.actions[p.spec.kind].heal(p, handle)
            self.recorder.record(Kind.FAULT_HEALED, self.actions[p.spec.kind].target(p), fault=p.spec.kind,
                                 label=p.label)
        except Exception as exc:
            self._error(p, f"heal failed: {exc}")

    def _error(self, p: PlannedFault, msg: str) -> None:
        self.errors.append(f"{p.label}: {msg}")
        self.recorder.record(Kind.FAULT_ERROR, p.label, error=msg)

    def acting_on_driver(self) -> bool:
        """Whether a fault that stops the driver (a kill of the driver, a driver paused: its kind's
        ``stops_driver``) is in effect: a supervisor must leave the driver to it (the fault restarts or
        resumes it on heal)."""
        with self._lock:
            return any(kind_of(p.spec).stops_driver(p.spec) for p, _ in self._active.values())

    def done(self) -> bool:
        """Whether the schedule has played out: every occurrence fired and healed, or was skipped or
        failed; one without a heal (``heal_after`` None) counts once it fired, as it stays until the
        load ends. False before :meth:`start`."""
        if len(self._threads) != len(self.planned):
            return False
        with self._lock:
            return all(not th.is_alive() or (i in self._fired and self.planned[i].heal_after is None)
                       for i, th in enumerate(self._threads))

    def last_heal_due(self) -> float | None:
        """When the schedule's last heal is due, from the actual injection times: the latest
        injection + ``heal_after`` (an occurrence without a heal counts at its injection); the steady
        state when nothing fired. None before :meth:`start` and while an occurrence still waits to
        fire -- an aimed fault fires when its moment comes, which can be well after its ``after``."""
        if self.steady_t is None or len(self._threads) != len(self.planned):
            return None
        with self._lock:
            if any(th.is_alive() and i not in self._fired for i, th in enumerate(self._threads)):
                return None
            return max((t + (self.planned[i].heal_after or 0.0) for i, t in self._fired.items()),
                       default=self.steady_t)

    def stop(self, heal: bool = True) -> None:
        """Stop firing; heal every fault still injected (also the ones whose heal time has not come)."""
        self._stop.set()
        for th in self._threads:
            th.join(timeout=30)
        if heal:
            for i in list(self._active):
                self._heal(i)

    def __enter__(self) -> FaultScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
