"""The demo chaos test (``./dev demo``): a worker of the cluster dies under load and comes back."""

import pytest

from pytest_streamchaos import kill_worker


@pytest.mark.chaos
@kill_worker(after=10, restart_after=5)
def test_enrichment_survives_worker_loss(chaos):
    run = chaos.run("pipelines/enrich_at_least_once.py", rate=200, duration=40, guarantee="at-least-once")
    print(run.context())
    assert run.lost == 0
    assert run.incorrect == 0
