"""Verdicts on the real stack, no faults: a correct job reports 0 lost / 0 duplicates / 0 incorrect,
and a deliberately broken job is caught with exactly the ids it breaks.

These use the ``chaos`` fixture without fault marks: the run is a plain load test with validation.
"""

import numpy as np
import pytest

from pytest_streamchaos import JobSetup, Load
from pytest_streamchaos.analysis.oracle import TumblingWindowOracle

pytestmark = pytest.mark.integration


@pytest.mark.sla(guarantee=None)  # this test inspects the broken verdict instead of failing on it
def test_broken_job_is_caught_with_the_ids_it_breaks(chaos):
    """enrich_drops_and_repeats drops ids divisible by 97 and repeats ids divisible by 89."""
    run = chaos.run("pipelines/enrich_drops_and_repeats.py", rate=200, duration=15, guarantee="exactly-once")
    print(run.describe())
    ids = np.arange(run.sent)  # the generator numbers records from 0
    dropped = ids[ids % 97 == 0]
    repeated = ids[(ids % 89 == 0) & (ids % 97 != 0)]
    assert run.lost == dropped.size > 0
    assert run.duplicates == repeated.size > 0
    assert run.incorrect == 0
    assert set(run.report.lost_ids.tolist()) == set(dropped.tolist())
    assert run.guarantee_delivered == "none"
    assert run.reliability == pytest.approx(1 - (dropped.size + repeated.size) / run.sent)
    violations = run.check_sla()
    assert [v.metric for v in violations] == ["guarantee"]


def test_window_count_delivers_every_finalized_window_exactly(chaos):
    oracle = TumblingWindowOracle(size_seconds=5, watermark_seconds=2)
    run = chaos.run("pipelines/window_count.py", rate=100, duration=20, guarantee="exactly-once", oracle=oracle,
                    load=Load(key_space=10),
                    setup=JobSetup(env={"STREAMCHAOS_WINDOW_SECONDS": "5", "STREAMCHAOS_WATERMARK_SECONDS": "2"}))
    print(run.describe())
    assert run.report.expected > 1000  # finalized windows' ids (the last windows are still open)
    assert run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    assert run.guarantee_delivered == "exactly-once"
    # window latency is measured from the input that closed the window: positive and bounded
    assert 0 < run.latency.p50 < 30
