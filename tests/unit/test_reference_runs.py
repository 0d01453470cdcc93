"""``ChaosFixture(chaos).run(..., reference=True)``'s flow without a stack (the runs are synthetic, made by a seam that
records the specs it was given): the reference is made twice on one input -- the second and every compared
run send exactly the first one's records on its clock -- once per session for a job and input, and the run
carries the comparison (``run.diverged``, ``run.reference``, the guarantee from it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import stateless_trace

from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.facts import GeneratorStats, OutputRows, RunFacts
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.history import History
from pytest_streamchaos.runner.chaos import Chaos
from pytest_streamchaos.runner.reference import SECOND_PACE, SLACK_S, References

TOTALS = [{"user": f"u{i}", "clicks": 10 + i} for i in range(40)]


class FakeChaos(Chaos):
    """Each run is synthetic: ``rows(n)`` gives the n-th run's output rows."""

    def __init__(self, tmp_path: Path, rows, references: References | None = None) -> None:
        super().__init__(cluster=None, kafka=None, workdir=tmp_path, test_dir=tmp_path,  # type: ignore[arg-type]
                         nodeid="test_x.py::test_totals", references=references)
        self.rows = rows
        self.specs: list = []

    def _execute(self, spec, inputs):
        self.specs.append(spec)
        produced = 1234 if spec.input_counts is None else spec.input_counts[0]
        facts = RunFacts(generators={"clicks": GeneratorStats(produced=produced, event_origin=spec.event_origin)},
                         output_rows=[OutputRows("totals", self.rows(len(self.specs) - 1))])
        return History(stateless_trace(rate=50, duration=20), facts=facts, per_record=False)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "totals_job.py"
    path.write_text("print('a job')\n")
    return path


def test_the_reference_is_made_twice_on_one_input_and_the_run_is_compared_with_it(tmp_path: Path, job: Path):
    chaos = FakeChaos(tmp_path, lambda n: TOTALS if n < 2 else TOTALS[:-1] + [{"user": "u39", "clicks": 55}])
    run = ChaosFixture(chaos).run(str(job), rate=50, duration=20, outputs=["totals"], reference=Reference(key=["user"]))
    first, second, compared = chaos.specs
    assert first.duration == 20 + SLACK_S and first.input_counts is None and first.event_origin is not None
    assert (second.input_counts, second.event_origin) == ((1234,), first.event_origin)
    # the second sends the same records faster, on the same clock: other batch boundaries, so that a column set by
    # them (a batch id) differs between the two; the run compared is paced as the test says
    assert (first.send_pace, second.send_pace, compared.send_pace) == (1.0, SECOND_PACE, 1.0) and SECOND_PACE > 1
    assert (compared.input_counts, compared.event_origin, compared.duration) == ((1234,), first.event_origin, 20)
    assert all(s.capture_rows for s in chaos.specs)
    assert run.diverged == 1 and run.reference is not None
    assert "changed user=u39: expected clicks=49, got clicks=55" in "\n".join(run.reference.lines())
    assert run.guarantee_delivered == "none" and run.lost is None  # no ids: the guarantee is the comparison's
    violated = run.check_sla(guarantee="at-least-once")
    assert [v.metric for v in violated] == ["guarantee"]


def test_a_second_test_with_the_same_job_and_input_reuses_the_reference(tmp_path: Path, job: Path):
    refs = References()
    one = FakeChaos(tmp_path, lambda n: TOTALS, refs)
    ChaosFixture(one).run(str(job), rate=50, duration=20, outputs=["totals"], reference=True)
    two = FakeChaos(tmp_path / "b", lambda n: TOTALS, refs)
    (tmp_path / "b").mkdir()
    run = ChaosFixture(two).run(str(job), rate=50, duration=20, outputs=["totals"], reference=True)
    assert len(two.specs) == 1 and run.diverged == 0 and run.guarantee_delivered == "exactly-once"
    assert "reused from an earlier test" in "\n".join(run.reference.lines())
    other = ChaosFixture(two).run(str(job), rate=60, duration=20, outputs=["totals"], reference=True)  # another input
    assert len(two.specs) == 4 and other.diverged == 0


def test_without_a_comparable_output_the_guarantee_is_unknown_and_says_why(tmp_path: Path, job: Path):
    chaos = FakeChaos(tmp_path, lambda n: [])  # the reference wrote nothing: no evidence
    run = ChaosFixture(chaos).run(str(job), rate=50, duration=20, outputs=["totals"], reference=True)
    assert run.diverged is None and run.guarantee_delivered == "unknown"
    [violation] = run.check_sla(guarantee="exactly-once")
    assert "the reference comparison cannot vouch for it (totals: the reference run wrote nothing there" \
        in str(violation)


