"""How an explored schedule reaches the stack, without one: its steps as fault specs, fired in order
(each arms once the one before it fired), the held thread let go once the fault took effect, the gate's
phases refused where the gate cannot act, and the leftovers a run's job wrote outside its directory."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_streamchaos.exploration.catalogue import schedule_specs
from pytest_streamchaos.faults.gate_moments import needs_gate
from pytest_streamchaos.faults.kind import FaultAction
from pytest_streamchaos.faults.registry import check_run, parse
from pytest_streamchaos.faults.scheduler import Aim, FaultScheduler
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.runner.leftovers import leftovers
from pytest_streamchaos.search.schedule import Schedule, Step
from pytest_streamchaos.testing import wait_for


class Log(FaultAction):
    """A stand-in fault target that notes what happened, in order."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def target(self, planned):
        return planned.label

    def inject(self, planned):
        self.events.append(f"inject {planned.spec.when}")
        return None

    def confirm(self, planned, handle):
        self.events.append(f"confirmed {planned.spec.when}")


def test_the_steps_of_a_schedule_fire_in_order_and_each_held_moment_is_released_after_its_fault() -> None:
    events: list[str] = []
    lock = threading.Lock()

    def moment(name: str):
        def wait(planned, stop, deadline):
            if name == "output_visible_uncommitted":  # the first step's moment comes late: the second
                stop.wait(0.3)                        # step, unless it waits for it, would come first
            with lock:
                events.append(f"moment {name}")
            return Aim(name, 3, name, True)
        return wait

    steps = Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted"),
                        Step("kill_driver", "driver", "between_batches", 1))
    specs = [s.__class__(**{**s.__dict__, "after": 0.0}) for s in schedule_specs(steps)]
    moments = {w: moment(w) for w in ("output_visible_uncommitted", "between_batches")}
    sched = FaultScheduler(plan(specs), {"kill_driver": Log(events)}, Recorder(), moments,
                           after_fire=lambda p: events.append(f"release {p.spec.when}"))
    sched.start(time.time())
    wait_for(lambda: len(events) == 8, 5.0, interval=0.01, what="both steps fired and released")
    sched.stop()
    assert events == ["moment output_visible_uncommitted", "inject output_visible_uncommitted",
                      "confirmed output_visible_uncommitted", "release output_visible_uncommitted",
                      "moment between_batches", "inject between_batches", "confirmed between_batches",
                      "release between_batches"]


def test_a_marks_aimed_fault_does_not_wait_for_another() -> None:
    specs = [parse("kill_driver", kwargs={"when": "between_batches", "after": 0}),
             parse("kill_worker", kwargs={"when": "tasks_running", "after": 0})]
    assert [s.anchor for s in specs] == [None, None]
    seen: list[str] = []
    hold = threading.Event()

    def wait(planned, stop, deadline):
        if planned.spec.kind == "kill_driver":
            hold.wait(5)
        seen.append(planned.spec.kind)
        return Aim(planned.spec.when, 1, planned.spec.when, True)

    sched = FaultScheduler(plan(specs), {"kill_driver": Log([]), "kill_worker": Log([])}, Recorder(),
                           {"between_batches": wait, "tasks_running": wait})
    sched.start(time.time())
    wait_for(lambda: seen == ["kill_worker"], 5.0, interval=0.01, what="the worker kill, on its own")
    hold.set()
    sched.stop()


def test_the_gate_is_preloaded_only_for_the_phases_it_lands() -> None:
    def specs(*whens):
        return [parse("kill_executor", kwargs={"when": w}) if w else parse("kill_executor") for w in whens]

    assert needs_gate(specs("output_visible_uncommitted")) and needs_gate(specs(None, "state_commit"))
    assert not needs_gate(specs(None, "tasks_running"))  # a mark's tasks_running stays polled
    step = schedule_specs(Schedule.of(Step("kill_executor", "busiest", "tasks_running")))
    assert needs_gate(step)  # an explored step's is gated


def test_a_phase_only_the_gate_lands_is_refused_on_an_hdfs_checkpoint() -> None:
    spec = parse("kill_driver", kwargs={"when": "offsets_logged"})
    check_run([spec], checkpoint="local")
    with pytest.raises(ValueError, match="when='offsets_logged' is landed by the checkpoint gate.*use "
                                         "checkpoint='local'"):
        check_run([spec], checkpoint="hdfs")
    check_run([parse("kill_driver", kwargs={"when": "output_visible_uncommitted"})], checkpoint="hdfs")  # polled


