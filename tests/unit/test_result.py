"""ChaosRun: assembled from a synthetic trace; attributes, SLA assertion, JSON export."""

import json
import pickle

import numpy as np
import pytest
from synthetic import Outage, stateless_trace, windowed_trace

from pytest_streamchaos.analysis.metrics import NOT_RECOVERED, MetricParams, NotMeasurable, NotMeasured
from pytest_streamchaos.analysis.oracle import TumblingWindowOracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.sla import SLA, SLAViolation
from pytest_streamchaos.facts import RunFacts


@pytest.fixture(scope="module")
def outage_run():
    tr = stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)], drop=np.array([5, 6]),
                         duplicate=np.array([10]))
    return ChaosRun.from_trace(tr, guarantee="at-least-once")


def test_attributes(outage_run):
    run = outage_run
    assert (run.lost, run.duplicates, run.incorrect) == (2, 1, 0)
    assert run.guarantee_delivered == "none"
    assert run.reliability == pytest.approx(59998 / 60000)
    assert run.downtime == pytest.approx(12.0, abs=0.01)
    assert run.recovery_time == pytest.approx(19.0, abs=1.0)
    assert run.failure_cost == pytest.approx(12.0, abs=0.01)
    assert run.latency.baseline == pytest.approx(0.2, abs=1e-6) and run.latency.peak > 12
    assert run.reliable_throughput == pytest.approx(1000.0, rel=0.01)
    assert run.throughput.reliable.size == run.throughput.t.size
    assert run.sent == 60000 and run.outputs == 59999
    assert len(run.faults) == 1 and run.faults[0].verdict == "outage"


def test_timeline_has_derived_events(outage_run):
    kinds = [e.kind for e in outage_run.timeline]
    assert kinds == ["fault_injected", "first_output_after_fault", "recovered"]
    assert outage_run.timeline[2].t - outage_run.timeline[0].t == pytest.approx(outage_run.recovery_time)


def test_assert_sla_checks_declared_guarantee_by_default(outage_run):
    with pytest.raises(SLAViolation) as exc:
        outage_run.assert_sla(max_downtime=15)
    msg = str(exc.value)
    assert "guarantee: delivered none, declared at-least-once" in msg
    assert "lost ids e.g. [5, 6]" in msg
    assert "fault_injected" in msg and "recovered" in msg
    outage_run.assert_sla(max_downtime=15, check_guarantee=False)  # passes


def test_assert_sla_lists_all_violations(outage_run):
    with pytest.raises(SLAViolation) as exc:
        outage_run.assert_sla(SLA(max_downtime=5, max_recovery=10, max_failure_cost=1, min_reliability=1.0))
    assert [v.metric for v in exc.value.violations] == [
        "downtime", "recovery_time", "failure_cost", "reliability", "guarantee"]


def test_clean_run_passes_everything():
    run = ChaosRun.from_trace(stateless_trace(rate=200, faults=[30]), guarantee="exactly-once")
    assert run.guarantee_delivered == "exactly-once" and run.reliability == 1.0
    assert run.downtime == 0.0 and run.recovery_time == 0.0 and run.faults[0].verdict == "masked"
    run.assert_sla(max_downtime=0, max_recovery=0, max_failure_cost=0.01, min_reliability=1.0, max_lost=0,
                   max_duplicates=0)


def test_not_recovered_run():
    run = ChaosRun.from_trace(stateless_trace(faults=[30], stop_at=35))
    assert run.recovery_time is NOT_RECOVERED
    assert not run.recovery_time < 30
    with pytest.raises(SLAViolation, match="recovery_time = not recovered"):
        run.assert_sla(max_recovery=30, check_guarantee=False)
    d = run.to_dict()
    assert d["recovery_time"] is None and d["recovered"] is False
    assert [e["kind"] for e in d["timeline"]][-1] == "not_recovered"
    assert "not recovered" in run.context()


def test_json_is_complete_for_plots(outage_run):
    d = json.loads(outage_run.to_json())
    assert d["guarantee"] == "at-least-once" and d["validation"]["lost_ids"] == [5, 6]
    series = d["metrics"]["series"]
    assert len(series["t"]) == len(series["reliable"]) == len(series["latency_p99"]) == len(series["backlog"])
    assert d["metrics"]["faults"][0]["recovered"] is True
    assert d["metrics"]["params"]["bucket_seconds"] == 1.0
    assert d["metrics"]["baseline"]["normal_gap"] == 1.0
    assert d["timeline"][0]["kind"] == "fault_injected"


