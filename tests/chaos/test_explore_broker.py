"""``@explore`` with ``kill_broker`` on a real job (issue 33, the broker phases): the search kills the
leader of the job's input partition and of its output partition at the micro-batch phases where the
job reads or writes through them, each kill lands (the killed broker led the partition across the
kill), the leader moves, and the Kafka-to-Kafka ledger held to at-least-once loses nothing.

The explored test runs in a pytest session of its own (as in ``test_explore.py``); its body also
writes, per run, what the run's timeline says of the kills and of the partitions' leaders, for this
test to assert the effect: the search's JSON keeps only one run's timeline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planted import clear_paths, nested_session_env

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: every single leader cell this job has, and spare runs for missed kills: the output leader at
#: output_visible_uncommitted, one tasks_running kill that never fires (this job's tasks rename nothing the
#: gate could hold: after it, moment_never_came leaves every tasks_running cell out), the input leader at
#: offsets_logged, both between batches
BUDGET = 7

EXPLORED = '''
import json

import pytest
from planted import hardcoded_paths, ledger  # noqa: F401  (hardcoded_paths: an autouse fixture)
from pytest_streamchaos import explore


def note(run):
    """What this run's timeline says of the kills and the partitions' leaders (for the outer test)."""
    kinds = ("fault_injected", "leader_elected", "leader_lost")
    events = [{{"t": e.t, "kind": e.kind, "target": e.target, "detail": e.detail}}
              for e in run.history.timeline if e.kind in kinds]
    with open("leaders.jsonl", "a") as f:
        f.write(json.dumps(events, default=str) + "\\n")


@pytest.mark.chaos(backend="local")
@explore(faults=["kill_broker"], budget={budget}, max_faults=1)
def test_ledger_loses_nothing_when_its_leaders_die(chaos):
    run = ledger(chaos, "at-least-once")
    note(run)
    assert run.lost == 0, f"{{run.lost}} payments lost"
'''

#: the partitions whose leaders the targets are (the ledger job's hard-coded topics)
PARTITION = {"input_leader": "payments[0]", "output_leader": "ledger[0]"}


@pytest.fixture
def explored(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    nested_session_env(monkeypatch, ROOT, HERE)
    pytester.makepyfile(test_explored=EXPLORED.format(budget=BUDGET))
    yield lambda: pytester.runpytest_subprocess("test_explored.py", "-p", "no:cacheprovider",
                                                "--chaos-report=report.json", timeout=1500)
    clear_paths()


def kills(pytester: pytest.Pytester) -> list[tuple[dict, list[dict]]]:
    """Each run's broker kill (its ``fault_injected`` event) with the leader events that followed it."""
    out = []
    for line in (pytester.path / "leaders.jsonl").read_text().splitlines():
        events = json.loads(line)
        injected = [e for e in events if e["kind"] == "fault_injected"]
        if injected:
            out.append((injected[0], [e for e in events if e["kind"] != "fault_injected"]))
    return out


def assert_the_leader_moved_after_the_kill(kill: dict, leaders: list[dict]) -> None:
    """The killed broker led its partition when looked up and right after the signal (when that answer
    came soon enough to tell), and the partition's next leader event names another one, stamped after
    the kill (an effect never before its cause)."""
    d = kill["detail"]
    assert d["aim"]["hit"] and d["leader_after_kill"] in (d["leader"], None), d
    moved = [e for e in leaders if e["target"] == d["partition"] and e["t"] > kill["t"]
             and e["detail"].get("previous") == d["leader"]]
    assert moved, f"no leader change of {d['partition']} after broker-{d['leader']} was killed: {leaders}"
    assert all(e["t"] >= kill["t"] for e in leaders if e["target"] == d["partition"]
               and e["detail"].get("previous") == d["leader"])


@pytest.mark.slow
@pytest.mark.chaos(backend="local")
def test_explore_kills_the_input_and_output_leaders_and_the_ledger_loses_nothing(explored, pytester):
    result = explored()
    print(result.stdout.str())
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    [doc] = json.loads((pytester.path / "report.json").read_text())
    explore = doc["explore"]
    assert explore["runs"][0]["purpose"] == "control" and explore["verdict"] == "passed"
    runs = explore["runs"][1:]  # the schedules, after the control run without faults
    assert explore["found"] is None and explore["flaky"] == [] and 5 <= len(runs) <= BUDGET
    assert all(not r["falsified"] and r["error"] is None for r in runs), runs
    assert sum(s["phase"] == "tasks_running" for r in runs for s in r["schedule"]) == 1, runs  # then pruned
    hit = {(s["target"], s["phase"]) for r in runs if r["hit"] for s in r["schedule"]}
    assert {t for t, _ in hit} == {"input_leader", "output_leader"}, runs  # both leaders killed, aims hit
    assert ("output_leader", "output_visible_uncommitted") in hit and ("input_leader", "offsets_logged") in hit
    coverage = explore["coverage"]
    assert ["kill_broker", "output_visible_uncommitted"] in coverage["cells_covered"]
    assert ["kill_broker", "offsets_logged"] in coverage["cells_covered"]
    assert sorted(coverage["pruned"]["idle_broker"]) == ["kill_broker input_leader output_visible_uncommitted",
                                                         "kill_broker output_leader offsets_logged"]
    assert sorted(coverage["pruned"]["moment_never_came"]) == ["kill_broker input_leader tasks_running",
                                                               "kill_broker output_leader tasks_running"]
    landed = [(k, leaders) for k, leaders in kills(pytester) if k["detail"]["aim"]["hit"]]
    assert {k["detail"]["partition"] for k, _ in landed} == set(PARTITION.values())
    for kill, leaders in landed:
        assert_the_leader_moved_after_the_kill(kill, leaders)
    aimed = sum(len(r["schedule"]) for r in runs)
    per_run = [r["seconds"] for r in runs]
    print(f"broker aims hit {sum(r['hit'] for r in runs)}/{aimed}; seconds per schedule "
          f"{min(per_run):.0f}-{max(per_run):.0f} (mean {sum(per_run) / len(per_run):.0f})")
    result.stdout.fnmatch_lines(["*test_ledger_loses_nothing_when_its_leaders_die: passed (@explore: kill_broker*",
                                 "*pruned by idle_broker: *"])
