"""Verdicts on the real stack, no faults: a correct job reports 0 lost / 0 duplicates / 0 incorrect,
and a deliberately broken job is caught with exactly the ids it breaks.

These use the ``chaos`` fixture without fault marks: the run is a plain load test with validation.
"""

import numpy as np
import pytest
from doc_examples import checker_example

from pytest_streamchaos import CheckFailed, JobSetup, Load
from pytest_streamchaos.analysis.oracle import TumblingWindowOracle

pytestmark = pytest.mark.integration


# slow (-m slow): ./dev test's budget; the same job's planted loss and duplication are caught, id for id, under a
# worker kill in the default run: tests/chaos/test_planted_defects.py's
# test_planted_loss_and_duplication_are_caught_under_a_worker_kill
@pytest.mark.slow
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
    # the default checks judged the same history: the broken counts are violations
    assert (run.checks["lost"].ok, run.checks["duplicates"].ok, run.checks["incorrect"].ok) == (False, False, True)
    # a checker of the test's own (docs/checks.md's) over the real run, both ways: every output of this unfaulted
    # run came within a minute of its input, and none within a microsecond
    OutputWithin = checker_example()["OutputWithin"]
    timely = run.check(OutputWithin(seconds=60), must_pass=True)
    assert timely.numbers["outputs"] == run.outputs > 0
    with pytest.raises(CheckFailed, match="output_within_1e-06s: VIOLATED"):
        run.check(OutputWithin(seconds=1e-6), must_pass=True)
    assert run.user_checks["output_within_1e-06s"].numbers["late"] == run.outputs
    checks = run.to_dict()["checks"]
    assert checks["output_within_60s"]["ok"] is True and checks["output_within_1e-06s"]["ok"] is False


# a windowed job's reference proof runs by default: tests/chaos/test_reference_windows.py
@pytest.mark.slow  # ./dev test's budget (124 s)
def test_window_count_delivers_every_finalized_window_exactly(chaos):
    oracle = TumblingWindowOracle(size_seconds=5, watermark_seconds=2)
    run = chaos.run("pipelines/window_count.py", rate=100, duration=20, guarantee="exactly-once", oracle=oracle,
                    load=Load(key_space=10),
                    setup=JobSetup(env={"STREAMCHAOS_WINDOW_SECONDS": "5", "STREAMCHAOS_WATERMARK_SECONDS": "2"}))
    print(run.describe())
    # the run judged its outputs on its own topics with a bound copy: the test's oracle is as it was given
    assert oracle.topic is None and oracle.side_topic is None
    assert run.report.expected > 1000  # finalized windows' ids (the last windows are still open)
    assert run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    assert run.guarantee_delivered == "exactly-once"
    # window latency is measured from the input that closed the window: positive and bounded
    assert 0 < run.latency.p50 < 30