def test_summary_row(outage_run):
    row = outage_run.summary_row()
    assert row["lost"] == 2 and row["dup"] == 1 and row["delivered"] == "none"
    assert row["downtime_s"] == pytest.approx(12.0, abs=0.01)
    assert row["faults"] == 1


def test_windowed_run_with_params():
    run = ChaosRun.from_trace(windowed_trace(faults=[30]), TumblingWindowOracle(5.0), "exactly-once",
                              MetricParams(hold_seconds=10))
    assert run.guarantee_delivered == "exactly-once" and run.faults[0].verdict == "masked"
    assert run.metrics.params.hold_seconds == 10


def test_unknown_guarantee_is_rejected():
    with pytest.raises(ValueError, match="at-least-once"):
        ChaosRun.from_trace(stateless_trace(rate=10, duration=20), guarantee="exactly once")


def test_not_recovered_sentinel_pickles_as_singleton():
    assert pickle.loads(pickle.dumps(NOT_RECOVERED)) is NOT_RECOVERED


def test_report_has_headline_numbers_faults_and_timeline() -> None:
    from synthetic import Outage, stateless_trace

    from pytest_streamchaos.analysis.result import ChaosRun

    trace = stateless_trace(rate=100, duration=60, faults=[20.0], outages=[Outage(20.0, 6.0, catch_up_rate=400)])
    run = ChaosRun.from_trace(trace, guarantee="at-least-once", facts=RunFacts(warnings=["drain timed out"]))
    text = run.describe()
    assert "sent 6000 records" in text and "lost 0" in text
    assert "guarantee declared at-least-once, delivered exactly-once" in text
    assert "fault 0 (fault_injected worker-1 at +20.0s)" in text
    assert "timeline:" in text and "fault_injected" in text
    assert text.endswith("warning: drain timed out")


def test_no_baseline_run_still_reports_counts_and_guarantee_and_names_the_reason():
    tr = stateless_trace(faults=[6], outages=[Outage(7, 6, catch_up_rate=3000)], drop=np.array([5]),
                         duplicate=np.array([10]))
    run = ChaosRun.from_trace(tr, guarantee="at-least-once")
    assert (run.lost, run.duplicates, run.incorrect) == (1, 1, 0)
    assert run.guarantee_delivered == "none"
    assert isinstance(run.recovery_time, NotMeasured) and isinstance(run.failure_cost, NotMeasured)
    assert run.metrics.recovery_time is None and run.metrics.failure_cost is None
    with pytest.raises(NotMeasurable, match="recovery_time was not measured .*no usable baseline"):
        assert run.recovery_time < 30
    text = run.describe()
    assert "recovery time not measured" in text and "failure cost not measured" in text
    assert "recovery_time, failure_cost not measured: no usable baseline" in text
    d = json.loads(run.to_json())
    assert d["recovery_time"] is None and d["failure_cost"] is None and d["recovered"] is None
    assert "no usable baseline" in d["unavailable"]["recovery_time"]
    assert d["metrics"]["faults"][0]["recovered"] is None
    assert run.summary_row()["recovery_s"] is None


def test_sla_bound_on_an_unmeasured_metric_fails_naming_the_reason():
    tr = stateless_trace(faults=[6], outages=[Outage(7, 6, catch_up_rate=3000)])
    run = ChaosRun.from_trace(tr, guarantee="exactly-once")
    with pytest.raises(SLAViolation) as exc:
        run.assert_sla(max_recovery=60, max_failure_cost=10, max_lost=0)
    msg = str(exc.value)
    assert "2 SLA bound(s) violated" in msg
    assert "recovery_time not measured, bound recovery_time <= 60 cannot hold: no usable baseline" in msg
    assert "failure_cost not measured" in msg
    # bounds that need no baseline are checked as usual
    assert not run.check_sla(max_lost=0, max_duplicates=0)


def test_a_run_without_readable_output_reports_recovery_but_no_per_record_verdict():
    tr = stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)], drop=np.array([5, 6]))
    run = ChaosRun.from_trace(tr, guarantee="exactly-once", per_record=False)
    assert run.resolution == "none"
    assert (run.lost, run.duplicates, run.incorrect, run.reliability) == (None, None, None, None)
    assert run.guarantee_delivered == "unknown"
    assert run.downtime == pytest.approx(12.0, abs=0.01), "recovery metrics are still measured"
    assert "no per-record verdict" in run.describe()
    assert run.check_sla() == [], "the declared guarantee cannot be checked, and is not by default"
    bad = run.check_sla(max_lost=0, guarantee="at-least-once")
    assert [v.metric for v in bad] == ["lost", "guarantee"]
    assert all("not readable" in str(v) for v in bad)
    assert json.loads(run.to_json())["meta"] == {} and run.summary_row()["lost"] is None
