"""The demo chaos test (``./dev demo``): a worker dies under load and the job recovers without it.

Expectation from "A Performance Analysis of Fault Recovery in Stream Processing Frameworks" (§VI, worker
failure): Structured Streaming loses nothing when a worker dies -- Spark notices its executor is gone and
reschedules its tasks on the executors left -- at the cost of a latency bump and possibly an output gap.

What a first verdict must show is the fault's effect and the job's recovery: the worker is not started
again during the load, so the load ends as soon as the recovery is settled and does not wait the ~25 s a
restarted worker's new executor takes to come up (the cluster's heal, not the job's recovery; it is
started again when the load ends). The suite's worker-kill tests cover the restart. ``./dev demo`` runs it on
one Kafka node (``pytest_streamchaos.demo.DEMO_STACK``: no broker is faulted); the suite, on three.
"""

import pytest

from pytest_streamchaos import kill_worker


@pytest.mark.chaos
@kill_worker(after=10)
def test_enrichment_survives_worker_loss(chaos):
    # no duration: the load ends once the recovery is settled (at most 15 s + a 60 s recovery window)
    run = chaos.run("pipelines/enrich_at_least_once.py", rate=200, guarantee="at-least-once")
    print()
    print(run.describe())
    assert run.lost == 0
    assert run.incorrect == 0
    assert run.reliability == 1.0
    # the effect: Spark lost the killed worker's executor; and the job recovered on the executor left
    (f,) = run.faults
    assert f.system_detection_event == "executor_removed", f
    assert f.recovered, f"not recovered within the run: {f.verdict}"
