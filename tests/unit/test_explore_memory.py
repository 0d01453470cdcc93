"""The search's memory across sessions (pure: a directory, a report, an entry): what it keeps of a
search, what it forgets, and what it refuses to read."""

from pathlib import Path

import pytest

from pytest_streamchaos.exploration.memory import Memory, MemoryError_
from pytest_streamchaos.search.coverage import Coverage
from pytest_streamchaos.search.engine import Finding, Flaky, Limits, Report, RunRecord
from pytest_streamchaos.search.schedule import Landed, Outcome, Schedule, Step

NODE = "tests/test_jobs.py::test_lake"
A = Schedule.of(Step("kill_driver", "driver", "output_visible_uncommitted"))
B = Schedule.of(Step("kill_driver", "driver", "tasks_running"))
C = Schedule.of(Step("kill_executor", "busiest", "tasks_running"))


def ran(*pairs: tuple[Schedule, bool], cycled: bool = False) -> Report:
    report = Report(Limits(5), Coverage([], {}, {}), cycled=cycled)
    for schedule, falsified in pairs:
        out = Outcome(falsified, tuple(Landed(True, 3, s.phase) for s in schedule.steps))
        report.runs.append(RunRecord(schedule, "explore", out))
    return report


def test_a_found_schedule_is_first_next_time_and_forgotten_once_it_passes(tmp_path: Path):
    memory = Memory(tmp_path, "here", "0.2.0")
    found = ran((A, False), (B, True))
    found.found = Finding(B, found.runs[1].outcome, B)
    memory.save(NODE, None, found)
    entry = memory.load(NODE)
    assert entry is not None and entry.recall(("kill_driver",)).first == (B,)
    assert entry.recall(("kill_driver",)).tried == frozenset({A})
    memory.save(NODE, entry, ran((B, False), (C, False)))  # fixed: B passes now
    again = memory.load(NODE)
    assert again is not None and again.found == [] and set(again.tried) == {A, B, C}
    assert again.recall(("kill_driver",)).tried == frozenset({A, B})  # kept to the test's faults


def test_a_flaky_schedule_is_remembered_and_a_cycle_starts_the_tried_ones_over(tmp_path: Path):
    memory = Memory(tmp_path, "here", "0.2.0")
    flaky = ran((A, False), (C, True))
    flaky.flaky.append(Flaky(C, flaky.runs[1].outcome, None))
    memory.save(NODE, None, flaky)
    entry = memory.load(NODE)
    assert entry is not None and entry.flaky == [C] and entry.recall(("kill_driver", "kill_executor")).first == (C,)
    memory.save(NODE, entry, ran((B, False), cycled=True))
    after = memory.load(NODE)
    assert after is not None and after.tried == [B] and after.flaky == [C]


def test_another_version_s_entry_is_set_aside_and_a_broken_one_is_refused_naming_the_fix(tmp_path: Path):
    Memory(tmp_path, "here", "0.1.0").save(NODE, None, ran((A, False)))
    assert Memory(tmp_path, "here", "0.2.0").load(NODE) is None
    path = Memory(tmp_path, "here", "0.2.0").path(NODE)
    assert path is not None
    path.write_text('{"nodeid": "x"}')
    with pytest.raises(MemoryError_, match=r"cannot be read \(KeyError: 'plugin'\); delete it, run pytest "
                                           r"--cache-clear, or pass --chaos-explore-db=off"):
        Memory(tmp_path, "here", "0.2.0").load(NODE)
    off = Memory(None, "off", "0.2.0")
    off.save(NODE, None, ran((A, False)))
    assert off.load(NODE) is None and not off.on