def test_leftovers_are_the_jobs_absolute_checkpoint_and_file_outputs() -> None:
    outputs = ["file:/tmp/x-lake", "file:rel/lake", "ledger", "delta:/tmp/x-table"]
    assert leftovers("file:/tmp/x-chk", "local", outputs) == ["/tmp/x-chk", "/tmp/x-lake", "/tmp/x-table"]
    assert leftovers("hdfs://nn/chk", "hdfs", []) == []


def test_a_polled_aim_that_found_the_output_visible_missed_tasks_running() -> None:
    """The polled tasks_running detector calls a batch whose output is visible its hit; for the search
    that is output_visible_uncommitted, another phase: the step missed (and shrinking cannot take a
    kill at the output's moment for a simpler one)."""
    from types import SimpleNamespace

    from pytest_streamchaos.exploration.body import landed_of
    from pytest_streamchaos.history import Aim, FaultRecord

    def run_with(*aims):
        faults = [FaultRecord("kill_driver", f"f{i}", injected_at=1.0, aim=a) for i, a in enumerate(aims)]
        return SimpleNamespace(history=SimpleNamespace(faults=faults), fault_records=faults)

    steps = Schedule.of(Step("kill_driver", "driver", "tasks_running"),
                        Step("kill_driver", "driver", "output_visible_uncommitted"))
    landed = landed_of(run_with(Aim("tasks_running", 4, "sink_written", True),
                                Aim("output_visible_uncommitted", 5, "output_visible_uncommitted", True)), steps)
    assert [(x.hit, x.phase, x.batch) for x in landed] == [(False, "output_visible_uncommitted", 4),
                                                           (True, "output_visible_uncommitted", 5)]
    assert landed_of(run_with(Aim("tasks_running", 4, "running", True)), Schedule.of(steps.steps[0]))[0].hit
    assert not landed_of(run_with(), steps)[0].hit  # never fired


def test_the_kind_judges_where_its_aimed_fault_landed_once_it_took_effect() -> None:
    """A fault that hit another target than its moment's (a broker kill whose partition's leader moved
    between the lookup and the kill) turns its moment's hit into a miss; the search counts it as not
    run. A kind that cannot tell where it landed is not a hit either, and says why."""
    from types import SimpleNamespace

    from pytest_streamchaos.exploration.body import landed_of
    from pytest_streamchaos.history import faults_of

    class Moved(Log):
        def landed(self, planned, handle, aim):
            if planned.spec.when == "tasks_running":
                raise RuntimeError("no metadata answer")
            return Aim(aim.moment, aim.batch, aim.phase, hit=False)

    steps = Schedule.of(Step("kill_driver", "driver", "offsets_logged"),
                        Step("kill_driver", "driver", "tasks_running"))
    specs = [s.__class__(**{**s.__dict__, "after": 0.0}) for s in schedule_specs(steps)]
    rec = Recorder()
    moments = {w: (lambda planned, stop, deadline: Aim(planned.spec.when, 2, planned.spec.when, True))
               for w in ("offsets_logged", "tasks_running")}
    sched = FaultScheduler(plan(specs), {"kill_driver": Moved([])}, rec, moments)
    sched.start(time.time())
    wait_for(sched.done, 5.0, interval=0.01, what="both steps fired")
    sched.stop()
    injected = [e for e in rec.events() if e.kind == "fault_injected"]
    assert [e.detail["aim"]["hit"] for e in injected] == [False, False]
    assert [e.detail["aim"]["batch"] for e in injected] == [2, 2]  # the batch and phase stay the moment's
    assert any("landing unknown: no metadata answer" in err for err in sched.errors)
    faults = faults_of(rec.events())
    run = SimpleNamespace(history=SimpleNamespace(faults=faults), fault_records=faults)
    assert [x.hit for x in landed_of(run, steps)] == [False, False]  # the search counts both as not run


def test_a_step_after_a_stopped_driver_waits_for_the_restart_too() -> None:
    # the second step's moment can only come once the restarted driver runs batches again: it waits the
    # restart on top of the usual timeout; after an executor kill the query never stopped
    from pytest_streamchaos.exploration.catalogue import AFTER_RESTART_S, STEP_TIMEOUT_S

    def timeouts(first: str) -> list[float]:
        steps = Schedule.of(Step(first, "driver" if first == "kill_driver" else "busiest", "between_batches"),
                            Step("kill_executor", "busiest", "between_batches", 1))
        return [s.timeout for s in schedule_specs(steps)]

    assert timeouts("kill_driver") == [STEP_TIMEOUT_S, STEP_TIMEOUT_S + AFTER_RESTART_S]
    assert timeouts("kill_executor") == [STEP_TIMEOUT_S, STEP_TIMEOUT_S]
