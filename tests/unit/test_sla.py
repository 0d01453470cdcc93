"""SLA bounds: every violated bound is reported, with measured value, bound and timeline."""

from dataclasses import dataclass, field

import pytest

from pytest_streamchaos.analysis.metrics import NOT_RECOVERED
from pytest_streamchaos.analysis.sla import SLA, SLAViolation, check_sla, render_timeline
from pytest_streamchaos.records import TimelineEvent


@dataclass
class FakeRun:
    downtime: float = 3.0
    recovery_time: object = 10.0
    failure_cost: float = 2.0
    reliability: float = 1.0
    lost: int = 0
    duplicates: int = 0
    incorrect: int = 0
    guarantee_delivered: str = "exactly-once"
    timeline: list = field(default_factory=list)


def names(vs):
    return [v.metric for v in vs]


def test_all_bounds_met():
    assert check_sla(FakeRun(), max_downtime=3.0, max_recovery=10, max_failure_cost=2, min_reliability=1.0,
                     max_lost=0, max_duplicates=0, max_incorrect=0, guarantee="exactly-once") == []


def test_every_violation_is_listed():
    run = FakeRun(downtime=20.0, recovery_time=NOT_RECOVERED, failure_cost=9.5, reliability=0.97, lost=3,
                  duplicates=2, incorrect=1, guarantee_delivered="none")
    vs = check_sla(run, SLA(max_downtime=15, max_recovery=30, max_failure_cost=5, min_reliability=0.99,
                            max_lost=0, max_duplicates=0, max_incorrect=0, guarantee="at-least-once"))
    assert names(vs) == ["downtime", "recovery_time", "failure_cost", "lost", "duplicates", "incorrect",
                         "reliability", "guarantee"]
    text = "\n".join(map(str, vs))
    assert "downtime = 20.0, bound downtime <= 15" in text
    assert "recovery_time = not recovered, bound recovery_time <= 30" in text
    assert "reliability = 0.97, bound reliability >= 0.99" in text
    assert "guarantee: delivered none, declared at-least-once" in text


def test_stronger_delivered_guarantee_satisfies_weaker_declared():
    assert check_sla(FakeRun(guarantee_delivered="exactly-once"), guarantee="at-most-once") == []
    assert names(check_sla(FakeRun(guarantee_delivered="at-least-once"), guarantee="at-most-once")) == ["guarantee"]
    assert names(check_sla(FakeRun(guarantee_delivered="at-most-once"), guarantee="exactly-once")) == ["guarantee"]


def test_nan_and_inf_violate_upper_bounds():
    assert names(check_sla(FakeRun(failure_cost=float("nan")), max_failure_cost=5)) == ["failure_cost"]
    assert names(check_sla(FakeRun(failure_cost=float("inf")), max_failure_cost=5)) == ["failure_cost"]


def test_bad_bounds_are_rejected_with_the_valid_names():
    with pytest.raises(TypeError, match="max_downtime"):
        check_sla(FakeRun(), max_downtim=3)
    with pytest.raises(ValueError, match="exactly-once"):
        SLA(guarantee="exactly-twice")


def test_violation_message_has_bounds_and_timeline():
    tl = [TimelineEvent(112.5, "fault_injected", "worker-1", {"signal": "KILL"}),
          TimelineEvent(130.0, "recovered", "worker-1")]
    vs = check_sla(FakeRun(downtime=20.0, lost=4), max_downtime=15, max_lost=0)
    err = SLAViolation(vs, tl, t0=100.0)
    msg = str(err)
    assert isinstance(err, AssertionError)
    assert msg.splitlines()[0] == "2 SLA bound(s) violated:"
    assert "downtime = 20.0, bound downtime <= 15" in msg and "lost = 4, bound lost <= 0" in msg
    assert "+12.5s  fault_injected" in msg and "signal=KILL" in msg
    assert "+30.0s  recovered" in msg


def test_render_empty_timeline():
    assert render_timeline([]) == ["  (no events)"]


def test_render_timeline_cuts_a_stack_trace_to_its_first_line():
    trace = "java.net.SocketException: Call From vm to 127.0.0.1:9000 failed\n\tat java.base/Foo.bar(Foo.java:1)\n"
    lines = render_timeline([TimelineEvent(12.5, "query_terminated", "query", {"exception": trace, "id": "q1"}),
                             TimelineEvent(13.0, "fault_injected", "worker-0", {"confirmed": 0.0456})], t0=10.0)
    assert lines == ["     +2.5s  query_terminated           query  "
                     "exception=java.net.SocketException: Call From vm to 127.0.0.1:9000 failed [...] id=q1",
                     "     +3.0s  fault_injected             worker-0  confirmed=0.046"]
