"""The plugin's reports, end to end in pytester sessions: baselines (save / compare / compare-fail),
repeated runs, A/B comparisons, the report directory (JSON + PNG), JUnit properties and progress.

No stack: the conftest's ``chaos`` fixture is a ``ChaosFixture`` whose ``run`` hands the harness's repeats
(``_repeated``, the test seam) runs that analyse a synthetic trace -- an outage of ``outages[k]`` seconds
at +20 s in the k-th run.
"""

import contextlib
import json
import xml.etree.ElementTree as ET

import pytest

# Import matplotlib in this process before any inline pytester session does: pytester drops the
# modules a session imported when it ends, and a second copy of matplotlib then fails its own
# isinstance checks ("Single argument to subplot must be a three-digit integer, not GridSpec").
with contextlib.suppress(ImportError):
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401

CONFTEST = """
import numpy as np
import pytest
from pytest_streamchaos.analysis.result import ChaosRun
from synthetic import Outage, Spike, stateless_trace
from pytest_streamchaos.facts import RunFacts, RunSetup
from pytest_streamchaos.faults.marks import specs_for_item
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.report.session import COMPARISONS_KEY, RUNS_KEY, chaos_session
from pytest_streamchaos.report.progress import status_for

class FakeHarness(ChaosFixture):
    def run(self, job, *, repeat=None, faults=True, **scenario):
        return self._repeated(lambda: self.synthetic(job, **scenario), repeat=repeat, faults=faults)

    def synthetic(self, job, outages=(0.0,), spike=0.0, drop=(), conf=None, guarantee="exactly-once"):
        k = len(self.runs)
        outage = outages[k % len(outages)] if self.runner.faults else 0.0
        if self.runner.status:
            for i, phase in enumerate(("warm-up", "load", "load", "drain")):
                self.runner.status({"phase": phase, "elapsed": 10.0 * i, "planned": 60, "sent": 100 * i,
                             "outputs": 90 * i, "backlog": 10 * i, "faults": int(i >= 2)})
        trace = stateless_trace(rate=100, duration=60, batch_interval=1.0,
                                faults=[20.0] if self.runner.faults else [],
                                outages=[Outage(20.0, outage, catch_up_rate=400)] if outage else [],
                                spikes=[Spike(20.0, 6.0, spike)] if spike and self.runner.faults else [],
                                drop=np.array(drop, dtype=np.int64) if drop else None)
        for e in trace.timeline:  # as the fault scheduler records an injection
            e.detail.update(fault=self.runner.faults[0].kind, label=self.runner.faults[0].label)
        setup = RunSetup(seed=7, spark_conf=dict(conf or {}), planned_faults=[s.label for s in self.runner.faults])
        run = ChaosRun.from_trace(trace, guarantee=guarantee, facts=RunFacts(setup=setup))
        self.runs.append(run)
        return run

@pytest.fixture
def chaos(request, tmp_path):
    mark = request.node.get_closest_marker("chaos")
    repeat = mark.kwargs.get("repeat", 1) if mark else chaos_session(request.config).settings.repeat
    h = FakeHarness(cluster=None, kafka=None, workdir=tmp_path, faults=specs_for_item(request.node),
                    nodeid=request.node.nodeid, repeat=repeat, status=status_for(request.config, request.node.nodeid))
    request.node.stash[RUNS_KEY] = h.results
    request.node.stash[COMPARISONS_KEY] = h.comparisons
    return h
"""

