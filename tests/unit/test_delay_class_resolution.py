"""A stated delay class is made to hold by changing the link's timeout for the run (pure resolution),
and a run without ``duration`` lasts the fault timeline plus a recovery window."""

import pytest

from pytest_streamchaos.faults.registry import parse
from pytest_streamchaos.faults.timeline import DEFAULT_LOAD_S, RECOVERY_WINDOW_S, load_end, load_seconds, plan
from pytest_streamchaos.faults.timeouts import (
    DelayClassError,
    check_delay_class,
    governing_timeout,
    resolve_delay_class,
)
from pytest_streamchaos.spark.launcher import DEFAULT_CONF

CLUSTER = {"spark.worker.timeout": "10"}
#: what the runner reads from a job whose code sets its Kafka clients' request timeout
FAST_JOB = {"kafka.request.timeout.ms": ("1500", "payments.py:21")}


def test_kafka_link_is_governed_by_the_clients_request_timeout() -> None:
    to = governing_timeout("kafka", CLUSTER, DEFAULT_CONF)
    assert (to.setting, to.seconds) == ("kafka.request.timeout.ms", 30.0)
    assert "default" in to.where and ".option('kafka.request.timeout.ms'" in to.where
    job = governing_timeout("broker-2", CLUSTER, DEFAULT_CONF, FAST_JOB)
    assert (job.seconds, job.where) == (1.5, "the job's code (payments.py:21)")


def test_a_kafka_class_that_holds_as_the_job_is_written_changes_nothing() -> None:
    assert resolve_delay_class("kafka", 3000, True, CLUSTER, DEFAULT_CONF, job_kafka=FAST_JOB) is None
    assert resolve_delay_class("kafka", 500, False, CLUSTER, DEFAULT_CONF) is None
    assert resolve_delay_class("kafka", 500, None, CLUSTER, DEFAULT_CONF) is None


def test_a_kafka_class_that_does_not_hold_fails_naming_the_option_only_the_job_sets() -> None:
    with pytest.raises(DelayClassError, match=r"not PD>TO: .*kafka.request.timeout.ms is 30000 ms .*only the job's "
                                              r"code sets: set \.option\('kafka.request.timeout.ms', \.\.\.\)"):
        resolve_delay_class("kafka", 500, True, CLUSTER, DEFAULT_CONF)
    with pytest.raises(DelayClassError, match=r"not PD<TO: .*1500 ms"):
        resolve_delay_class("broker-1", 2000, False, CLUSTER, DEFAULT_CONF, job_kafka=FAST_JOB)


def test_a_timeout_the_test_pins_is_not_overridden() -> None:
    conf = {**DEFAULT_CONF, "spark.network.timeout": "20s"}
    with pytest.raises(DelayClassError, match=r"pins it .*spark.network.timeout"):
        resolve_delay_class("driver", 5000, True, CLUSTER, conf, frozenset({"spark.network.timeout"}))


def test_driver_pd_above_sets_timeout_heartbeat_and_check_interval() -> None:
    c = resolve_delay_class("driver", 5000, True, CLUSTER, DEFAULT_CONF)
    assert c is not None
    assert c.conf == {"spark.network.timeout": "2s", "spark.executor.heartbeatInterval": "500ms",
                      "spark.network.timeoutInterval": "2s"}
    check_delay_class(5000, True, governing_timeout("driver", CLUSTER, {**DEFAULT_CONF, **c.conf}), "driver")


def test_driver_timeout_is_whole_seconds_so_a_short_delay_cannot_be_above_it() -> None:
    with pytest.raises(DelayClassError, match=r"whole seconds .* use ms >= 2000"):
        resolve_delay_class("driver", 500, True, CLUSTER, DEFAULT_CONF)


def test_driver_pd_below_raises_the_timeout() -> None:
    c = resolve_delay_class("driver", 30_000, False, CLUSTER, DEFAULT_CONF)
    assert c is not None and c.conf == {"spark.network.timeout": "60s"}


@pytest.mark.parametrize("target", ["master", "worker-0"])
def test_cluster_wide_timeout_fails_naming_it(target) -> None:
    with pytest.raises(DelayClassError, match=r"spark.worker.timeout is a cluster-wide setting"):
        resolve_delay_class(target, 500, True, CLUSTER, DEFAULT_CONF)
    assert resolve_delay_class(target, 20_000, True, CLUSTER, DEFAULT_CONF) is None


def test_load_without_duration_is_timeline_plus_recovery_window() -> None:
    planned = plan([parse("kill_worker", (), {"after": 600})])
    secs, why = load_seconds(planned, None)
    assert secs == 600 + RECOVERY_WINDOW_S
    assert "no duration given" in why and "600s" in why
    assert load_seconds(planned, None, trigger_seconds=10)[0] == 700
    assert load_seconds([], None)[0] == DEFAULT_LOAD_S
    assert load_seconds(planned, 700) == (700.0, "duration=700s given by the test")


def test_without_duration_the_recovery_window_counts_from_the_actual_last_heal() -> None:
    # a driver kill aimed at a moment, planned at steady + 5 s (t=105) with a 30 s window: until 135
    planned_until, window, slack = 135.0, 30.0, 60.0
    assert load_end(planned_until, None, 200.0, slack) == planned_until  # a duration given: the plan holds
    assert load_end(planned_until, window, None, slack) == 195.0  # still waiting for its moment: its timeout
    assert load_end(planned_until, window, 121.0, slack) == 151.0  # fired 16 s late: 30 s from then
    assert load_end(planned_until, window, 104.0, slack) == planned_until  # on time: never shorter than the plan


def test_an_explored_schedule_keeps_the_load_on_while_a_step_waits_for_its_moment() -> None:
    # a duration given: the plan holds, unless a step of an explored schedule has not fired yet (its driver
    # replays the batch it waits for only after the restart the step before it caused)
    planned_until, slack = 135.0, 30.0
    assert load_end(planned_until, None, None, slack, explored=True) == 165.0
    assert load_end(planned_until, None, 121.0, slack, explored=True) == planned_until  # every step fired
    assert load_end(planned_until, None, None, slack, explored=False) == planned_until  # a mark's aim: the plan


def test_a_given_duration_shorter_than_the_timeline_fails_naming_both() -> None:
    planned = plan([parse("kill_worker", (), {"after": 600})])
    with pytest.raises(ValueError, match=r"needs 600s .* but duration=60"):
        load_seconds(planned, 60)


def test_report_says_how_long_the_load_ran_and_which_timeout_was_set() -> None:
    from synthetic import stateless_trace

    from pytest_streamchaos.analysis.result import ChaosRun
    from pytest_streamchaos.facts import LoadFacts, RunFacts, RunSetup

    c = resolve_delay_class("driver", 5000, True, CLUSTER, DEFAULT_CONF)
    assert c is not None
    facts = RunFacts(setup=RunSetup(timeouts=[c]),
                     load=LoadFacts(planned_s=630.0, ran_s=630.4, why="no duration given: ...", ended=None))
    run = ChaosRun.from_trace(stateless_trace(rate=100, faults=[30]), facts=facts)
    text = run.describe()
    assert "load ran 630.4s (planned 630s: no duration given: ...)" in text
    assert "timeout: network_delay(ms=5000, target='driver') is meant above" in text
    assert '"delay_class"' in run.to_json()
