"""The demo chaos test (``./dev demo``): a worker dies under load and comes back.

Expectation from "A Performance Analysis of Fault Recovery in Stream Processing Frameworks" (§VI, worker
failure): Structured Streaming loses nothing when a worker dies -- its tasks are rescheduled and the
lost executor is replaced -- at the cost of a latency bump and possibly an output gap while the new
executor starts.
"""

import pytest

from pytest_streamchaos import kill_worker


@pytest.mark.chaos
@kill_worker(after=10, restart_after=5)
def test_enrichment_survives_worker_loss(chaos):
    run = chaos.run("pipelines/enrich_at_least_once.py", rate=200, duration=45, guarantee="at-least-once")
    print()
    print(run.describe())
    assert run.lost == 0
    assert run.incorrect == 0
    assert run.reliability == 1.0