TESTS = """
import os
import pytest
from pytest_streamchaos import kill_worker

OUTAGE = float(os.environ.get("OUTAGE", "4"))
DROP = int(os.environ.get("DROP", "0"))

@kill_worker(after=15)
def test_kill(chaos):
    chaos.run("job.py", outages=(OUTAGE,), drop=list(range(100, 100 + DROP)), guarantee="at-least-once")

def test_quiet(chaos):
    chaos.run("job.py")
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_jobs=TESTS)
    return pytester


def _saved(p: pytest.Pytester) -> list:
    return sorted((p.path / ".chaos").glob("*.json"))


def test_save_records_runs_and_what_explains_a_difference(project: pytest.Pytester) -> None:
    result = project.runpytest("--chaos-save=before")
    result.assert_outcomes(passed=2)
    [path] = _saved(project)
    assert path.name == "0001_before.json"
    result.stdout.fnmatch_lines([f"*saved the baseline*{path.name}"])
    doc = json.loads(path.read_text())
    env = doc["environment"]
    for key in ("plugin", "spark", "java", "python", "cores", "commit", "datetime"):
        assert key in env
    assert env["spark"] and env["python"] and env["cores"] >= 1
    tests = {t["test"].split("::")[-1]: t for t in doc["tests"]}
    assert set(tests) == {"test_kill", "test_quiet"}
    run = tests["test_kill"]["result"]
    assert run["schema_version"] >= 2 and run["meta"]["seed"] == 7 and "spark_conf" in run["meta"]
    assert tests["test_kill"]["faults"][0]["kind"] == "kill_worker"
    # a second save without a name numbers on
    project.runpytest("--chaos-save").assert_outcomes(passed=2)
    assert [p.name[:5] for p in _saved(project)] == ["0001_", "0002_"]


def test_compare_prints_before_after_per_metric(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.runpytest("--chaos-save=base").assert_outcomes(passed=2)
    monkeypatch.setenv("OUTAGE", "8")
    result = project.runpytest("--chaos-compare")
    result.assert_outcomes(passed=2)
    assert result.ret == 0  # no gate: a comparison alone never fails
    result.stdout.fnmatch_lines(["*compared with the baseline*", "baseline: *0001_base.json",
                                 "*test_kill:", "*downtime *5 -> 9 * +4 (+80%)  worse", "*test_quiet:"])


# (each case is two sessions; the arithmetic of every gate kind is unit-tested in test_reports_units.py)
@pytest.mark.parametrize("spec, fails", [("downtime:20%", True), ("downtime:150%", False), ("downtime:3", True),
                                         ("latency.p99:50%,reliability:0", True)])
def test_compare_fail_gates(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, spec: str,
                            fails: bool) -> None:
    project.runpytest("--chaos-save").assert_outcomes(passed=2)
    monkeypatch.setenv("OUTAGE", "8")
    result = project.runpytest(f"--chaos-compare-fail={spec}")  # implies comparing with the latest
    result.assert_outcomes(passed=2)
    if fails:
        assert result.ret == 1
        result.stdout.fnmatch_lines(["*regression(s) beyond --chaos-compare-fail; the session fails:",
                                     f"*test_jobs.py::test_kill: *{spec.split(',')[0].split(':')[0]}* -> * (gate *)"])
    else:
        assert result.ret == 0, result.stdout.str()
        assert "REGRESSION" not in result.stdout.str()


def test_gate_names_test_metric_before_after_and_threshold(project: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    project.runpytest("--chaos-save").assert_outcomes(passed=2)
    monkeypatch.setenv("DROP", "5")
    result = project.runpytest("--chaos-compare-fail=lost:0,reliability:0.0001")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["  test_jobs.py::test_kill: lost 0 -> 5 (gate lost:0)",
                                 "  test_jobs.py::test_kill: reliability 1 -> 0.9992 (gate reliability:0.0001)"])


def test_ini_keys_hold_gate_defaults(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makeini("[pytest]\nstreamchaos_compare_fail = downtime:10%\nstreamchaos_storage = baselines\n")
    project.runpytest("--chaos-save").assert_outcomes(passed=2)
    assert list((project.path / "baselines").glob("0001_*.json"))
    monkeypatch.setenv("OUTAGE", "8")
    assert project.runpytest().ret == 1


def test_bad_gate_and_missing_baseline(project: pytest.Pytester) -> None:
    result = project.runpytest("--chaos-compare-fail=downtime>3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-compare-fail*'downtime>3' is not METRIC:N% or METRIC:N*"])
    result = project.runpytest("--chaos-compare-fail=downtime:10%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # a gate that cannot be checked: refused before the runs
    result.stderr.fnmatch_lines(["*--chaos-compare-fail (compares with the latest baseline): no baseline saved in "
                                 "*.chaos yet: run with --chaos-save first"])
    project.runpytest("--chaos-save").assert_outcomes(passed=2)
    result = project.runpytest("--chaos-compare-fail=downtim:10%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-compare-fail*downtim:10%: no metric 'downtim'*(did you mean 'downtime'?)*"])


REPEATED = """
import os
import pytest
from pytest_streamchaos import kill_worker

