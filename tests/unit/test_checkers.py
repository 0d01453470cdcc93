"""Every verdict is a checker over the run's history: each one on synthetic histories with known
answers, their composition (each runs once), the oracle bound and never changed, the history's fault
records, the run's facts as the report's ``meta``, and a checker of the test's own -- docs/checks.md's --
both ways."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from doc_examples import checker_example
from synthetic import T0, Outage, stateless_trace

from pytest_streamchaos.analysis import checkers as ch
from pytest_streamchaos.analysis.checker import CheckFailed, CheckResult, compose, run_all
from pytest_streamchaos.analysis.oracle import IdentityOracle
from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.facts import (
    ClientSample,
    DelaySpec,
    JobFacts,
    LoadFacts,
    RunFacts,
    RunSetup,
    Topics,
)
from pytest_streamchaos.history import Aim, History, MicroBatch, faults_of
from pytest_streamchaos.records import OutputRecords, TimelineEvent, Trace

DROPS, DUPS = np.array([5, 6]), np.array([10])


def planted(**kw: Any) -> History:
    """60 000 records at 1000/s, ids 5 and 6 never output, id 10 output twice; a fault at +30 s."""
    return History(stateless_trace(faults=[30], drop=DROPS, duplicate=DUPS, **kw))


def results(history: History, guarantee: str = "exactly-once", **kw: Any) -> dict[str, CheckResult]:
    return run_all(ch.default_checkers(guarantee=guarantee, **kw).all, history)


@pytest.mark.parametrize(("declared", "lost_ok", "dup_ok"), [("exactly-once", False, False),
                                                             ("at-least-once", False, True),
                                                             ("at-most-once", True, False)])
def test_the_guarantee_checks_count_the_planted_records_and_judge_them_by_the_declared_guarantee(
        declared: str, lost_ok: bool, dup_ok: bool) -> None:
    r = results(planted(), declared)
    assert (r["lost"].numbers["lost"], r["duplicates"].numbers["duplicates"], r["incorrect"].numbers["incorrect"]) \
        == (2, 1, 0)
    assert (r["lost"].ok, r["duplicates"].ok, r["incorrect"].ok) == (lost_ok, dup_ok, True)
    assert "e.g. ids [5, 6]" in r["lost"].lines[0] and "e.g. ids [10]" in r["duplicates"].lines[0]
    assert r["guarantee"].numbers == {"declared": declared, "delivered": "none"} and r["guarantee"].ok is False
    assert r["validation"].ok is False and r["validation"].numbers["expected"] == 60000
    assert r["reliability"].ok is True  # a measurement: no bound given
    assert r["reliability"].numbers["reliability"] == pytest.approx(
        (60000 - 2 - (0 if declared == "at-least-once" else 1)) / 60000)


def test_a_reliability_bound_is_judged() -> None:
    v = ch.Validation(guarantee="exactly-once")
    assert ch.Reliability(v, minimum=0.9999).check(planted()).ok is True
    low = ch.Reliability(v, minimum=1.0).check(planted())
    assert low.ok is False and "at least 1 required" in low.lines[0]


def test_without_readable_output_the_record_checks_say_why_they_cannot_judge() -> None:
    r = results(History(stateless_trace(faults=[30]), per_record=False))
    for name in ("validation", "lost", "duplicates", "incorrect", "guarantee", "reliability", "exactly_once"):
        assert r[name].ok is None and r[name].status == "unknown", name
        assert "not readable" in r[name].reason, name
    assert r["downtime"].ok is True, "recovery is still measured from the estimated outputs"


def test_the_recovery_checks_measure_the_planted_outage_against_their_bounds() -> None:
    h = History(stateless_trace(faults=[30], outages=[Outage(31, 12, catch_up_rate=3000)]))
    rec = ch.Recovery(ch.Validation())
    down, rt, cost = ch.Downtime(rec).check(h), ch.RecoveryTime(rec, maximum=30).check(h), ch.FailureCost(rec).check(h)
    assert down.ok is True and down.numbers["downtime"] == pytest.approx(12.0, abs=0.01)
    assert ch.Downtime(rec, maximum=5).check(h).ok is False
    assert rt.ok is True and rt.numbers["recovery_time"] == pytest.approx(19.0, abs=1.0)
    assert ch.RecoveryTime(rec, maximum=10).check(h).ok is False
    assert cost.numbers["failure_cost"] == pytest.approx(12.0, abs=0.01)
    assert rec.check(h).ok is True and rec.check(h).numbers["faults"] == 1


def test_a_fault_that_did_not_recover_violates_recovery_and_one_without_a_baseline_is_not_judged() -> None:
    dead = History(stateless_trace(faults=[30], stop_at=35))
    rec = ch.Recovery(ch.Validation())
    r = ch.RecoveryTime(rec).check(dead)
    assert r.ok is False and r.numbers["recovered"] is False and "not recovered by" in r.lines[0]
    assert rec.check(dead).ok is False
    early = History(stateless_trace(faults=[6], outages=[Outage(7, 6, catch_up_rate=3000)]))
    rec = ch.Recovery(ch.Validation())
    for check in (ch.RecoveryTime(rec), ch.FailureCost(rec)):
        r = check.check(early)
        assert r.ok is None and "no usable baseline" in r.reason
    assert ch.Downtime(rec).check(early).ok is True


def test_the_validation_and_the_metrics_are_computed_once_for_all_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_streamchaos.analysis.checkers import guarantee, recovery

    calls = {"validate": 0, "metrics": 0}

    def counted(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            calls[name] += 1
            return fn(*a, **kw)
        return wrapper

    monkeypatch.setattr(guarantee, "validate", counted("validate", guarantee.validate))
    monkeypatch.setattr(recovery, "compute_metrics", counted("metrics", recovery.compute_metrics))
    run = ChaosRun.judge(planted())
    assert calls == {"validate": 1, "metrics": 1} and len(run.checks) == 17


class Counting:
    """A checker that counts its calls and answers ``ok``."""

    def __init__(self, name: str, ok: bool | None) -> None:
        self.name, self.answer, self.calls = name, ok, 0

    def check(self, history: History) -> CheckResult:
        self.calls += 1
        return CheckResult(self.name, self.answer, [f"{self.name} said {self.answer}"])


def test_compose_runs_each_checker_once_and_holds_only_when_every_part_does() -> None:
    a, b, c = Counting("a", True), Counting("b", True), Counting("c", None)
    h = planted()
    both = compose(a, b, a, name="both").check(h)
    assert a.calls == 1 and both.ok is True and both["b"].ok is True and set(both.results) == {"a", "b"}
    assert compose(a, c).check(h).ok is None, "an unknown is not a pass"
    failed = compose(a, Counting("d", False), c).check(h)
    assert failed.ok is False and failed.numbers == {"a": "ok", "d": "violated", "c": "unknown"}
    assert "d: VIOLATED" in failed.describe() and "  d said False" in failed.describe()


def test_the_users_oracle_is_bound_to_the_runs_topics_and_never_changed() -> None:
    tr = stateless_trace(rate=10, duration=20)
    n = len(tr.outputs)
    # the same ids again on another topic: not the run's output, so not duplicates
    ids = [[int(i)] for i in tr.outputs.ids] * 2
    topics = np.array(["out"] * n + ["elsewhere"] * n, dtype=object)
    outputs = OutputRecords.from_lists([*tr.outputs.arrival_ts, *(tr.outputs.arrival_ts + 0.1)], ids, topic=topics)
    oracle = IdentityOracle()
    history = History(Trace(tr.sent, outputs, timeline=tr.timeline, phases=tr.phases), topics=Topics("in", "out"))
    run = ChaosRun.judge(history, oracle)
    assert run.duplicates == 0 and run.report.ignored == n
    assert oracle.topic is None and oracle.side_topic is None, "the test's oracle is left as it was"
    assert ChaosRun.judge(History(history.trace), oracle).duplicates == n, "unbound (a bare trace): every topic counts"
    named = IdentityOracle(topic="elsewhere")
    assert ChaosRun.judge(history, named).report.ignored == n and named.topic == "elsewhere"
    fixed = History(history.trace, topics=Topics("in", "out", outputs=["out", "elsewhere"]))
    assert fixed.topics is not None and fixed.topics.main_output is None, "the test named its outputs: all count"


def ev(t: float, kind: str, target: str = "", **detail: Any) -> TimelineEvent:
    return TimelineEvent(T0 + t, kind, target, detail)


AIM = {"moment": "uncommitted_output", "batch": 7, "phase": "sink_written", "hit": True, "attempts": 2}
TIMELINE = [
    ev(5, "fault_planned", "kill_driver#0", fault="kill_driver", occurrence=0),
    ev(5, "fault_planned", "network_delay#0", fault="network_delay", occurrence=0),
    ev(5, "fault_planned", "kill_executor#0", fault="kill_executor", occurrence=0),
    ev(9.5, "fault_injected", "driver", fault="kill_driver", label="kill_driver#0", confirmed=0.2, aim=AIM),
    ev(12, "fault_injected", "kafka", fault="network_delay", label="network_delay#0", confirmed=1.1,
       scope="job", measured_delay_ms=2990),
    ev(14, "fault_healed", "driver", fault="kill_driver", label="kill_driver#0"),
    ev(20, "fault_healed", "kafka", fault="network_delay", label="network_delay#0"),
    ev(30, "fault_skipped", "kill_executor#0", reason="moment 'tasks_running' not seen within timeout=10s"),
]


def test_the_history_tells_each_fault_with_its_aim() -> None:
    driver, delay, executor = faults_of(TIMELINE)
    assert (driver.kind, driver.target, driver.label) == ("kill_driver", "driver", "kill_driver#0")
    assert (driver.planned_at, driver.injected_at, driver.healed_at) == (T0 + 5, T0 + 9.5, T0 + 14)
    assert driver.aim == Aim("uncommitted_output", 7, "sink_written", True, 2) and driver.hit is True
    assert driver.confirmed_s == 0.2 and driver.scope is None
    assert delay.aim is None and delay.hit is None and delay.scope == "job"
    assert delay.detail == {"scope": "job", "measured_delay_ms": 2990}
    assert not executor.injected and executor.skipped is not None and "tasks_running" in executor.skipped
    assert driver.to_dict()["aim"] == AIM and json.dumps([f.to_dict() for f in (driver, delay, executor)])
    # injections without labels (a synthetic trace): one occurrence each, healed by target
    a, b = faults_of([ev(1, "fault_injected", "worker-1"), ev(2, "fault_injected", "worker-1"),
                      ev(3, "fault_healed", "worker-1")])
    assert a.healed_at == T0 + 3 and b.healed_at is None and a.kind == "fault_injected"


def test_the_history_reads_spark_progress_as_typed_micro_batches() -> None:
    progress = [{"id": "q", "batchId": n, "numInputRows": 10 * n, "t_start": T0 + n, "t_end": T0 + n + 0.4,
                 "durationMs": {"triggerExecution": 400}} for n in range(3)]
    base = planted()
    h = History(Trace(base.sent, base.outputs, batches=progress))
    assert h.micro_batches[2] == MicroBatch("q", 2, T0 + 2, T0 + 2.4, 0.4, 20)
    assert h.batch_at(T0 + 1.2) == h.micro_batches[1] and h.batch_at(T0 + 1.6) is None


def test_faults_that_did_not_happen_as_planned_violate_the_faults_check() -> None:
    r = results(History(Trace(planted().sent, planted().outputs, timeline=TIMELINE)))["faults"]
    assert r.ok is False and r.lines == ["kill_executor#0: skipped: moment 'tasks_running' not seen within timeout=10s"]
    assert r.numbers == {"injected": 2, "errors": 1, "aimed": 1, "hit": 1}
    facts = RunFacts(setup=RunSetup(), fault_errors=["kill_worker#0: inject failed: boom"])
    run = ChaosRun.from_trace(stateless_trace(rate=10, duration=20), facts=facts)
    assert run.fault_errors == ["kill_worker#0: inject failed: boom"] and run.checks["faults"].ok is False


def test_the_exactly_once_check_says_how_the_verdict_was_reached() -> None:
    tr = stateless_trace(rate=10, duration=20)
    txn = ChaosRun.from_trace(tr, facts=RunFacts(setup=RunSetup(), transaction_markers={"out-0": 3}))
    assert txn.checks["exactly_once"].ok is True
    assert txn.exactly_once_check == {
        "method": "collector: read_committed", "status": "verified", "verify_with": None,
        "reason": "transactional output (transaction markers in out-0 (3)), read as committed",
        "transaction_markers": {"out-0": 3}}
    assert "exactly-once check: collector: read_committed (verified)" in txn.describe()
    assert ChaosRun.from_trace(tr).exactly_once_check is None, "a bare trace records no markers"


def delays(*specs: DelaySpec) -> History:
    timeline = [ev(10, "fault_injected", "kafka", label="above"), ev(11.5, "task_failed", "executor-0"),
                ev(14, "fault_healed", "kafka", label="above"), ev(30, "fault_injected", "kafka", label="below"),
                ev(40, "fault_healed", "kafka", label="below")]
    return History(Trace(planted().sent, planted().outputs, timeline=timeline), facts=RunFacts(delays=list(specs)))


def test_the_delay_class_check_holds_when_each_delay_did_what_its_class_says() -> None:
    above = DelaySpec("above", 3000, True, "kafkaConsumer.pollTimeoutMs", 1.0)
    below = DelaySpec("below", 300, False, "kafkaConsumer.pollTimeoutMs", 20.0)
    r = ch.DelayClasses().check(delays(above, below))
    assert r.ok is True and [o.observed for o in r.outcomes] == ["noticed", "not noticed"]
    assert r.lines[0].startswith("delay: above: 3000 ms against kafkaConsumer.pollTimeoutMs")
    wrong = ch.DelayClasses().check(delays(DelaySpec("below", 300, True, "spark.network.timeout", 20.0)))
    assert wrong.ok is False and wrong.outcomes[0].as_stated is False
    unstated = ch.DelayClasses().check(delays(DelaySpec("above", 3000, None, "spark.network.timeout", 1.0)))
    assert unstated.ok is None and "no network delay with a stated class" in unstated.reason


def observed(collector_silent: bool, scope: str = "job", reason: str | None = None) -> ChaosRun:
    """A run whose network fault spans +20..+30 s; the clients sample every second from +1 s (the baseline:
    the warm-up, to +5 s)."""
    tr = stateless_trace(rate=100, duration=60)
    detail = {"scope": scope, **({"scope_reason": reason} if reason else {})}
    tr.timeline = [ev(20, "fault_injected", "kafka", fault="network_partition", label="p", **detail),
                   ev(30, "fault_healed", "kafka", fault="network_partition", label="p")]

    def samples(silent: bool) -> list[ClientSample]:
        return [ClientSample(T0 + s, 2.0, 4.0, 0 if silent and 21 <= s <= 29 else 10) for s in range(1, 60)]

    clients = {"generator": samples(False), "collector": samples(collector_silent)}
    facts = RunFacts(setup=RunSetup(), client_samples=clients)
    return ChaosRun.from_trace(tr, facts=facts)


def test_the_observer_check_compares_the_harness_clients_during_the_network_faults_with_their_baseline() -> None:
    spared = observed(collector_silent=False)
    assert spared.checks["observer"].ok is True and spared.warnings == []
    obs = spared.observer
    assert obs is not None and obs["scope"] == "job" and obs["disturbed"] == {} and obs["network_fault_windows"] == 1
    assert obs["collector"]["during_faults"]["seconds"] == 10 and obs["collector"]["baseline"]["rtt_p50_ms"] == 2.0
    assert "observer: network faults hit the job's connections only; collector round trip 2.0 ms before" \
        in spared.describe()
    hit = observed(collector_silent=True, scope="all", reason="no cgroup v2")
    assert hit.checks["observer"].ok is False and "collector" in hit.observer["disturbed"]
    assert hit.observer["scope"] == "all" and hit.observer["scope_reason"] == "no cgroup v2"
    assert any("the harness's collector was disturbed" in w for w in hit.warnings)
    assert "warning: the harness's collector was disturbed" in hit.describe()
    assert hit.meta.items() >= {"warnings": hit.warnings, "observer": hit.observer}.items()


def full_facts() -> RunFacts:
    return RunFacts(
        setup=RunSetup(test="t.py::test", seed=7, arguments={"rate": 10.0, "job": "j.py"}, planned_faults=["kill#0"],
                       spark_conf={"spark.a": "1"}, cluster_conf={"spark.worker.timeout": "60"}),
        job=JobFacts(args=["x"], workdir="/w", log="/w/driver.log", master="spark://m:7077", launches=2,
                     restarts_by_supervisor=1, checkpoint="/w/chk", checkpoint_storage="local"),
        load=LoadFacts(planned_s=20.0, why="given", ended=None, ran_s=20.1), warnings=["careful"],
        client_samples={}, transaction_markers={})


#: the report's ``meta`` keys (docs/report-schema.md), as the runner wrote them before the history was typed
META_KEYS = {"test", "seed", "run", "faults", "fault_errors", "topics", "spark_conf", "cluster_conf", "poisoned_ids",
             "driver_launches", "driver_restarts_by_supervisor", "job_log", "warnings", "checkpoint",
             "checkpoint_storage", "job_args", "job_workdir", "spark_master_used", "load", "delay_class",
             "delay_outcomes", "observer", "sinks", "sink_note", "exactly_once", "kafka_conf", "collector"}


def test_the_reports_meta_is_written_from_the_typed_facts() -> None:
    history = History(stateless_trace(rate=10, duration=20), topics=Topics("in", "out", "late"), facts=full_facts())
    run = ChaosRun.judge(history)
    written = run.meta
    assert META_KEYS - {"collector"} <= set(written)
    assert written.items() >= {
        "driver_launches": 2, "seed": 7, "topics": {"input": "in", "output": "out", "side": "late"},
        "load": {"planned_s": 20.0, "why": "given", "ended": None, "ran_s": 20.1},
        "run": {"rate": 10.0, "job": "j.py"}, "warnings": ["careful"]}.items()
    written.update(driver_launches=99)
    assert run.meta.items() >= {"driver_launches": 2}.items(), "a fresh dict each time: the facts are the truth"
    assert json.loads(run.to_json())["meta"]["job_log"] == "/w/driver.log"
    again = RunSetup.from_meta(run.to_dict()["meta"])
    assert again.differences(history.facts.setup) == [] and again.seed == 7
    other = RunSetup(seed=8, arguments={"rate": 20.0, "job": "k.py"}, spark_conf={"spark.a": "2"})
    assert again.differences(other) == ["run.rate: 10.0 -> 20.0", "spark_conf.spark.a: 1 -> 2",
                                        "cluster_conf.spark.worker.timeout: 60 -> (unset)", "seed: 7 -> 8"]


def test_the_docs_own_checker_passes_a_timely_run_and_fails_a_late_one() -> None:
    OutputWithin = checker_example()["OutputWithin"]
    run = ChaosRun.from_trace(stateless_trace(rate=100, duration=30, latency=0.2, faults=[15],
                                              outages=[Outage(16, 4, catch_up_rate=1000)]))
    timely = run.check(OutputWithin(seconds=10))
    assert timely.ok is True and timely.numbers == {"late": 0, "outputs": 3000}
    late = run.check(OutputWithin(seconds=1), must_pass=False)
    assert late.ok is False and 300 < late.numbers["late"] < 500, late.numbers  # the outage held ~4 s of input
    with pytest.raises(CheckFailed, match=r"output_within_1s: VIOLATED\n  \d+ of 3000 outputs came more than 1s"):
        run.check(OutputWithin(seconds=1), must_pass=True)
    text = run.describe()
    assert "check output_within_10s: ok" in text and "check output_within_1s: VIOLATED" in text
    checks = json.loads(run.to_json())["checks"]
    assert checks["output_within_1s"]["ok"] is False and checks["output_within_1s"]["numbers"]["late"] > 300
    assert checks["output_within_10s"]["status"] == "ok" and checks["lost"]["status"] == "ok"


def test_a_repeated_run_checks_every_run() -> None:
    OutputWithin = checker_example()["OutputWithin"]
    quick = ChaosRun.from_trace(stateless_trace(rate=100, duration=30))
    slow = ChaosRun.from_trace(stateless_trace(rate=100, duration=30, faults=[15], outages=[Outage(16, 4)]))
    r = RepeatedRun([quick, slow]).check(OutputWithin(seconds=1))
    assert r.ok is False and r["run0"].ok is True and r["run1"].ok is False and r.numbers == {"runs": 2, "held": 1}
    assert slow.user_checks["output_within_1s"] is r["run1"], "each run keeps its own result"
    with pytest.raises(CheckFailed):
        RepeatedRun([quick, slow]).check(OutputWithin(seconds=1), must_pass=True)


def test_a_checker_may_answer_a_bool_and_must_not_answer_anything_else() -> None:
    class Yes:
        name = "yes"

        def check(self, history: History) -> bool:
            return len(history.sent) > 0

    class Odd:
        name = "odd"

        def check(self, history: History) -> str:
            return "fine"

    run = ChaosRun.from_trace(stateless_trace(rate=10, duration=20))
    assert run.check(Yes(), must_pass=True).ok is True
    with pytest.raises(TypeError, match="checker 'odd' returned str"):
        run.check(Odd())  # type: ignore[arg-type]
    named_like_a_default = Counting("lost", False)
    run.check(named_like_a_default)
    assert run.checks["lost"].ok is True and run.user_checks["test:lost"].ok is False
