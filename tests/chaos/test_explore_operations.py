"""``@explore`` searches Kafka's own operations and a damaged checkpoint beside the process kills: a dropped
commit between batches and a reassignment of the input's or the output's leaders at each micro-batch phase,
with the driver kills, on the Kafka-sink ledger held to "loses nothing" (a correct property for it: a replay
duplicates, it never loses). The explored test runs in a session of its own (as tests/chaos/test_explore.py's);
this test asserts on its output and JSON report: green, and the new kinds' cells covered, each landed."""

from __future__ import annotations

import pytest
from planted import clear_paths, explored_session

BUDGET = 8  # the singles up to the dropped commit (tasks_running cells are left out after the first miss)

EXPLORED = f'''
import pytest
from planted import hardcoded_paths, ledger  # noqa: F401  (an autouse fixture)
from pytest_streamchaos import explore


@pytest.mark.chaos(backend="local")
@explore(faults=["kill_driver", "drop_commit", "reassign_partitions"], budget={BUDGET})
def test_ledger_loses_nothing(chaos):
    run = ledger(chaos, "at-least-once")
    assert run.lost == 0, f"{{run.lost}} payments lost"
'''


@pytest.mark.slow
@pytest.mark.chaos(backend="local")
def test_explore_searches_a_dropped_commit_and_a_reassignment_beside_the_driver_kills(pytester, monkeypatch):
    result, explore = explored_session(pytester, monkeypatch, EXPLORED, clear_paths, timeout=2400)
    assert explore["found"] is None and explore["verdict"] == "passed"
    assert [r["purpose"] for r in explore["runs"]] == ["control"] + ["explore"] * BUDGET, explore["runs"]
    covered = explore["coverage"]["cells_covered"]
    for cell in (["kill_driver", "output_visible_uncommitted"], ["reassign_partitions", "output_visible_uncommitted"],
                 ["drop_commit", "between_batches"]):
        assert cell in covered, (cell, covered)
    landed = [s for r in explore["runs"] if r["hit"] for s in r["schedule"]]
    assert {s["kind"] for s in landed} == {"kill_driver", "drop_commit", "reassign_partitions"}, explore["runs"]
    result.stdout.fnmatch_lines(["*test_ledger_loses_nothing: passed (@explore: kill_driver, drop_commit, "
                                 f"reassign_partitions, budget {BUDGET})*"])
