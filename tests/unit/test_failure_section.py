"""A failed chaos test explains itself: its report carries a ``chaos run`` section (the verdict, each
fault and whether the job recovered, each driver exit with its first error line, restarts, and -- when
records were lost because the job stopped and nothing restarted it -- one line naming
``supervise=True``), and the assertion shows a short ``ChaosRun`` repr.

The runs are synthetic traces with a known answer (the stack is not under test): the job dies 30 s
into a 60 s load (``stop_at``), a query's exception and the driver's exit are on its timeline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic import T0, stateless_trace

from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.facts import RunFacts, RunSetup
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.report.failure import explain, failure_section

EXCEPTION = ("org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query [id = 1] "
             "terminated with exception: java.io.EOFException: End of File Exception between local host\n"
             "\tat org.apache.spark.sql.execution.streaming.StreamExecution.runStream(StreamExecution.scala:332)")


def dying_run(*, supervise: bool = False, restarted: bool = False) -> ChaosRun:
    """60 s at 100 records/s; a fault at +20 s; the driver's query fails at +29.8 s and the driver
    exits at +30 s (started again at +32 s when ``restarted``, and then nothing is lost)."""
    trace = stateless_trace(rate=100, duration=60, faults=[20.0], stop_at=None if restarted else 30.0)
    trace.timeline += [
        TimelineEvent(T0 - 5, "driver_launched", "driver", {"launch": 1}),
        TimelineEvent(T0 + 29.8, "query_terminated", "query", {"exception": EXCEPTION}),
        TimelineEvent(T0 + 30.0, "driver_exited", "driver", {"code": 1}),
        *([TimelineEvent(T0 + 32.0, "driver_launched", "driver", {"launch": 2})] if restarted else []),
    ]
    # the run's arguments as the runner records them (what explain() reads ``supervise`` from)
    facts = RunFacts(setup=RunSetup(arguments={"supervise": supervise}))
    return ChaosRun.from_trace(trace, guarantee="at-least-once", facts=facts)


def test_a_run_whose_job_died_unsupervised_names_the_loss_cause_and_supervise() -> None:
    run = dying_run()
    assert run.lost == 3020  # the known answer: ids sent from +29.8 s on (0.2 s latency) never output
    lines = explain(run)
    assert lines[0].startswith("verdict: sent 6000, lost 3020, duplicates 0, incorrect 0; guarantee declared "
                               "at-least-once, delivered at-most-once; NOT recovered")
    assert any(ln.startswith("fault 0: ") and "not recovered" in ln for ln in lines), lines
    (exit_line,) = [ln for ln in lines if ln.startswith("driver: ")]
    assert exit_line == ("driver: exited at +30.0s (exit code 1): org.apache.spark.sql.streaming."
                         "StreamingQueryException: [STREAM_FAILED] Query [id = 1] terminated with exception: "
                         "java.io.EOFException: End of File Exception between local host; not started again")
    (loss,) = [ln for ln in lines if ln.startswith("lost: ")]
    assert "because the job stopped at +30.0s and nothing restarted it" in loss and "supervise=True" in loss


def test_a_supervised_run_that_still_lost_records_says_the_driver_was_not_started_again() -> None:
    lines = explain(dying_run(supervise=True))
    (loss,) = [ln for ln in lines if ln.startswith("lost: ")]
    assert "was not started again although supervise=True" in loss and "nothing restarted it" not in loss


def test_a_restarted_driver_is_counted_and_blamed_for_nothing() -> None:
    run = dying_run(supervise=True, restarted=True)
    assert run.lost == 0
    lines = explain(run)
    assert any(ln.endswith("; started again") for ln in lines if ln.startswith("driver: ")), lines
    assert "restarts: the driver was started 1 more time (from its checkpoint)" in lines
    assert not any(ln.startswith("lost: ") for ln in lines)
    assert "supervise=True" not in "\n".join(lines)


def test_a_run_without_driver_exit_says_so_and_blames_no_restart() -> None:
    trace = stateless_trace(rate=100, duration=60, faults=[20.0], drop=np.arange(10, 20))
    run = ChaosRun.from_trace(trace, guarantee="at-least-once")
    lines = explain(run)
    assert "driver: ran to the end of the run (no exit of its own)" in lines
    assert not any(ln.startswith("lost: ") for ln in lines)  # 10 lost, but not for want of a restart


def test_repr_is_one_short_line() -> None:
    text = repr(dying_run())
    assert "\n" not in text and len(text) < 240, text
    assert text == ("ChaosRun(sent 6000, lost 3020, duplicates 0, incorrect 0, at-least-once declared, at-most-once "
                    "delivered, 1 fault not recovered, downtime 30.0s)")


def test_section_has_the_account_then_the_full_report() -> None:
    text = failure_section([dying_run()])
    assert text.startswith("run: ChaosRun(sent 6000, lost 3020")
    assert text.index("lost: 3020 records because") < text.index("timeline:")  # the account first
    assert "driver_exited" in text  # describe()'s timeline


CONFTEST = """
import types
import pytest
from pytest_streamchaos.report.session import RUNS_KEY
from test_failure_section import dying_run