def test_a_mistyped_key_is_never_a_pass(tmp_path: Path, job: Path):
    # issue 47: Reference(key=["skuu"]) on rows keyed by "user" made every key None, one key was compared, and the
    # run passed as "0 diverged, exactly-once"; now the comparison is refused, naming the columns there are
    doubled = [dict(r, clicks=2 * r["clicks"]) for r in TOTALS]
    chaos = FakeChaos(tmp_path, lambda n: TOTALS if n < 2 else doubled)
    run = ChaosFixture(chaos).run(str(job), rate=50, duration=20, outputs=["totals"], reference=Reference(key=["usr"]))
    assert run.diverged is None and run.guarantee_delivered == "unknown"
    assert run.reference is not None and run.reference.lines()[0] == (
        "totals: not comparable: Reference(key=['usr']): no row of totals has a column 'usr' (did you mean 'user'?); "
        "its columns: user, clicks")
    assert run.check_sla(guarantee="at-least-once")  # never green
    right = FakeChaos(tmp_path / "r", lambda n: TOTALS if n < 2 else doubled)
    (tmp_path / "r").mkdir()
    found = ChaosFixture(right).run(str(job), rate=50, duration=20, outputs=["totals"],
                                    reference=Reference(key=["user"]))
    assert found.diverged == 40 and found.guarantee_delivered == "none"


@pytest.mark.parametrize("bad", [["user"], {"key": "user"}, 1])
def test_a_wrong_reference_is_refused_naming_the_fix(tmp_path: Path, job: Path, bad):
    chaos = FakeChaos(tmp_path, lambda n: TOTALS)
    with pytest.raises(TypeError, match=r"reference=.*: pass True or Reference\(key=\[...\], ignore=\[...\]\)"):
        ChaosFixture(chaos).run(str(job), rate=50, duration=20, outputs=["totals"], reference=bad)
    with pytest.raises(ValueError, match=r"Reference\(key='user'\): give a list of column names"):
        Reference(key="user")


def test_the_report_says_why_there_is_no_per_record_verdict_as_the_test_asked():
    # issue 47: a run with outputs=["delta:..."] said "outputs={}: console, noop, an external system"
    def described(**facts) -> str:
        run = ChaosRun.from_trace(stateless_trace(rate=50, duration=20), facts=RunFacts(**facts), per_record=False)
        return run.describe()

    listed = described(outputs_without_ids=["delta:/lake/inventory"], output_rows=[OutputRows("delta:/lake/inventory",
                                                                                             TOTALS, table=True)])
    assert ("no per-record verdict: outputs=['delta:/lake/inventory'] names outputs whose rows carry no input ids, so "
            "no input record is tracked to an output: their rows are compared with the reference run") in listed
    assert "outputs={}" not in listed
    no_ref = described(outputs_without_ids=["counts"])
    assert "pass reference=True to compare their rows with a run of the same input without faults" in no_ref
    console = described(sink_note="query 'q' writes to the console, which the run cannot read")
    assert "no per-record verdict: query 'q' writes to the console, which the run cannot read;" in console
    assert "outputs={}: console, noop, an external system" in described()


@pytest.mark.parametrize("caught_up", [True, False])
def test_a_divergence_of_a_run_that_never_caught_up_says_so(caught_up: bool):
    # an S3 run on a busy machine: the drain ended before the job committed the input's end offsets, and all 20 keys
    # were lower than the reference's -- unfinished work, reported as the run's but named, not read as a replay
    from pytest_streamchaos.analysis.checkers.reference import ReferenceCheck
    from pytest_streamchaos.events import Kind, Phase, TimelineEvent

    trace = stateless_trace(rate=50, duration=20)
    if caught_up:
        trace.timeline.append(TimelineEvent(trace.phases[Phase.LOAD_END] + 1, Kind.CAUGHT_UP))
    behind = [dict(r, clicks=r["clicks"] - 1) for r in TOTALS]
    history = History(trace, facts=RunFacts(output_rows=[OutputRows("totals", behind)]), per_record=False)
    result = ReferenceCheck([OutputRows("totals", TOTALS)], [OutputRows("totals", TOTALS)],
                            Reference(key=["user"])).check(history)
    assert result.ok is False and result.numbers["diverged"] == 40
    notes = [line for line in result.lines if "had not committed the input's end offsets" in line]
    assert len(notes) == (0 if caught_up else 1) and ("caught_up" in result.numbers) is not caught_up
    same = ReferenceCheck([OutputRows("totals", TOTALS)], [OutputRows("totals", TOTALS)],
                          Reference(key=["user"])).check(History(trace, facts=RunFacts(
                              output_rows=[OutputRows("totals", TOTALS)]), per_record=False))
    assert same.ok is True and not any("end offsets" in line for line in same.lines)
