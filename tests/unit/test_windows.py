"""Each window of one history judged on its own (``analysis/windows.py``): synthetic traces with known answers.

A job planning a micro-batch every second, 10 records/s; a fault strikes the batch in flight, whose records
were sent in the second before it was planned. The first fault's batch comes out twice (10 duplicates), the
second's loses 5 records: each window says so of its own records, the whole run says 10 and 5.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from synthetic import T0, Outage, Schedule, one_history, seen_at, stateless_trace

from pytest_streamchaos.analysis.metrics import NOT_RECOVERED, compute_metrics
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.run_metrics import faults_back
from pytest_streamchaos.analysis.windows import batch_boundary, restrict
from pytest_streamchaos.events import Kind, TimelineEvent
from pytest_streamchaos.history import History, Window
from pytest_streamchaos.records import Trace

RATE = 10.0


def labelled(trace: Trace, labels: list[str]) -> Trace:
    """The trace's fault injections named (as the scheduler names its occurrences)."""
    injected = [e for e in trace.timeline if e.kind == Kind.FAULT_INJECTED]
    for e, label in zip(injected, labels, strict=True):
        e.detail.update(fault="kill_driver", label=label)
    return trace


def two_faults(outages: tuple[Outage, ...] = ()) -> Trace:
    """Faults at +20.5 s (the batch planned at +20, records sent in [19, 20), comes out twice) and +50.5 s
    (the batch planned at +50 loses 5 of its records, sent in [49, 49.5))."""
    return labelled(stateless_trace(rate=RATE, duration=80, latency=0.2, batch_interval=1.0, progress=True,
                                    faults=[20.5, 50.5], duplicate=np.arange(190, 200), drop=np.arange(490, 495),
                                    outages=outages),
                    ["kill_driver#1", "kill_driver#2"])


def test_each_window_says_what_its_own_fault_did_and_the_whole_adds_up() -> None:
    run = ChaosRun.from_trace(two_faults(), guarantee="exactly-once")
    first, second = run.windows
    assert (first.window.faults, second.window.faults) == (("kill_driver#1",), ("kill_driver#2",))
    # the second fault's reach begins where the last batch that ended before it was planned: +49 s
    assert first.window.end == second.window.start == pytest.approx(T0 + 49.0)
    assert (first.duplicates, first.lost) == (10, 0) and sorted(first.report.duplicate_ids) == list(range(190, 200))
    assert (second.duplicates, second.lost) == (0, 5) and sorted(second.report.lost_ids) == list(range(490, 495))
    assert first.guarantee_delivered == "at-least-once" and second.guarantee_delivered == "at-most-once"
    assert first.ok is False and second.ok is False
    assert (run.duplicates, run.lost) == (10, 5)
    assert first.sent + second.sent == run.sent == 800 and first.sent == 490
    assert [w.faults[0].label for w in run.windows] == ["kill_driver#1", "kill_driver#2"]
    assert run.checks["windows"].ok is False
    assert "window 1 (kill_driver#2): 310 sent, lost 5, duplicates 0" in run.describe()


def test_a_window_view_judges_its_own_records_and_faults_against_the_whole() -> None:
    """The view a schedule of one history gets: the counts of its window, its own faults, the baseline of the
    whole history."""
    trace = two_faults()
    window = Window(1, "kill_driver#2", T0 + 49.0, math.inf, ("kill_driver#2",))
    view = ChaosRun.from_trace(History(trace).focused(window), guarantee="exactly-once")
    assert (view.lost, view.duplicates, view.sent) == (5, 0, 310)
    assert view.guarantee_delivered == "at-most-once"
    assert [f.label for f in view.fault_records] == ["kill_driver#2"]
    assert len(view.faults) == 1 and view.faults[0].t == pytest.approx(T0 + 50.5)
    assert view.window is not None and view.window.lost == 5
    assert [v.metric for v in view.check_sla(guarantee="at-least-once")] == ["guarantee"]
    assert "one history, window 1" in view.describe()
    # the first window's view: its duplicates, and nothing of the second's loss
    first = ChaosRun.from_trace(History(trace).focused(Window(0, "kill_driver#1", -math.inf, T0 + 49.0,
                                                              ("kill_driver#1",))))
    assert (first.lost, first.duplicates, first.sent) == (0, 10, 490)


def test_windows_the_runner_closed_win_over_the_faults_own() -> None:
    """A history whose runner closed its windows (``history_window``) is split there, a window without a fault
    (the control run) included."""
    trace = two_faults()
    for w in (Window(0, "control", -math.inf, T0 + 10.0), Window(1, "kill_driver#1", T0 + 10.0, T0 + 40.0,
                                                                    ("kill_driver#1",)),
              Window(2, "kill_driver#2", T0 + 40.0, math.inf, ("kill_driver#2",))):
        trace.timeline.append(TimelineEvent(T0 + 79.0, Kind.HISTORY_WINDOW, "", w.detail()))
    run = ChaosRun.from_trace(trace)
    control, one, two = run.windows
    assert control.sent == 100 and not control.faults and (control.lost, control.duplicates) == (0, 0)
    assert (one.sent, one.duplicates, one.lost) == (300, 10, 0)
    assert (two.sent, two.duplicates, two.lost) == (400, 0, 5)


