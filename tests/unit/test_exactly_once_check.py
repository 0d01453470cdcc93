"""Which method decided the exactly-once verdict, and when it is unverified on the broker."""

import json

import numpy as np
import pytest

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.sla import SLAViolation
from pytest_streamchaos.analysis.synthetic import stateless_trace
from pytest_streamchaos.analysis.validate import (
    EOS_READ_COMMITTED,
    EOS_SINK_LOG,
    EOS_UNVERIFIED,
    exactly_once_check,
)

MARKERS = {"out[0]": 12, "out[1]": 11}


def test_transactional_output_on_a_broker_without_isolation_is_unverified() -> None:
    c = exactly_once_check(MARKERS, commit_log_applied=False, broker_isolates=False)
    assert (c["method"], c["status"]) == (EOS_UNVERIFIED, "unverified") == (
        "unverified: broker ignores read_committed", "unverified")
    assert "out[0] (12), out[1] (11)" in c["reason"] and "aborted" in c["reason"]
    assert "real Kafka" in c["verify_with"]


@pytest.mark.parametrize("markers, isolates", [({}, False), ({}, True), (MARKERS, True)])
def test_read_committed_decides_when_nothing_can_hide(markers, isolates) -> None:
    c = exactly_once_check(markers, commit_log_applied=False, broker_isolates=isolates)
    assert (c["method"], c["status"], c["verify_with"]) == (EOS_READ_COMMITTED, "verified", None)


def test_the_plugins_sink_is_judged_by_its_own_commit_log() -> None:
    c = exactly_once_check(MARKERS, commit_log_applied=True, broker_isolates=False)
    assert (c["method"], c["status"]) == (EOS_SINK_LOG, "trusts the sink") == (
        "sink commit log (trusts the sink)", "trusts the sink")


def _run_with(check: dict) -> ChaosRun:
    run = ChaosRun.from_trace(stateless_trace(rate=100, faults=[30], duplicate=np.arange(5)), guarantee="exactly-once")
    run.meta["exactly_once"] = check
    return run


def test_report_json_and_sla_failure_say_the_verdict_is_unverified() -> None:
    run = _run_with(exactly_once_check(MARKERS, False, False))
    assert run.exactly_once_verified is False
    assert "exactly-once check: unverified: broker ignores read_committed (unverified)" in run.describe()
    assert json.loads(run.to_json())["exactly_once_check"]["method"] == EOS_UNVERIFIED
    assert run.duplicates and run.guarantee_delivered != "exactly-once"
    with pytest.raises(SLAViolation, match=r"guarantee: delivered .*unverified: broker ignores read_committed.*"
                                           r"to verify: run the test on a backend with real Kafka"):
        run.assert_sla()


def test_a_bare_trace_has_no_check() -> None:
    run = ChaosRun.from_trace(stateless_trace(rate=100, faults=[30]))
    assert run.exactly_once_check is None and run.exactly_once_verified is None
    assert json.loads(run.to_json())["exactly_once_check"] is None
