"""Faults whose recoveries overlap, measured as one (``analysis/groups.py``): synthetic one histories with known
answers -- a job planning a micro-batch a second, 50 records/s, its output held back for each planted outage
and caught up at 150 records/s (``synthetic.one_history``) -- and bare per-fault metrics for the verdicts."""

from __future__ import annotations

import math

import pytest
from synthetic import T0, Schedule, one_history, seen_at
from test_windows import ONE_HISTORY

from pytest_streamchaos.analysis.groups import group_recoveries, group_recovery, overlaps, recovery_groups
from pytest_streamchaos.analysis.metrics import NOT_RECOVERED, compute_metrics
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.run_metrics import FaultMetrics
from pytest_streamchaos.analysis.sentinels import RecoveryTime
from pytest_streamchaos.history import History

#: window 1 plays a pair: a driver kill at +32 s (output held 6 s), killed again at +35 s (held 5 s more): no
#: output from +32 s to +40 s, as one 8 s outage
PAIR = (ONE_HISTORY[0], Schedule("kill_driver", 32.0, 6.0, 50.0), Schedule("kill_executor", 52.0, 4.0, 64.0),
        Schedule("kill_driver", 66.0, 5.0, 79.0))
ONE_OUTAGE = (PAIR[0], Schedule("kill_driver", 32.0, 8.0, 50.0), *PAIR[2:])


def fault(t: float, recovery: RecoveryTime | None, horizon: float, label: str = "") -> FaultMetrics:
    """A fault injected at ``t`` measured up to ``horizon``: recovered after ``recovery`` seconds (None: not
    measured; :data:`NOT_RECOVERED`: not by its horizon)."""
    back = None if recovery is None or recovery is NOT_RECOVERED else t + float(recovery)
    return FaultMetrics(t=t, kind="kill_driver", target="", horizon=horizon, downtime=1.0, gap_start=None,
                        gap_end=None, output_symptom=0.5, output_gap=1.0, catch_up=None, recovery_time=recovery,
                        recovered_at=back, first_output_after=None, peak_latency=1.0, failure_cost=1.0,
                        verdict="outage", label=label)


def test_two_overlapping_faults_recover_as_one_from_the_first_injection() -> None:
    """The pair's recovery is exactly that of one 8 s outage from the first kill; the second kill's own is 3 s
    shorter (it came 3 s later): the group counts from the first injection."""
    run = ChaosRun.from_trace(one_history(PAIR, pairs=[(1, 35.0, 5.0)]), guarantee="at-least-once")
    one = ChaosRun.from_trace(one_history(ONE_OUTAGE), guarantee="at-least-once")
    first, second = run.windows[1].faults
    assert first.recovered is False and first.horizon == second.t  # cut off: no recovery of its own
    assert [[f.label for f in g] for g in recovery_groups(run.faults)][1] == [first.label, second.label]
    assert group_recovery([first, second]) == pytest.approx(second.recovered_at - first.t)
    assert run.windows[1].recovery_time == pytest.approx(float(one.windows[1].recovery_time)) == pytest.approx(12.0)
    assert float(second.recovery_time) == pytest.approx(12.0 - 3.0)
    assert [float(w.recovery_time) for w in run.windows] == pytest.approx([4.0, 12.0, 6.0, 7.0, 0.0])
    assert run.recovery_time == pytest.approx(12.0)  # the run's: its worst group's


def test_the_run_s_account_says_the_cut_off_fault_came_back_with_the_next() -> None:
    """``describe()`` names what struck the cut-off kill and that the job came back after it (its "not recovered"
    alone would read as a job that never came back); a pair whose second kill never recovers says no such thing."""
    run = ChaosRun.from_trace(one_history(PAIR, pairs=[(1, 35.0, 5.0)]), guarantee="at-least-once")
    cut = [line for line in run.describe().splitlines() if line.startswith("fault ") and "cut off by" in line]
    assert len(cut) == 1 and "not recovered by +35.0s" in cut[0] and "cut off by kill_driver" in cut[0], cut
    assert "at +35.0s, after which the job came back" in cut[0]
    dead = ChaosRun.from_trace(one_history(PAIR, pairs=[(3, 69.0, 5.0)], stop_at=69.5), guarantee="at-least-once")
    assert not [line for line in dead.describe().splitlines() if line.startswith("fault ") and "cut off" in line]


def test_the_schedule_s_own_view_reports_the_pair_s_recovery() -> None:
    """The body's view of window 1, as the runner judged it when it closed the window, says the pair recovered
    in 12 s -- no longer "not measurable"."""
    trace = one_history(PAIR, pairs=[(1, 35.0, 5.0)])
    seen = seen_at(trace, T0 + PAIR[1].closed)
    view = ChaosRun.from_trace(History(seen).focused(History(trace).windows[1]), guarantee="at-least-once")
    assert len(view.faults) == 2 and view.recovery_time == pytest.approx(12.0) and view.metrics.recovered is True


