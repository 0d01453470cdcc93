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
    # no duration: the load ends once the recovery is settled (at most 15 s + a 60 s recovery window)
    run = chaos.run("pipelines/enrich_at_least_once.py", rate=200, guarantee="at-least-once")
    print()
    print(run.describe())
    assert run.lost == 0
    assert run.incorrect == 0
    assert run.reliability == 1.0
    # the effect: Spark lost the killed worker's executor, the job recovered, and the restarted
    # worker got a new executor
    (f,) = run.faults
    assert f.system_detection_event == "executor_removed", f
    assert f.recovered, f"not recovered within the run: {f.verdict}"
    healed = next(e.t for e in run.timeline if e.kind == "fault_healed")
    assert any(e.kind == "executor_added" and e.t > healed for e in run.timeline), "no executor on the restarted worker"
