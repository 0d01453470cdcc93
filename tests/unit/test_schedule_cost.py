"""What an explored schedule cost (``exploration/histories.py``): its wall time, its faults' own recovery and the
harness's share, and the summary line of their medians, on fake outcomes with known answers."""

from __future__ import annotations

from types import SimpleNamespace

from synthetic import Schedule, one_history

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.sentinels import NOT_RECOVERED
from pytest_streamchaos.exploration.histories import cost_line, harness_parts, schedule_cost, shown_at
from pytest_streamchaos.history import History


def outcome(seconds: float, *faults: tuple[float, float | None] | tuple[float, float | None, float]) -> SimpleNamespace:
    """A run of ``seconds`` whose faults were injected at ``t`` and back at ``recovered_at`` (None: not measured),
    each measured up to the next one; ``(t, None, cut)``: not recovered by ``cut`` (the next fault's injection)."""
    fs = []
    for t, back, *cut in faults:
        rec = NOT_RECOVERED if cut else None if back is None else back - t
        fs.append(SimpleNamespace(t=t, recovered_at=back, phases=[], recovery_time=rec, label="",
                                  recovered=None if rec is None else rec is not NOT_RECOVERED,
                                  horizon=cut[0] if cut else 1e9))
    history = SimpleNamespace(focus=None, timeline=[])
    return SimpleNamespace(seconds=seconds, run=SimpleNamespace(faults=fs, fault_records=[], history=history))


def test_a_fault_back_in_band_splits_the_wall_into_its_recovery_and_the_harness_share() -> None:
    assert schedule_cost(outcome(30.0, (100.0, 120.0))) == {"wall": 30.0, "recovery": 20.0, "harness": 10.0,
                                                             "recovered_in": 20.0}


def test_a_fault_whose_recovery_was_not_measured_leaves_the_share_unmeasured() -> None:
    assert schedule_cost(outcome(60.0, (100.0, None), (110.0, 140.0)))["harness"] is None


def test_a_step_struck_by_the_next_before_it_recovered_recovers_with_it() -> None:
    """A pair: the first step cut off at the second's injection (+10 s), the second back 30 s after it: the
    schedule's own recovery is the pair's, 40 s from the first injection, and the share the rest."""
    assert schedule_cost(outcome(60.0, (100.0, None, 110.0), (110.0, 140.0))) == {
        "wall": 60.0, "recovery": 40.0, "harness": 20.0, "recovered_in": 40.0}


def test_a_cut_off_step_whose_next_never_recovered_leaves_the_share_unmeasured() -> None:
    assert schedule_cost(outcome(90.0, (100.0, None, 110.0), (110.0, None, 1e9)))["harness"] is None


def test_steps_that_do_not_overlap_count_each_its_own_recovery() -> None:
    """Two steps, the second struck after the first recovered: the recoveries add up (20 s + 10 s); the 10 s the
    job ran in band between them, waiting for the second step's moment, is the harness's."""
    assert schedule_cost(outcome(50.0, (100.0, 120.0), (130.0, 140.0))) == {
        "wall": 50.0, "recovery": 30.0, "harness": 20.0, "recovered_in": 20.0}


def test_the_line_says_of_how_many_runs_the_recovery_and_the_share_are() -> None:
    measured = [outcome(30.0, (100.0, 120.0)), outcome(40.0, (100.0, 130.0))]
    assert cost_line(measured) == ("per schedule: median 35s, of which its faults' own recovery 25s and the "
                                   "harness's share 10s (2 runs)")
    line = cost_line([*measured, outcome(70.0, (100.0, None), (110.0, 150.0))])
    assert line == ("per schedule: median 40s, of which its faults' own recovery 25s and the harness's share 10s "
                    "(3 runs; recovery and share of the 2 whose recovery was measured)")


def test_the_line_says_when_no_run_s_recovery_was_measured() -> None:
    assert cost_line([outcome(53.0, (100.0, None))]) == "per schedule: median 53s (1 runs; no run's recovery measured)"


def test_a_windows_close_is_what_came_after_the_history_could_show_its_recovery() -> None:
    """Four schedules of a synthetic one history (``tests/unit/synthetic.py``), each window closed when the
    history first showed its fault back -- its recovery point, the 5 s hold, the 1 s normal gap -- but the first,
    closed 1.5 s later: the close is 1.5 s there and nothing elsewhere; of the confirmation, the rest is the hold
    and the normal gap. A window whose fault showed no sign has no close (it is over once quiet)."""
    schedules = (Schedule("kill_executor", 20.0, 3.0, 31.5), Schedule("kill_driver", 32.0, 6.0, 47.0),
                 Schedule("kill_executor", 49.0, 4.0, 61.0), Schedule("kill_driver", 63.0, 5.0, 76.0))
    trace = one_history(schedules)
    views = [ChaosRun.from_trace(History(trace).focused(w), guarantee="at-least-once")
             for w in History(trace).windows[:4]]
    parts = [harness_parts(v, v.faults[0].t, v.faults[0].recovered_at) for v in views]
    assert [p["close"] for p in parts] == [1.5, 0.0, 0.0, 0.0]
    assert [p["confirm"] for p in parts] == [7.5, 6.0, 6.0, 6.0]
    masked = SimpleNamespace(faults=[SimpleNamespace(output_symptom=None, recovered_at=100.0)])
    assert shown_at(masked) is None  # type: ignore[arg-type]
