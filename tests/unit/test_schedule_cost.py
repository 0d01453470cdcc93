"""What an explored schedule cost (``exploration/histories.py``): its wall time, its faults' own recovery and the
harness's share, and the summary line of their medians, on fake outcomes with known answers."""

from __future__ import annotations

from types import SimpleNamespace

from synthetic import Schedule, one_history

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.exploration.histories import cost_line, harness_parts, schedule_cost, shown_at
from pytest_streamchaos.history import History


def outcome(seconds: float, *faults: tuple[float, float | None]) -> SimpleNamespace:
    """A run of ``seconds`` whose faults were injected at ``t`` and back at ``recovered_at`` (None: not measured)."""
    fs = [SimpleNamespace(t=t, recovered_at=back, phases=[], recovery_time=None if back is None else back - t)
          for t, back in faults]
    history = SimpleNamespace(focus=None, timeline=[])
    return SimpleNamespace(seconds=seconds, run=SimpleNamespace(faults=fs, fault_records=[], history=history))


def test_a_fault_back_in_band_splits_the_wall_into_its_recovery_and_the_harness_share() -> None:
    assert schedule_cost(outcome(30.0, (100.0, 120.0))) == {"wall": 30.0, "recovery": 20.0, "harness": 10.0,
                                                             "recovered_in": 20.0}


def test_a_fault_whose_recovery_was_not_measured_leaves_the_share_unmeasured() -> None:
    assert schedule_cost(outcome(60.0, (100.0, None), (110.0, 140.0)))["harness"] is None


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
