"""The card's examples: no ``duration`` (the load lasts the fault timeline plus a recovery window), and
``network_delay(ms=500, above_timeout=True)`` on default settings (the plugin lowers the Kafka read
timeout for the run instead of refusing it). Each run says what it chose.

The worker-kill scenario here is also the one ``test_fault_timing.py`` asserts on: ``shared_run`` runs
it once per session (``chaos.run`` with the same arguments)."""

import pytest

from pytest_streamchaos import kill_worker, network_delay
from pytest_streamchaos.faults.timeline import RECOVERY_WINDOW_S

ALO = "pipelines/enrich_at_least_once.py"


@pytest.mark.chaos
@kill_worker(after=10)
def test_no_duration_runs_the_timeline_plus_a_recovery_window(shared_run):
    run = shared_run(ALO, rate=100)  # the card's chaos.run(ALO, rate=100), shared with test_fault_timing
    print(run.describe())
    load = run.meta["load"]
    assert load["planned_s"] == 10 + RECOVERY_WINDOW_S and "no duration given" in load["why"]
    assert load["ran_s"] >= load["planned_s"] - 1
    assert f"load ran {load['ran_s']:.1f}s" in run.describe()
    assert run.lost == 0 and not run.meta["fault_errors"]


@pytest.mark.chaos
# PD>TO on the Kafka link: reads give up after 250 ms, the tasks fail and this job (no restart)
# stops -- what the experiment is about, so the declared guarantee is not the point here. The query
# fails within a second of the delay and its driver exits: a load past the heal (duration=20: the
# delay from 8 s to 16 s, then 4 s) and a drain (10 s instead of 60 s: a stopped job commits nothing
# more) only wait; nothing asserted here depends on them
@pytest.mark.sla(guarantee=None)
@network_delay(ms=500, above_timeout=True, after=8, duration=8)
def test_delay_above_timeout_on_default_settings_lowers_the_kafka_timeout(chaos):
    run = chaos.run(ALO, rate=100, duration=20, guarantee="at-least-once", drain_timeout=10)
    print(run.describe())
    (choice,) = run.meta["delay_class"]
    assert (choice["setting"], choice["kafka_timeout_ms"]) == ("pollTimeoutMs", 250)
    assert run.meta["run"]["kafka_timeout_ms"] == 250
    assert "timeout: network_delay(ms=500, target='kafka') is meant above" in run.describe()
    injected = next(e for e in run.timeline if e.kind == "fault_injected")
    assert 350 <= injected.detail["measured_delay_ms"] <= 2000, injected.detail
    assert not run.meta["fault_errors"]
    assert run.faults[0].verdict != "masked"  # above the timeout, the job noticed
