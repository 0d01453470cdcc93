"""The plugin's handling of finished runs: ``@pytest.mark.sla`` bounds, the declared guarantee,
plain ``assert`` on run attributes, the terminal table and ``--chaos-report``.

The runs come from synthetic traces with known answers (the stack is not under test here): a
conftest replaces the ``chaos`` fixture by one whose ``run()`` analyses a synthetic trace.
"""

import json

import pytest

CONFTEST = """
import pytest
from pytest_streamchaos.analysis.result import ChaosRun
from synthetic import Outage, stateless_trace
from pytest_streamchaos.report.session import RUNS_KEY

class FakeChaos:
    def __init__(self):
        self.runs = []
    def run(self, outage=0.0, drop=(), guarantee="exactly-once"):
        import numpy as np
        trace = stateless_trace(rate=100, duration=60, faults=[20.0],
                                outages=[Outage(20.0, outage, catch_up_rate=400)] if outage else [],
                                drop=np.array(drop, dtype=np.int64) if drop else None)
        run = ChaosRun.from_trace(trace, guarantee=guarantee)
        self.runs.append(run)
        return run

@pytest.fixture
def chaos(request):
    c = FakeChaos()
    request.node.stash[RUNS_KEY] = c.runs
    return c
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    return pytester


def test_sla_mark_reports_every_violated_bound_with_timeline(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest
        @pytest.mark.sla(max_downtime=2.0, max_recovery=1.0, min_reliability=0.5)
        def test_slow_recovery(chaos):
            chaos.run(outage=8.0)
        @pytest.mark.sla(max_downtime=30.0)
        def test_within_bounds(chaos):
            chaos.run(outage=8.0)
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*SLAViolation: 2 SLA bound(s) violated:*", "*- downtime = 8.*, bound downtime <= 2.0",
                                 "*- recovery_time = 11.0, bound recovery_time <= 1.0", "*timeline*",
                                 "*fault_injected*worker-1*"])
    assert "- reliability" not in result.stdout.str()  # reliability 1.0 met its bound


def test_declared_guarantee_not_delivered_fails_by_default(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        def test_loses(chaos):
            chaos.run(drop=[5, 6, 7], guarantee="exactly-once")
        def test_honest(chaos):
            chaos.run(drop=[5, 6, 7], guarantee="at-most-once")
        """
    )
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_loses*", "*guarantee: delivered at-most-once, declared exactly-once*"])


def test_plain_assert_on_run_is_readable(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        def test_downtime(chaos):
            run = chaos.run(outage=8.0)
            assert run.downtime < 3
        """
    )
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*assert 8.* < 3*", "*where 8.* = *downtime*"])


def test_summary_table_and_json_report(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        from pytest_streamchaos import kill_worker
        @kill_worker(after=20)
        def test_a(chaos):
            chaos.run(outage=4.0)
        def test_b(chaos):
            chaos.run()
        """
    )
    result = project.runpytest("--chaos-report=out.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*streamchaos: chaos runs*", "test *faults*declared*lost*", "test_a *kill_worker@20s*",
                                 "test_b *-*", "*wrote 2 run(s) to out.json*"])
    data = json.loads((project.path / "out.json").read_text())
    assert [d["test"].split("::")[-1] for d in data] == ["test_a", "test_b"]
    assert data[0]["faults"][0]["kind"] == "kill_worker"
    assert data[0]["downtime"] == pytest.approx(4.0, abs=1.0)
    assert "series" in data[0]["metrics"] and data[0]["validation"]["lost"] == 0
