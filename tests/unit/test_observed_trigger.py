"""The trigger a job runs with, read off its batches' start times (synthetic starts with a known answer)."""

import random

import pytest

from pytest_streamchaos.analysis.trigger import AS_FAST_AS_POSSIBLE, observed_trigger, trigger_words

T0 = 1_790_000_100.0  # a multiple of 300 s


@pytest.mark.parametrize("interval", [0.5, 1.0, 5.0, 30.0])
def test_a_processing_time_trigger_is_read_off_aligned_starts(interval):
    rng = random.Random(1)
    starts = [T0 + k * interval + rng.uniform(0.001, 0.02) for k in range(1, 9)]
    starts[3] += interval * 0.4  # one batch overran its interval and started late
    assert observed_trigger(starts) == interval


def test_batch_after_batch_is_as_fast_as_possible():
    rng = random.Random(2)
    t, starts = T0 + 0.137, []
    for _ in range(10):
        starts.append(t)
        t += rng.uniform(0.3, 1.7)
    assert observed_trigger(starts) == AS_FAST_AS_POSSIBLE
    assert trigger_words(AS_FAST_AS_POSSIBLE) == "as fast as possible" and trigger_words(5.0) == "5 s"


def test_too_few_batches_say_nothing():
    assert observed_trigger([T0, T0 + 5]) is None and trigger_words(None) is None
