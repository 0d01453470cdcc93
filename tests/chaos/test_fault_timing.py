"""Fault times are the moments the faults took effect, on the real stack.

A killed worker's group is reaped for up to seconds after the SIGKILL; the injection must be
stamped at the signal, so it precedes Spark's own reaction (the executor removed), and the reap is
recorded apart (``confirmed``).

The scenario (a worker killed 10 s into the load, no duration given) is the one of the card example in
``test_card_examples.py``; ``shared_run`` runs it once per session and both tests assert on that run.
Whether and when the worker comes back plays no part in what is asserted here."""

import pytest

from pytest_streamchaos import kill_worker

ALO = "pipelines/enrich_at_least_once.py"


@pytest.mark.chaos
@kill_worker(after=10)
def test_worker_kill_is_stamped_before_spark_removes_its_executor(shared_run):
    run = shared_run(ALO, rate=100)
    print(run.describe())
    injected = [e for e in run.timeline if e.kind == "fault_injected"]
    assert len(injected) == 1, run.fault_errors
    inj = injected[0]
    steady = next(e.t for e in run.timeline if e.kind == "steady_state")
    removed = sorted(e.t for e in run.timeline if e.kind == "executor_removed" and e.t > steady)
    assert removed, "Spark reported no executor removed after the worker kill"
    # the kill happened before Spark noticed it, and the reap is recorded apart
    assert inj.t < removed[0], (inj, removed)
    assert isinstance(inj.detail["confirmed"], float) and 0.0 <= inj.detail["confirmed"] < 10.0
    f = run.faults[0]
    assert f.system_detection_event == "executor_removed"
    assert f.system_detection == pytest.approx(removed[0] - inj.t)
    assert run.lost == 0