OUTAGES = tuple(float(x) for x in os.environ.get("OUTAGES", "4,8,6").split(","))

@pytest.mark.chaos(repeat=3)
@kill_worker(after=15)
def test_repeated(chaos):
    runs = chaos.run("job.py", outages=OUTAGES)
    assert len(runs.runs) == 3
    assert runs.downtime == sorted(runs.values("downtime"))[1]
"""


def test_change_within_baseline_spread_is_noise(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_rep=REPEATED)
    result = pytester.runpytest("--chaos-save")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_repeated*(*-*)*", "*median (min-max) over the repeats*"])
    # (a synthetic outage of N s at a 1 s micro-batch interval is a downtime of N + 1 s)
    monkeypatch.setenv("OUTAGES", "7,7,7")  # median 7 -> 8: +14 %, but inside the baseline's 5..9
    result = pytester.runpytest("--chaos-compare-fail=downtime:10%")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*downtime*7 -> 8 *within the baseline's own spread 5..9: not a regression (gate downtime:10%)"])
    monkeypatch.setenv("OUTAGES", "12,12,12")
    result = pytester.runpytest("--chaos-compare-fail=downtime:10%")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*test_rep.py::test_repeated: downtime 7 -> 13 (gate downtime:10%)"])


def test_sla_of_repeated_runs_is_judged_on_the_worst_unless_median(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        import pytest
        from pytest_streamchaos import kill_worker

        @pytest.mark.chaos(repeat=3)
        @pytest.mark.sla(max_downtime=7)
        @kill_worker(after=15)
        def test_worst(chaos):
            chaos.run("job.py", outages=(4.0, 8.0, 6.0))

        @pytest.mark.chaos(repeat=3)
        @pytest.mark.sla(max_downtime=7, over="median")
        @kill_worker(after=15)
        def test_median(chaos):
            chaos.run("job.py", outages=(4.0, 8.0, 6.0))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_worst*", "*- downtime = 9*, bound downtime <= 7*",
                                 "*judged on the worst of 3 runs*"])


def test_bad_repeat_and_over_fail_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.chaos(repeat=0)
        @pytest.mark.sla(max_downtime=1, over="mean")
        def test_x(chaos):
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*repeat=0 must be an int >= 1*"])
    result.stderr.fnmatch_lines(["*over='mean'*"])


def test_chaos_repeat_option(project: pytest.Pytester) -> None:
    result = project.runpytest("--chaos-repeat=2", "--chaos-report=r.json")
    result.assert_outcomes(passed=2)
    data = json.loads((project.path / "r.json").read_text())
    assert [d["repeat"] for d in data] == [2, 2] and len(data[0]["runs"]) == 2
    assert data[0]["spread"]["downtime"][0] == pytest.approx(4.0, abs=1)


# --no-summary skips plugins' terminal summaries on pytest 8 (not on 9); without the terminal plugin
# there is no summary at all
@pytest.mark.parametrize("quiet", [["--no-summary"], ["-p", "no:terminal"]], ids=["no-summary", "no-terminal"])
def test_reports_are_written_without_a_terminal_summary(project: pytest.Pytester, quiet: list[str]) -> None:
    """The files are written at session end, not by the terminal summary."""
    result = project.runpytest(*quiet, "--chaos-report=r.json", "--chaos-report-dir=reports", "--chaos-save=quiet")
    assert result.ret == pytest.ExitCode.OK
    data = json.loads((project.path / "r.json").read_text())
    assert [d["test"].split("::")[-1] for d in data] == ["test_kill", "test_quiet"]
    assert data[0]["faults"][0]["kind"] == "kill_worker" and data[0]["schema_version"] >= 2
    assert (project.path / "reports" / "test_jobs.test_kill.json").is_file()
    assert [p.name for p in _saved(project)] == ["0001_quiet.json"]


AB = """
import pytest
from pytest_streamchaos import kill_worker

