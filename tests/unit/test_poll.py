"""The deadline-poll helper (pytest_streamchaos.poll), and its old import path."""

from __future__ import annotations

import itertools

import pytest

from pytest_streamchaos import poll as poll_module
from pytest_streamchaos import testing
from pytest_streamchaos.poll import poll, wait_for


def test_returns_the_first_truthy_value():
    n = itertools.count()
    assert poll(lambda: next(n) >= 3 and "done", 5.0, lambda v: TimeoutError(v), interval=0.001) == "done"


def test_times_out_with_the_callers_error_and_the_last_value():
    with pytest.raises(LookupError, match="last 0"):
        poll(lambda: 0, 0.05, lambda v: LookupError(f"last {v}"), interval=0.01)


def test_checks_at_least_once_even_with_no_time_left():
    assert poll(lambda: 7, 0.0, lambda v: TimeoutError(v)) == 7


def test_an_error_from_the_condition_stops_the_wait_at_once():
    def hopeless():
        raise RuntimeError("process died")

    with pytest.raises(RuntimeError, match="process died"):
        poll(hopeless, 60.0, lambda v: TimeoutError(v))


def test_wait_for_names_what_it_waited_for():
    with pytest.raises(TimeoutError, match=r"waited 0.05s for the answer; last seen 41"):
        wait_for(lambda: 0, 0.05, "the answer", last=lambda: 41, interval=0.01)


def test_old_import_path_is_the_same_helper():
    assert testing.wait_for is poll_module.wait_for


def test_wait_for_and_settled_count_their_timeout_on_the_clock_given():
    """A clock that jumps 10 s per reading: the 15 s timeout passes after the second look, whatever
    the wall clock says (the runner polls on the run's ``time.time``)."""
    from pytest_streamchaos.poll import settled

    def jumping() -> itertools.count:
        return itertools.count(0.0, 10.0)

    looks = itertools.count()
    ticks = jumping()
    assert not settled(lambda: next(looks) > 100, 15.0, interval=0.0, clock=lambda: next(ticks))
    assert next(looks) == 2  # the clock reads 10 after the first look, 20 (past 15) after the second
    ticks = jumping()
    with pytest.raises(TimeoutError, match=r"waited 15.0s for the clock; last seen 0"):
        wait_for(lambda: 0, 15.0, "the clock", interval=0.0, clock=lambda: next(ticks))
    ticks = jumping()
    assert settled(lambda: True, 15.0, clock=lambda: next(ticks))