@pytest.fixture
def chaos(request):
    runs = request.node.stash[RUNS_KEY] = []  # what the plugin reads after the test
    return types.SimpleNamespace(run=lambda **kw: runs.append(dying_run(**kw)) or runs[-1])
"""

TEST = """
def test_job_survives_namenode_loss(chaos):
    run = chaos.run()
    assert run.sent > 3000 and run.lost == 0

def test_supervised_job_survives(chaos):
    run = chaos.run(supervise=True, restarted=True)
    assert run.lost == 0

def test_other_failure_after_a_good_run(chaos):
    run = chaos.run(supervise=True, restarted=True)
    assert run.duplicates == 1
"""


@pytest.mark.parametrize("quiet", [False, True], ids=["default", "-q"])
def test_a_failed_chaos_test_shows_the_section_on_purpose(pytester: pytest.Pytester, quiet: bool) -> None:
    """A test fails on purpose (records lost, the job died unsupervised): its report shows the short repr
    in the assertion, then the ``chaos run`` section; a passing test shows none."""
    pytester.syspathinsert(Path(__file__).parent)  # the conftest builds its runs with dying_run above
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", *(["-q"] if quiet else []))
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*assert (6000 > 3000 and 3020 == 0)*",
        "*and   3020 = ChaosRun(sent 6000, lost 3020, duplicates 0, incorrect 0, at-least-once declared, "
        "at-most-once delivered, 1 fault not recovered, downtime 30.0s).lost*",
        "*- chaos run -*",
        "run: ChaosRun(sent 6000, lost 3020*",
        "verdict: sent 6000, lost 3020, duplicates 0, incorrect 0;*NOT recovered",
        "fault 0: *not recovered*",
        "driver: exited at +30.0s (exit code 1): *StreamingQueryException*EOFException*; not started again",
        "lost: 3020 records because the job stopped at +30.0s and nothing restarted it;*supervise=True*",
        "sent 6000 records, read 2980 outputs; lost 3020*",
        "timeline:",
        "*driver_exited*",
    ])
    out = result.stdout.str()
    assert "ChaosRun(guarantee=" not in out  # not the dataclass dump
    assert out.count("- chaos run -") == 2  # the two failed tests, not the passing one
    other = out[out.index("_ test_other_failure_after_a_good_run _"):].split("- chaos run -")[1]
    assert "restarts: the driver was started 1 more time" in other
    assert "supervise=True" not in other.split("short test summary")[0]  # nothing lost: no such line


def test_a_repeated_scenario_shows_its_worst_run_and_the_others_in_one_line_each() -> None:
    from pytest_streamchaos.analysis.repeat import RepeatedRun

    good, bad = dying_run(supervise=True, restarted=True), dying_run()
    text = failure_section([RepeatedRun([good, bad])])
    head = text.splitlines()[0]
    assert head.startswith("run (repeat=2: the worst run, 2; the others: ChaosRun(sent 6000, lost 0,")
    assert head.endswith("): ChaosRun(sent 6000, lost 3020, duplicates 0, incorrect 0, at-least-once declared, "
                         "at-most-once delivered, 1 fault not recovered, downtime 30.0s)")
    assert "lost: 3020 records because the job stopped" in text