@kill_worker(after=15)
def test_overhead(chaos):
    cmp = chaos.compare("job.py", a={"faults": False}, b={}, labels=("no faults", "kill_worker"),
                        slo_latency=5.0, spike=2.0)
    assert cmp.verdicts == ["degraded"]
    assert cmp["latency.p99"].change > 0
"""


def test_ab_comparison_in_one_test_with_picture(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ab=AB)
    result = pytester.runpytest("--chaos-report-dir=reports")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_overhead: kill_worker versus no faults*", "*latency.p99: * -> * (+*",
                                 "*fault 0 (kill_worker*): degraded -- p99 latency rose to *, within the SLO 5s",
                                 "*comparison picture: *test_ab.test_overhead-compare.png"])
    png = pytester.path / "reports" / "test_ab.test_overhead-compare.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_dir_has_json_and_png_per_run(project: pytest.Pytester) -> None:
    result = project.runpytest("--chaos-report-dir=reports")
    result.assert_outcomes(passed=2)
    out = project.path / "reports"
    result.stdout.fnmatch_lines([f"streamchaos: test_jobs.py::test_kill: {out / 'test_jobs.test_kill.json'}, "
                                 f"{out / 'test_jobs.test_kill.png'}"])
    d = json.loads((out / "test_jobs.test_kill.json").read_text())
    assert d["schema_version"] >= 2 and d["test"].endswith("test_kill") and d["latency"]["p99"] > 0
    for name in ("test_jobs.test_kill.png", "test_jobs.test_quiet.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"


def test_junit_xml_has_headline_properties(project: pytest.Pytester) -> None:
    project.runpytest("--junitxml=junit.xml").assert_outcomes(passed=2)
    root = ET.parse(project.path / "junit.xml").getroot()
    props = {}
    for case in root.iter("testcase"):
        props[case.get("name")] = {p.get("name"): p.get("value") for p in case.iter("property")}
    kill = props["test_kill"]
    assert float(kill["chaos.downtime_s"]) == pytest.approx(4.0, abs=1.0)
    assert kill["chaos.lost"] == "0" and kill["chaos.guarantee_delivered"] == "exactly-once"
    for name in ("recovery_time_s", "failure_cost_s", "duplicates", "reliability", "latency_p99_s",
                 "reliable_throughput"):
        assert f"chaos.{name}" in kill
    assert props["test_quiet"]["chaos.recovery_time_s"] == "0.0"


def test_progress_lines_when_not_a_terminal_and_none_with_q(project: pytest.Pytester) -> None:
    result = project.runpytest("-k", "quiet")
    result.stdout.fnmatch_lines(["[chaos] test_quiet  warm-up 0/60s  sent 0  outputs 0  backlog 0  faults 0",
                                 "[chaos] test_quiet  load 10/60s  sent 100  outputs 90  backlog 10  faults 0",
                                 "[chaos] test_quiet  drain 30/60s  sent 300  outputs 270  backlog 30  faults 1"])
    result = project.runpytest("-q", "-k", "quiet")
    assert "[chaos]" not in result.stdout.str()
