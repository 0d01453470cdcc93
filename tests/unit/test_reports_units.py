"""Pure parts of the reports: gate specs, metric lookup, repeated runs, A/B verdicts, the JSON
schema, progress lines, JUnit properties and the pictures -- on synthetic runs, without pytest sessions."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from synthetic import Outage, Spike, stateless_trace

from pytest_streamchaos import JobSetup
from pytest_streamchaos.analysis import keys
from pytest_streamchaos.analysis.metrics import NOT_RECOVERED
from pytest_streamchaos.analysis.repeat import RepeatedRun, weakest_guarantee
from pytest_streamchaos.analysis.result import SCHEMA_VERSION, ChaosRun
from pytest_streamchaos.analysis.sla import SLAViolation, render_timeline
from pytest_streamchaos.harness import merged_args
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.report import baseline as bl
from pytest_streamchaos.report import plots
from pytest_streamchaos.report.progress import StatusLine
from pytest_streamchaos.report.session import junit_properties, slug


def _run(outage: float = 0.0, spike: float = 0.0, faults: bool = True, drop: int = 0, stop_at: float | None = None,
         latency: float = 0.2) -> ChaosRun:
    trace = stateless_trace(rate=100, duration=60, batch_interval=1.0, latency=latency,
                            faults=[20.0] if faults else [],
                            outages=[Outage(20.0, outage, catch_up_rate=400)] if outage else [],
                            spikes=[Spike(20.0, 6.0, spike)] if spike else [],
                            drop=np.arange(100, 100 + drop) if drop else None, stop_at=stop_at)
    for e in trace.timeline:
        e.detail.update(fault="kill_worker", label="kill_worker@15s")
    return ChaosRun.from_trace(trace, guarantee="at-least-once")


@pytest.fixture(scope="module")
def runs() -> dict[str, ChaosRun]:
    return {"calm": _run(faults=False), "masked": _run(), "spike": _run(spike=2.0), "out4": _run(outage=4.0),
            "out8": _run(outage=8.0), "out6": _run(outage=6.0), "lossy": _run(drop=5),
            "dead": _run(stop_at=30.0)}


# -- gate specs and metric names -------------------------------------------------------------------
def test_parse_gates() -> None:
    assert bl.parse_gates("downtime:20%, lost:0,latency.p99:0.5") == [
        bl.Gate("downtime", 20.0, True), bl.Gate("lost", 0.0, False), bl.Gate("latency.p99", 0.5, False)]
    assert str(bl.Gate("latency.p99", 0.5, False)) == "latency.p99:0.5" and bl.parse_gates("") == []
    for bad in ("downtime", "downtime:", "downtime:-1", "downtime:x%", ":3", "down time:3"):
        with pytest.raises(ValueError, match="METRIC:N% or METRIC:N"):
            bl.parse_gates(bad)


def test_metric_names_read_the_run_json(runs: dict[str, ChaosRun]) -> None:
    d = runs["out4"].to_dict()
    for m in ("downtime", "recovery_time", "failure_cost", "lost", "duplicates", "reliability", "latency.p99",
              "reliable_throughput", "metrics.baseline.throughput"):
        assert keys.from_dict(d, m) == pytest.approx(keys.from_run(runs["out4"], m) if "." not in m or
                                                     m.startswith("latency") else keys.from_dict(d, m))
    with pytest.raises(KeyError, match="no metric 'latency.p98'.*'p98' is not a key of latency.*p99"):
        keys.from_dict(d, "latency.p98")
    with pytest.raises(KeyError, match="not a number"):
        keys.from_dict(d, "latency")
    not_rec = {"recovery_time": None, "recovered": False}
    assert keys.from_dict(not_rec, "recovery_time") == math.inf
    assert keys.higher_is_better("reliability") and keys.higher_is_better("reliable_throughput")
    assert not keys.higher_is_better("latency.p99") and not keys.higher_is_better("lost")
    assert keys.worse("reliability", 1.0, 0.99) == pytest.approx(0.01) and keys.worse("downtime", 5, 4) == -1


def test_the_gates_sample_run_is_the_synthetic_run_it_stands_for() -> None:
    """The gates' names are checked on a run the package makes itself (the synthetic traces are the tests'):
    it is the tests' stateless trace of the same run, number for number."""
    trace = stateless_trace(rate=10, duration=10, batch_interval=1.0, faults=[5.0])
    expected = ChaosRun.from_trace(trace, guarantee="at-least-once").to_dict()
    assert json.dumps(bl.sample_run_json(), sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_gates_judge_direction_threshold_and_noise() -> None:
    def one(m: str, before: float, after: float, gate: str, spread: tuple[float, float] | None = None) -> str:
        b = {m: before} if spread is None else {m: before, "runs": [{m: spread[0]}, {m: before}, {m: spread[1]}]}
        tc = bl.compare_result("t", 0, b, {m: after}, bl.parse_gates(gate))
        return next(c.status for c in tc.changes if c.metric == m)

    assert one("downtime", 5.0, 9.0, "downtime:20%") == "regression"
    assert one("downtime", 5.0, 5.9, "downtime:20%") == "worse"  # within the gate
    assert one("downtime", 5.0, 1.0, "downtime:0") == "better"
    assert one("downtime", 0.0, 0.5, "downtime:10%") == "regression"  # from 0 any rise is beyond N %
    assert one("lost", 0, 1, "lost:0") == "regression" and one("lost", 0, 0, "lost:0") == ""
    assert one("reliability", 1.0, 0.98, "reliability:1%") == "regression"
    assert one("reliability", 0.98, 1.0, "reliability:0") == "better"
    assert one("reliable_throughput", 100.0, 95.0, "reliable_throughput:10%") == "worse"
    assert one("downtime", 7.0, 8.0, "downtime:10%", spread=(5.0, 9.0)) == "noise"
    assert one("downtime", 7.0, 13.0, "downtime:10%", spread=(5.0, 9.0)) == "regression"
    assert one("recovery_time", 5.0, math.inf, "recovery_time:100%") == "regression"


def test_compare_render_explains_settings_and_environment(runs: dict[str, ChaosRun]) -> None:
    before, after = runs["out4"].to_dict(), runs["out8"].to_dict()
    before["meta"] = {"spark_conf": {"spark.sql.shuffle.partitions": "200"}, "seed": 1, "run": {"rate": 100}}
    after["meta"] = {"spark_conf": {"spark.sql.shuffle.partitions": "4"}, "seed": 1, "run": {"rate": 200}}
    comps = bl.compare_session({"tests": [{"test": "t::a", "index": 0, "result": before}]},
                               [("t::a", 0, after), ("t::new", 0, after)], bl.parse_gates("downtime:10%"))
    lines = bl.render(comps, "0001_x.json", ["spark: 4.0.0 -> 4.1.0"])
    text = "\n".join(lines)
    assert "environment changed: spark: 4.0.0 -> 4.1.0" in text
    assert "setting changed: run.rate: 100 -> 200" in text
    assert "setting changed: spark_conf.spark.sql.shuffle.partitions: 200 -> 4" in text
    assert "t::new: not in the baseline" in text
    assert any(line.strip().startswith("downtime") and "REGRESSION: gate downtime:10%" in line for line in lines)


def test_storage_numbers_and_finds(tmp_path: Path) -> None:
    st = bl.Storage(tmp_path / ".chaos")
    with pytest.raises(FileNotFoundError, match="--chaos-save first"):
        st.find("latest")
    a = st.save({"tests": []}, "first run")
    b = st.save({"tests": []}, "second")
    assert (a.name, b.name) == ("0001_first-run.json", "0002_second.json")
    assert st.find("latest") == b and st.find("1") == a and st.find("0001") == a and st.find("first-run") == a
    assert st.find(str(b)) == b
    with pytest.raises(FileNotFoundError, match="saved: 0001_first-run.json, 0002_second.json"):
        st.find("third")


# -- repeated runs -------------------------------------------------------------------------------
def test_repeated_run_median_spread_worst(runs: dict[str, ChaosRun]) -> None:
    rr = RepeatedRun([runs["out4"], runs["out8"], runs["out6"]])
    downs = [runs[k].downtime for k in ("out4", "out8", "out6")]
    assert rr.downtime == sorted(downs)[1] and rr.spread("downtime") == (min(downs), max(downs))
    assert rr.worst("downtime") == max(downs) and rr.worst_run is runs["out8"]
    assert rr.latency.p99 == pytest.approx(np.median([runs[k].latency.p99 for k in ("out4", "out8", "out6")]))
    assert rr.worst("reliability") == 1.0 and rr.timeline is runs["out8"].timeline
    d = rr.to_dict()
    assert d["repeat"] == 3 and d["downtime"] == rr.downtime and len(d["runs"]) == 3
    assert d["spread"]["downtime"] == [min(downs), max(downs)] and d["schema_version"] == SCHEMA_VERSION
    json.dumps(d)
    row = rr.summary_row()
    assert row["downtime_s"] == f"{rr.downtime:.4g} ({min(downs):.4g}-{max(downs):.4g})" and row["repeat"] == 3


def test_repeated_sla_worst_by_default(runs: dict[str, ChaosRun]) -> None:
    rr = RepeatedRun([runs["out4"], runs["out8"], runs["out6"]])
    bound = (rr.downtime + rr.worst("downtime")) / 2
    assert rr.check_sla(max_downtime=bound, check_guarantee=False)
    assert not rr.check_sla(max_downtime=bound, over="median", check_guarantee=False)
    with pytest.raises(SLAViolation, match="judged on the worst of 3 runs"):
        rr.assert_sla(max_downtime=bound)
    with pytest.raises(ValueError, match="over="):
        rr.check_sla(over="mean")


def test_repeated_not_recovered_and_guarantees(runs: dict[str, ChaosRun]) -> None:
    dead = runs["dead"]
    assert dead.recovery_time is NOT_RECOVERED
    assert RepeatedRun([dead, dead, runs["out4"]]).recovery_time is NOT_RECOVERED
    assert RepeatedRun([dead, runs["out4"], runs["out4"]]).recovery_time == runs["out4"].recovery_time
    assert RepeatedRun([dead, runs["out4"]]).view("worst").recovery_time is NOT_RECOVERED
    assert weakest_guarantee(["exactly-once", "at-least-once"]) == "at-least-once"
    assert weakest_guarantee(["at-most-once", "at-least-once"]) == "none"
    assert RepeatedRun([runs["out4"], runs["lossy"]]).guarantee_delivered == runs["lossy"].guarantee_delivered


# -- A/B and masking verdicts ---------------------------------------------------------------------
def test_versus_deltas_and_masking_verdicts(runs: dict[str, ChaosRun]) -> None:
    calm = runs["calm"]
    v = runs["masked"].versus(calm)
    assert v.verdicts == ["masked"] and "within the baseline band" in v.faults[0].reason
    v = runs["spike"].versus(calm)
    assert v.verdicts == ["degraded"] and v["latency.p99"].change > 1.0 and v["latency.p99"].worse > 0
    assert runs["spike"].versus(calm, slo_latency=5.0).verdicts == ["degraded"]
    v = runs["spike"].versus(calm, slo_latency=2.0)
    assert v.verdicts == ["outage"] and "above the SLO 2s" in v.faults[0].reason
    v = runs["out4"].versus(calm)
    assert v.verdicts == ["outage"] and v["downtime"].change == runs["out4"].downtime
    assert runs["dead"].versus(calm).verdicts == ["outage"]
    text = runs["out4"].versus(calm).describe()
    assert "fault 0 (kill_worker worker-1 at +20.0s): outage -- output stopped for" in text
    assert "reliable_throughput:" in text and json.dumps(v.to_dict())
    # repeated runs: medians for the deltas, the worst run's faults for the verdicts
    rr = RepeatedRun([runs["masked"], runs["spike"], runs["masked"]])
    assert rr.versus(calm).verdicts == ["degraded"]


def test_merged_args_merges_conf() -> None:
    common = {"rate": 100, "setup": JobSetup(conf={"a": 1, "b": 2}, args=["x"])}
    assert merged_args(common, {"setup": JobSetup(conf={"b": 3}), "faults": False}) == {
        "rate": 100, "setup": JobSetup(conf={"a": 1, "b": 3}, args=["x"]), "faults": False}
    assert merged_args(common, {"setup": JobSetup(args=["y"])})["setup"] == JobSetup(conf={"a": 1, "b": 2},
                                                                                       args=["y"])
    assert merged_args(common, None) == common


# -- JSON, timeline lines, JUnit, progress -------------------------------------------------------
def test_json_has_schema_version_and_top_level_headline(runs: dict[str, ChaosRun]) -> None:
    d = json.loads(runs["lossy"].to_json())
    assert d["schema_version"] == SCHEMA_VERSION
    assert d["lost"] == 5 and d["duplicates"] == 0 and d["latency"] == d["metrics"]["latency"]
    doc = Path(__file__).parents[2] / "docs" / "report-schema.md"
    assert f"schema_version: {SCHEMA_VERSION}" in doc.read_text()


def test_timeline_lines_have_signed_tenths() -> None:
    lines = render_timeline([TimelineEvent(81.874, "job_submitted"), TimelineEvent(124.2, "fault_injected", "w")],
                            t0=100.0)
    assert lines[0].split()[0] == "-18.1s" and lines[1].split()[0] == "+24.2s"


def test_junit_properties(runs: dict[str, ChaosRun]) -> None:
    props = dict(junit_properties(runs["dead"]))
    assert props["chaos.recovery_time_s"] == "not recovered" and props["chaos.lost"] == runs["dead"].lost
    rr = RepeatedRun([runs["out4"], runs["out8"]])
    props = dict(junit_properties(rr, index=1))
    assert props["chaos[1].repeat"] == 2 and props["chaos[1].downtime_s_spread"].count("..") == 1
    assert slug("tests/test_a.py::test_b[x-1]") == "test_a.test_b-x-1"


def test_status_line_modes() -> None:
    out: list[str] = []
    now = [0.0]
    plain = StatusLine(out.append, "test_x", live=False, every=10.0, clock=lambda: now[0])
    st = {"phase": "load", "elapsed": 3.2, "planned": 30, "sent": 640, "outputs": 600, "backlog": 40, "faults": 1}
    for t in (0.0, 1.0, 9.0, 10.5):
        now[0] = t
        plain(st)
    plain({**st, "phase": "drain"})  # a phase change prints at once
    assert out == ["[chaos] test_x  load 3/30s  sent 640  outputs 600  backlog 40  faults 1\n"] * 2 + [
        "[chaos] test_x  drain 3/30s  sent 640  outputs 600  backlog 40  faults 1\n"]
    out.clear()
    live = StatusLine(out.append, "test_x", live=True)
    live(st)
    live({**st, "sent": 7})
    live.finish()
    assert out[0].startswith("\n[chaos]") and out[1].startswith("\r[chaos]") and out[2] == "\n"
    assert len(out[1]) == len(out[0])  # padded over the longer line before it


# -- pictures ----------------------------------------------------------------------------------
def test_fault_windows_pair_injection_and_heal(runs: dict[str, ChaosRun]) -> None:
    d = runs["out4"].to_dict()
    t = d["timeline"][0]["t"]
    d["timeline"].append({"t": t + 10, "kind": "fault_healed", "target": "worker-1",
                          "detail": {"fault": "kill_worker", "label": "kill_worker@15s"}})
    assert plots.fault_windows(d) == [(t, t + 10, "kill_worker@15s")]
    assert plots.fault_windows(runs["out8"].to_dict())[0][1] is None  # never healed


@pytest.mark.skipif(not plots.available(), reason=plots.MISSING)
def test_pictures_are_written(runs: dict[str, ChaosRun], tmp_path: Path) -> None:
    p = plots.timeline_png(runs["out4"].to_dict(), tmp_path / "a" / "run.png", title="t::a")
    q = plots.comparison_png(runs["calm"].to_dict(), runs["spike"].to_dict(), tmp_path / "cmp.png")
    for f in (p, q):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 20_000


def test_runner_status_hook_fields_and_rate() -> None:
    """The runner's hook (``runner.context.Status``), without a stack: fields, at most one call a second."""
    from types import SimpleNamespace

    from pytest_streamchaos.faults.timeline import Recorder
    from pytest_streamchaos.runner.context import Status

    got: list[dict] = []
    recorder = Recorder()
    recorder.record("fault_injected", "worker-1")
    status = Status(got.append, recorder)
    status.watch(SimpleNamespace(acked=500), SimpleNamespace(count=420, ids_seen=450))
    status("load", 30.0)
    status("load", 30.0)  # within the second: not reported
    assert len(got) == 1
    assert {k: got[0][k] for k in ("phase", "planned", "sent", "outputs", "backlog", "faults")} == {
        "phase": "load", "planned": 30.0, "sent": 500, "outputs": 420, "backlog": 50, "faults": 1}
    assert 0 <= got[0]["elapsed"] < 1


def test_report_dir_without_matplotlib_writes_json(runs: dict[str, ChaosRun], tmp_path: Path) -> None:
    from pytest_streamchaos.report.session import write_artifacts

    arts, pics = write_artifacts(tmp_path, [("t.py::a", 0, [], runs["out4"])], [], draw=False)
    assert arts[0].json.is_file() and arts[0].pictures == [] and pics == []
    assert plots.MISSING.endswith("pip install 'pytest-streamchaos[plots]'")
