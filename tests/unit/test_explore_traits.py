"""What an explored run teaches the search about its job (``exploration.body.phases_never_came``): a
moment inside the tasks that did not come while the job ran batch after batch is one the job does not
have. Synthetic histories with a known answer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_streamchaos.exploration.body import NEVER_CAME_AFTER, phases_never_came
from pytest_streamchaos.history import FaultRecord, MicroBatch
from pytest_streamchaos.search.schedule import Schedule, Step


def run_of(first: FaultRecord, batch_starts: list[float], rows: int = 100) -> SimpleNamespace:
    batches = [MicroBatch("q", i, t, t + 0.5, 0.5, rows) for i, t in enumerate(batch_starts)]
    return SimpleNamespace(history=SimpleNamespace(faults=[first], micro_batches=batches), fault_records=[first])


def never_fired(planned_at: float = 10.0) -> FaultRecord:
    return FaultRecord("kill_driver", "kill_driver#1", planned_at=planned_at, skipped="its moment did not come")


RUNNING = Schedule.of(Step("kill_driver", "driver", "tasks_running"))


def test_a_task_moment_that_never_came_over_enough_batches_is_missing_from_the_job():
    starts = [10.0 + i for i in range(NEVER_CAME_AFTER)]
    assert phases_never_came(run_of(never_fired(), starts), RUNNING) == {"tasks_running"}


@pytest.mark.parametrize("why, run, schedule", [
    ("too few batches after it armed to tell", run_of(never_fired(), [5.0, 6.0, 11.0, 12.0]), RUNNING),
    ("batches without input do not count", run_of(never_fired(), [11.0, 12.0, 13.0], rows=0), RUNNING),
    ("it fired: the moment came", run_of(FaultRecord("kill_driver", "k", planned_at=10.0, injected_at=12.0),
                                         [11.0, 12.0, 13.0]), RUNNING),
    ("its injection failed: the moment came", run_of(FaultRecord("kill_driver", "k", planned_at=10.0,
                                                                 errors=["inject failed: no such process"]),
                                                     [11.0, 12.0, 13.0]), RUNNING),
    ("a driver's phase comes in every batch: a miss there is a race, never a missing moment",
     run_of(never_fired(), [11.0, 12.0, 13.0]),
     Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted"))),
])
def test_no_conclusion_without_the_evidence(why, run, schedule):
    assert phases_never_came(run, schedule) == set(), why