def test_faults_whose_effects_overlap_share_a_window() -> None:
    """The second fault strikes before the first recovered (its outage lasts to +55 s): no record can be told
    apart between them, so they are judged together."""
    run = ChaosRun.from_trace(two_faults(outages=(Outage(21.0, 34.0),)), guarantee="at-least-once")
    [both] = run.windows
    assert both.window.faults == ("kill_driver#1", "kill_driver#2") and both.window.start == -math.inf
    assert (both.duplicates, both.lost) == (10, 5)


def test_an_id_never_sent_is_the_window_it_came_out_in() -> None:
    trace = two_faults()
    out = trace.outputs
    ids = np.concatenate((out.ids, [10_000]))
    arrival = np.concatenate((out.arrival_ts, [T0 + 60.0]))
    from synthetic import _csr

    trace = Trace(trace.sent, _csr(arrival, ids), batches=trace.batches, timeline=trace.timeline, phases=trace.phases)
    first, second = ChaosRun.from_trace(trace).windows
    assert (first.incorrect, second.incorrect) == (0, 1)


def test_without_micro_batches_a_boundary_is_one_trigger_before_the_fault() -> None:
    trace = stateless_trace(rate=RATE, duration=30, faults=[10.0])
    assert batch_boundary(History(trace), T0 + 10.0) == pytest.approx(T0 + 9.0)


def test_a_report_per_aggregate_cannot_be_split() -> None:
    from pytest_streamchaos.analysis.oracle import IdentityOracle
    from pytest_streamchaos.analysis.validate import validate

    trace = two_faults()
    report = validate(trace, IdentityOracle())
    report.resolution = "aggregate"
    assert restrict(report, History(trace), Window(0)) is None


def test_a_run_without_faults_has_no_windows() -> None:
    run = ChaosRun.from_trace(stateless_trace(rate=RATE, duration=20))
    assert run.windows == [] and run.window is None and run.checks["windows"].ok is None


def test_a_schedule_is_over_once_its_fault_recovered_or_was_noticed_and_quiet() -> None:
    """When the next schedule of one history may fire (``faults_back``): a fault with an outage once its
    recovery point and hold are seen; a fault without a sign once the system noticed it and has been quiet
    for the hold and a normal gap; never while nothing noticed it."""
    from synthetic import seen_at

    from pytest_streamchaos.analysis.metrics import compute_metrics
    from pytest_streamchaos.analysis.run_metrics import faults_back

    outage = labelled(stateless_trace(rate=RATE, duration=80, batch_interval=1.0, progress=True, faults=[20.0],
                                      outages=[Outage(20.0, 10.0, catch_up_rate=40.0)]), ["kill_driver#1"])

    def back(trace: Trace, t: float) -> bool:
        seen = seen_at(trace, T0 + t)
        return faults_back(compute_metrics(History(seen)), {"kill_driver#1"}, seen.timeline)

    assert not back(outage, 28.0) and not back(outage, 36.0) and back(outage, 60.0)
    masked = labelled(stateless_trace(rate=RATE, duration=80, batch_interval=1.0, progress=True, faults=[20.0]),
                      ["kill_driver#1"])
    assert not back(masked, 60.0)  # nothing noticed it: it may show later
    masked.timeline.append(TimelineEvent(T0 + 21.0, Kind.EXECUTOR_REMOVED, "1"))
    masked.timeline.append(TimelineEvent(T0 + 26.0, Kind.EXECUTOR_ADDED, "2"))
    assert not back(masked, 28.0) and back(masked, 40.0)
    assert faults_back(compute_metrics(History(masked)), {"another"}, masked.timeline)  # none of its faults fired


def test_a_fault_the_schedules_next_fault_struck_before_it_recovered_counts_through_that_one() -> None:
    """A pair: the driver killed again while it replays. The first kill's recovery is cut at the second (not
    recovered, by its own numbers); the schedule is over once the second one recovered."""
    from pytest_streamchaos.analysis.metrics import compute_metrics
    from pytest_streamchaos.analysis.run_metrics import faults_back, uncovered

    trace = two_faults(outages=(Outage(21.0, 34.0, catch_up_rate=40.0),))
    m = compute_metrics(History(trace))
    first, second = m.faults
    assert first.recovered is False and second.recovered is True
    assert uncovered(m.faults) == [second]
    assert faults_back(m, {"kill_driver#1", "kill_driver#2"}, trace.timeline)


#: four schedules of one history, two fault kinds each played twice, outages of 3, 6, 4 and 5 s; each window
#: closed when the runner's own judgement (``faults_back`` on the history so far) first said its fault was back,
#: the next fault 2 s later (the window's outputs read, the next schedule armed)
ONE_HISTORY = (Schedule("kill_executor", 20.0, 3.0, 30.0), Schedule("kill_driver", 32.0, 6.0, 47.0),
               Schedule("kill_executor", 49.0, 4.0, 61.0), Schedule("kill_driver", 63.0, 5.0, 76.0))


