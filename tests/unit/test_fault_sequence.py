"""``@pytest.mark.chaos(sequence=True)``: a test's fault marks as a sequence, each fault judged in its own window.

A sequence whose next fault would fire before the one before it healed is refused at collection, naming both;
a run of a sequence that breaks its declared guarantee fails naming the window -- the fault -- that broke it
(the run is a synthetic trace with a known answer: the conftest's ``chaos`` fixture judges it, no stack).
"""

from __future__ import annotations

import pytest

from pytest_streamchaos.faults.registry import KINDS
from pytest_streamchaos.faults.timeline import sequence_conflicts

CONFTEST = """
import numpy as np
import pytest
from pytest_streamchaos.analysis.result import ChaosRun
from synthetic import stateless_trace
from pytest_streamchaos.faults.marks import specs_for_item
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.report.session import COMPARISONS_KEY, RUNS_KEY


class TwoFaults(ChaosFixture):
    def run(self, job, guarantee="exactly-once", *, repeat=None, faults=True):
        return self._repeated(lambda: self.synthetic(guarantee), repeat=repeat, faults=faults)

    def synthetic(self, guarantee):
        # the first fault's batch (records 190-199) comes out twice, the second's loses 490-494
        trace = stateless_trace(rate=10, duration=80, batch_interval=1.0, progress=True, faults=[20.5, 50.5],
                                duplicate=np.arange(190, 200), drop=np.arange(490, 495))
        for e, s in zip(trace.timeline, self.runner.faults):
            e.detail.update(fault=s.kind, label=s.label)
        run = ChaosRun.from_trace(trace, guarantee=guarantee)
        self.runs.append(run)
        return run


@pytest.fixture
def chaos(request, tmp_path):
    h = TwoFaults(cluster=None, kafka=None, workdir=tmp_path, faults=specs_for_item(request.node),
                  nodeid=request.node.nodeid)
    request.node.stash[RUNS_KEY] = h.results
    request.node.stash[COMPARISONS_KEY] = h.comparisons
    return h
"""


def spec(kind: str, **kwargs: object):
    return KINDS[kind].parse((), dict(kwargs))


def test_a_fault_that_would_fire_before_the_one_before_it_healed_is_named_with_it() -> None:
    [why] = sequence_conflicts([spec("kill_driver", after=10, restart_after=30), spec("kill_worker", after=30)])
    assert why.startswith("kill_worker@30s would fire at 30s, before kill_driver@10s healed (at 40s)")
    assert "give it after=40 or more" in why
    assert sequence_conflicts([spec("kill_driver", after=10, restart_after=30),
                               spec("kill_worker", after=40, restart_after=5)]) == []


def test_a_fault_never_healed_can_only_be_the_last() -> None:
    [why] = sequence_conflicts([spec("kill_worker", after=10), spec("kill_driver", after=60, restart_after=0)])
    assert "kill_worker@10s, which is never healed during the load" in why
    assert sequence_conflicts([spec("kill_driver", after=10, restart_after=0), spec("kill_worker", after=60)]) == []


def test_a_recurring_fault_in_a_sequence_heals_before_it_comes_again() -> None:
    [why] = sequence_conflicts([spec("kill_worker", after=10, every=5, times=2, restart_after=10)])
    assert "would fire at 15s, before kill_worker@10s x2/5s" in why


def test_the_plugin_refuses_a_bad_sequence_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from pytest_streamchaos import kill_driver, kill_worker

        @pytest.mark.chaos(sequence=True)
        @kill_driver(after=10, restart_after=30)
        @kill_worker(after=30, restart_after=5)
        def test_overlapping(chaos): ...

        @pytest.mark.chaos(sequence=True)
        @kill_driver(after=10, restart_after=30)
        @kill_worker(after=45, restart_after=5)
        def test_one_after_the_other(chaos): ...

        @pytest.mark.chaos(sequence="yes")
        @kill_driver(after=10, restart_after=30)
        def test_says_yes(chaos): ...

        @pytest.mark.chaos
        @kill_driver(after=10, restart_after=30)
        @kill_worker(after=30, restart_after=5)
        def test_overlapping_on_purpose(chaos): ...
        """)
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*test_overlapping: @chaos(sequence=True): kill_worker@30s would fire at 30s, before kill_driver@10s healed "
        "(at 40s)*",
        "*test_says_yes: @chaos(sequence=True): sequence='yes' must be True or False*"])
    err = result.stderr.str()
    assert "test_one_after_the_other" not in err and "test_overlapping_on_purpose" not in err


def test_a_sequence_that_breaks_its_guarantee_names_the_window_that_did(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("""
        import pytest
        from pytest_streamchaos import kill_driver

        @pytest.mark.chaos(sequence=True)
        @kill_driver(after=20, restart_after=0)
        @kill_driver(after=50, restart_after=0, index=0)
        def test_each_window(chaos):
            run = chaos.run("job.py", guarantee="at-least-once")
            first, second = run.windows
            assert (first.duplicates, first.lost, second.duplicates, second.lost) == (10, 0, 0, 5)
        """)
    result = pytester.runpytest("-q", "--tb=short")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E*each fault's window (sequence=True):",
                                 "*window 0 (kill_driver@20s): 490 sent, lost 0, duplicates 10*",
                                 "*window 1 (kill_driver[[]0]@50s): 310 sent, lost 5, duplicates 0*<-- VIOLATED"])
