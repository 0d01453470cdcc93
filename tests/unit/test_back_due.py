"""When a schedule of one history asks whether its faults are over (``analysis.run_metrics.back_due``,
``runner/phases/segment.py``'s ``next_ask``): at the instants the answer may change, so that it learns a
recovery as soon as the history shows it -- never sooner than the history shows it, and a dip or a loss in the
recovery's tail is still seen. Synthetic traces with known answers: a job planning a micro-batch every second
(or every 5 s, the benchmark's trigger), 50 records/s, a driver kill at +20 s."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import T0, Outage, seen_at, stateless_trace

from pytest_streamchaos.analysis.metrics import compute_metrics
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.run_metrics import back_due, faults_back
from pytest_streamchaos.events import Kind, TimelineEvent
from pytest_streamchaos.history import History, Window
from pytest_streamchaos.records import Trace
from pytest_streamchaos.runner.phases.segment import BACK_CHECK_S, BACK_DUE_SLACK_S, next_ask

RATE = 50.0
LABEL = "kill_driver step=1 window=0"


def trace(outages: list[Outage], interval: float = 1.0, drop: np.ndarray | None = None) -> Trace:
    t = stateless_trace(rate=RATE, duration=90, batch_interval=interval, trigger=interval, progress=True,
                        faults=[20.0], outages=outages, drop=drop)
    t.timeline[0].detail.update(fault="kill_driver", label=LABEL)
    return t


def ask(t: Trace, at: float) -> tuple[bool, float, float]:
    """What the runner's ask at ``at`` (run seconds) learns: whether the fault is over, and when to ask again."""
    seen = seen_at(t, T0 + at)
    m = compute_metrics(History(seen))
    over = faults_back(m, {LABEL}, seen.timeline)
    return over, next_ask(back_due(m, {LABEL}, seen.timeline), T0 + at - m.load_end, T0 + at) - T0, m.load_end - T0


def first_over(t: Trace, start: float, step: float = 1 / RATE) -> float:
    """The first instant (on a grid of one send) at which the history so far says the fault is over."""
    at = start
    while not ask(t, at)[0]:
        at = round(at + step, 4)
        assert at < 90, "never over"
    return at


def walk(t: Trace, start: float) -> tuple[float, int]:
    """The runner's asks from ``start``: when the first one that says over came, and how many it took."""
    at, asks = start, 0
    while True:
        over, again, _ = ask(t, at)
        asks += 1
        if over:
            return at, asks
        assert at < again <= at + BACK_CHECK_S + 1e-9  # never back to back, never more than a tick apart
        at = again


@pytest.mark.parametrize("interval", [1.0, 5.0])
def test_the_runner_learns_a_recovery_as_soon_as_the_history_shows_it(interval: float) -> None:
    """A 10 s outage caught up at three times the rate: asked at the instants ``back_due`` names, the runner
    learns the recovery within a send and the slack of the first instant the history shows it (its hold seen a
    normal gap later), with no more asks than a one-second clock; every ask before it says not over."""
    t = trace([Outage(20.0, 10.0, catch_up_rate=3 * RATE)], interval)
    shown = first_over(t, 30.0)
    m = compute_metrics(History(seen_at(t, T0 + shown)))
    f = m.faults[0]
    assert f.recovered_at is not None
    # the history shows it once the hold and a normal gap more were sent: nothing earlier is final
    assert shown == pytest.approx(f.recovered_at - T0 + m.params.hold_seconds + m.baseline.normal_gap, abs=0.05)
    for start in (30.0, 31.37, 33.81):
        at, asks = walk(t, start)
        assert shown <= at <= shown + BACK_DUE_SLACK_S + 1 / RATE + 1e-6
        assert asks <= shown - start + 2


def test_a_dip_in_the_recoverys_tail_keeps_the_schedule_going() -> None:
    """The same outage, and a second stall of the output 3 s into what was the hold: the runner does not call
    the fault over when the clean trace would, only once the output came back from the second stall and held."""
    clean = trace([Outage(20.0, 10.0, catch_up_rate=3 * RATE)])
    shown = first_over(clean, 30.0)
    rec = compute_metrics(History(seen_at(clean, T0 + shown))).faults[0].recovered_at - T0
    dip = trace([Outage(20.0, 10.0, catch_up_rate=3 * RATE), Outage(rec + 3.0, 4.0, catch_up_rate=3 * RATE)])
    at, _ = walk(dip, 30.0)
    assert at > shown + 4.0
    assert not ask(dip, shown)[0]
    assert compute_metrics(History(seen_at(dip, T0 + at))).faults[0].recovered_at - T0 > rec + 3.0


def test_records_lost_in_the_recoverys_tail_are_still_the_windows() -> None:
    """Ten records sent during the hold never came out: the fault is over as soon as in the clean trace (ten of
    fifty a second do not leave the band), and the window the runner closes then counts them lost."""
    clean = trace([Outage(20.0, 10.0, catch_up_rate=3 * RATE)])
    shown = first_over(clean, 30.0)
    lost = np.arange(int((shown - 8.0) * RATE), int((shown - 8.0) * RATE) + 10)
    leaky = trace([Outage(20.0, 10.0, catch_up_rate=3 * RATE)], drop=lost)
    at, _ = walk(leaky, 30.0)
    assert at == pytest.approx(shown, abs=BACK_DUE_SLACK_S + 1 / RATE)
    window = Window(0, LABEL, -np.inf, T0 + at - 2.0, (LABEL,))  # up to the plan of the last committed batch
    view = ChaosRun.from_trace(History(seen_at(leaky, T0 + at)).focused(window), guarantee="exactly-once")
    assert view.lost == 10 and sorted(view.report.lost_ids) == lost.tolist()


def test_a_fault_without_a_sign_is_over_when_its_quiet_runs_out() -> None:
    """An executor kill the output never showed: over once the system noticed it and has been quiet for the
    hold and a normal gap since its last reaction (+26 s): the runner asks at that instant."""
    masked = trace([])
    masked.timeline += [TimelineEvent(T0 + 21.0, Kind.EXECUTOR_REMOVED, "1"),
                        TimelineEvent(T0 + 26.0, Kind.EXECUTOR_ADDED, "2")]
    shown = first_over(masked, 26.0)
    assert shown == pytest.approx(26.0 + 5.0 + 1.0, abs=0.05)
    for start in (26.0, 27.45):
        at, asks = walk(masked, start)
        assert shown <= at <= shown + BACK_DUE_SLACK_S + 1 / RATE + 1e-6 and asks <= shown - start + 2
    unnoticed = trace([])
    assert not ask(unnoticed, 60.0)[0]  # nothing noticed it: it may show later, and the runner keeps asking
    assert ask(unnoticed, 60.0)[1] <= 60.0 + BACK_CHECK_S


def test_the_next_ask_waits_for_the_sends_and_never_more_than_a_tick() -> None:
    assert next_ask(105.0, 0.01, 104.2) == pytest.approx(105.0 + 0.01 + BACK_DUE_SLACK_S)
    assert next_ask(105.0, -0.2, 104.2) == pytest.approx(105.0 + BACK_DUE_SLACK_S)  # sends ahead of the clock
    assert next_ask(float("inf"), 0.0, 104.2) == pytest.approx(104.2 + BACK_CHECK_S)  # no baseline yet
    assert next_ask(109.0, 3.0, 104.2) == pytest.approx(104.2 + BACK_CHECK_S)