def test_a_pair_whose_second_fault_never_recovers_is_not_recovered() -> None:
    """The last schedule's driver is killed again 3 s into its outage and the job dies (no output from +69.5 s):
    the first kill is struck before it recovered, but nothing came back after it -- the pair is not recovered,
    not "cut off", and the run says so."""
    run = ChaosRun.from_trace(one_history(PAIR, pairs=[(3, 69.0, 5.0)], stop_at=69.5), guarantee="at-least-once")
    *_, pair, _tail = run.windows
    assert [f.recovered for f in pair.faults] == [False, False] and not pair.cut
    assert pair.recovery_time is NOT_RECOVERED and pair.to_dict()["recovered"] is False
    assert run.metrics.recovery_time is NOT_RECOVERED and run.metrics.recovered is False


def test_faults_that_do_not_overlap_each_recover_on_their_own() -> None:
    """Two steps of one schedule, the second struck after the first recovered (+32 s, back at +36 s; +44 s):
    two groups, each its own recovery; one history's four single-step schedules: four groups of one."""
    steps = (PAIR[0], Schedule("kill_driver", 32.0, 3.0, 62.0), Schedule("kill_executor", 64.0, 4.0, 76.0),
             Schedule("kill_driver", 78.0, 5.0, 91.0))
    run = ChaosRun.from_trace(one_history(steps, pairs=[(1, 44.0, 3.0)]), guarantee="at-least-once")
    first, second = run.windows[1].faults
    assert first.recovered and not overlaps(first, second)
    mine = recovery_groups(run.windows[1].faults)
    assert mine == [[first], [second]] and group_recoveries(run.windows[1].faults) == [4.0, 4.0]
    assert run.windows[1].recovery_time == pytest.approx(4.0) and not run.windows[1].cut
    m = compute_metrics(History(one_history(ONE_HISTORY)))
    assert [len(g) for g in recovery_groups(m.faults)] == [1, 1, 1, 1]
    assert group_recoveries(m.faults) == [f.recovery_time for f in m.faults] == pytest.approx([4.0, 9.0, 6.0, 7.0])


def test_a_cut_off_without_a_later_recovery_stays_not_recovered() -> None:
    """No false green: a chain whose last fault did not recover is not recovered, one whose last fault was not
    measured is not measurable, and a fault that did not recover by the end of the load joins no later fault."""
    cut = fault(10.0, NOT_RECOVERED, 20.0)
    assert group_recoveries([cut, fault(20.0, NOT_RECOVERED, 90.0)]) == [NOT_RECOVERED]
    assert group_recoveries([cut, fault(20.0, None, 90.0)]) == [None]
    assert group_recoveries([cut, fault(20.0, 7.0, 90.0)]) == [17.0]
    assert group_recoveries([fault(10.0, NOT_RECOVERED, 60.0), fault(70.0, 3.0, 90.0)]) == [NOT_RECOVERED, 3.0]
    # a fault not measured joins nothing: its group is not measurable, never the next fault's recovery
    assert group_recoveries([fault(10.0, None, 20.0), fault(20.0, 7.0, 90.0)]) == [None, 7.0]
    # a window's fault cut off by another window's: its group's recovery is not measurable there
    assert group_recoveries([fault(10.0, NOT_RECOVERED, 20.0, "a")], {"a"}) == [None]


def test_faults_of_one_occurrence_recover_as_one() -> None:
    """Faults injected less than a bucket apart are measured together (one recovery point): one group, whose
    recovery counts from the first -- the first's own, never the sum of both."""
    a, b = fault(10.0, 9.0, 60.0), fault(10.4, 8.6, 60.0)
    assert recovery_groups([b, a]) == [[a, b]] and group_recovery([a, b]) == pytest.approx(9.0)
    assert not math.isclose(float(group_recovery([a, b]) or 0), 17.6)


def test_a_fault_cut_off_by_the_next_window_s_fault_is_not_measurable_in_its_own() -> None:
    """A schedule's second step (+45 s, held 3 s) struck by the next schedule's fault (+52 s) before its hold
    ended: the job came back after both, but the rest of the chain is another window's -- this window's
    recovery is not measurable, never "not recovered", and the whole run's counts the chain as one."""
    steps = (PAIR[0], Schedule("kill_driver", 32.0, 3.0, 60.0), *PAIR[2:])
    run = ChaosRun.from_trace(one_history(steps, pairs=[(1, 45.0, 3.0)]), guarantee="at-least-once")
    first, second = run.windows[1].faults
    cutter = run.windows[2].faults[0]
    assert first.recovered and second.recovered is False and run.windows[1].cut == {second.label: cutter.label}
    assert run.windows[1].recovery_time is None and run.windows[1].to_dict()["recovered"] is None
    assert run.recovery_time == pytest.approx(float(cutter.recovered_at - second.t))