def views(trace: Trace, schedules: tuple[Schedule, ...]) -> list[ChaosRun]:
    """Each schedule's own view, as the runner judged it when it closed the window: the history so far."""
    out = []
    for window, s in zip(History(trace).windows, schedules, strict=False):
        seen = seen_at(trace, T0 + s.closed)
        labels = set(window.faults)
        assert faults_back(compute_metrics(History(seen)), labels, seen.timeline), window  # the runner moved on
        out.append(ChaosRun.from_trace(History(seen).focused(window), guarantee="at-least-once"))
    return out


def test_each_window_of_one_history_recovered_with_its_own_cost() -> None:
    """The runner judged every fault back before the next schedule fired; the whole history says so too, each
    window with its own fault's recovery and cost -- the next fault's dip, 2 s after, is not smoothed back into
    the recovery before it, and a window's cost is not the worst latency of the rest of the history."""
    trace = one_history(ONE_HISTORY)
    run = ChaosRun.from_trace(trace, guarantee="at-least-once")
    *mine, tail = run.windows
    assert [w.window.faults for w in mine] == [(f"{s.kind} step=1 window={i}",) for i, s in enumerate(ONE_HISTORY)]
    assert all(w.to_dict()["recovered"] is True for w in run.windows) and run.metrics.recovered is True
    own = [(float(v.faults[0].recovery_time), v.faults[0].failure_cost) for v in views(trace, ONE_HISTORY)]
    assert [(float(w.recovery_time), w.failure_cost) for w in mine] == own
    # the output held back for the outage: the first record held waited its length (the baseline p99 is 1 s,
    # the micro-batch's own wait); the recovery is the outage, the catch-up and the 5 s hold
    assert [w.failure_cost for w in mine] == pytest.approx([s.outage for s in ONE_HISTORY], abs=0.5)
    assert [float(w.recovery_time) for w in mine] == pytest.approx([4.0, 9.0, 6.0, 7.0])
    assert not tail.faults and tail.recovery_time == 0.0
    assert "window 1 (kill_driver step=1 window=1): " in run.describe() and "NOT RECOVERED" not in run.describe()


def test_a_fault_cut_off_by_its_pair_recovers_with_it_never_unrecovered() -> None:
    """Window 1 plays a pair: the driver killed again 3 s into the first kill's outage. The first kill's own
    recovery is cut off by the second (the job came back after both): not measurable on its own, never "not
    recovered"; the pair recovered as one (analysis/groups.py); the window's cost is the pair's own, the other
    windows keep theirs."""
    schedules = (ONE_HISTORY[0], Schedule("kill_driver", 32.0, 6.0, 50.0), Schedule("kill_executor", 52.0, 4.0, 64.0),
                 Schedule("kill_driver", 66.0, 5.0, 79.0))
    run = ChaosRun.from_trace(one_history(schedules, pairs=[(1, 35.0, 5.0)]), guarantee="at-least-once")
    zero, pair, two, three, _ = run.windows
    first, second = (f.label for f in pair.faults)
    assert pair.cut == {first: second} and pair.faults[0].recovered is False and pair.faults[1].recovered is True
    # no output from +32 s to +40 s: the pair's recovery is that of one 8 s outage from the first kill
    assert pair.to_dict()["recovered"] is True and pair.recovery_time == pytest.approx(12.0)
    assert pair.failure_cost == pytest.approx(8.0, abs=0.5)  # held from +32 s until the second outage ended
    assert [w.to_dict()["recovered"] for w in (zero, two, three)] == [True, True, True]
    assert [w.failure_cost for w in (zero, two, three)] == pytest.approx([3.0, 4.0, 5.0], abs=0.5)
    assert (f"({first} cut off by {second} before it recovered; the job came back, measured with it as one)"
            in pair.describe())
    # the run as a whole: the job came back after every fault; its recovery time is the worst group's, the pair's
    assert run.metrics.recovery_time == pytest.approx(12.0) and run.metrics.recovered is True


def test_only_the_window_whose_fault_never_recovered_says_so() -> None:
    """The last schedule's driver kill leaves the job dead (no output from +63.5 s): that window is not
    recovered, and its cost is the rest of the history's wait; the windows before it recovered, with their
    own costs."""
    dies = Schedule("kill_driver", 63.0, 5.0, 100.0)
    run = ChaosRun.from_trace(one_history((*ONE_HISTORY[:3], dies), stop_at=63.5), guarantee="at-least-once")
    *before, dead, tail = run.windows
    assert [w.to_dict()["recovered"] for w in before] == [True, True, True]
    assert [float(w.recovery_time) for w in before] == pytest.approx([4.0, 9.0, 6.0])
    assert dead.to_dict()["recovered"] is False and dead.recovery_time is NOT_RECOVERED and not dead.cut
    assert dead.failure_cost > 50.0 and [w.failure_cost for w in before] == pytest.approx([3.0, 6.0, 4.0], abs=0.5)
    assert not tail.faults and run.metrics.recovered is False
