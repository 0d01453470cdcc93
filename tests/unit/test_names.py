"""Every name a test gives, misspelt once, and its refusal: one case per row of docs/names.md's table.

Each case makes the typo the table's row describes and returns the refusal the plugin gave; the table's last
column is that refusal (``…`` where the test leaves a stretch out), so the table and the code cannot drift: a
row without a case, a case without a row, or a refusal worded otherwise than the table says fails here. A
check that needs the running job is fed what a run would have observed (Spark's progress, an output's first
records): the warm-up asks these same functions (``runner/phases/names.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_streamchaos import (
    AggregateOracle,
    IdentityOracle,
    JobSetup,
    Load,
    MetricParams,
    Reference,
    Timing,
    TumblingWindowOracle,
    Watch,
)
from pytest_streamchaos.analysis import keys
from pytest_streamchaos.analysis.sla import SLA
from pytest_streamchaos.exploration.mark import ExploreError, parse
from pytest_streamchaos.faults.registry import parse as parse_fault
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.observe.seen_names import (
    Sampled,
    idless,
    mentioned_topics,
    missing_fields,
    missing_source,
    missing_topics,
    subscriptions,
    unread_inputs,
    unwritten_outputs,
)
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.groups import check_keywords
from pytest_streamchaos.runner.spec import JobPlace, RunGroups, build_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "names.md"
#: rows whose check is another part of issue 47's (the sink check's): listed in the table, tested where it is checked
ELSEWHERE = {"outputs={'file:<path>': ...}, outputs={'delta:<path>': ...}"}


def refusal(make: Callable[[], Any], *errors: type[BaseException]) -> str:
    """The message of what ``make()`` raised (one of ``errors``), KeyError's without its quotes."""
    with pytest.raises(errors or (ValueError, TypeError, KeyError, RunError)) as caught:
        make()
    return str(caught.value.args[0]) if isinstance(caught.value, KeyError) else str(caught.value)


# -- before anything starts: chaos.run's arguments ------------------------------------------------------------
JOB = Path(__file__).resolve().parents[2] / "pipelines" / "enrich_at_least_once.py"


def build(guarantee: str = "at-least-once", job: str | Path = JOB, **groups: Any) -> Any:
    """``build_run`` as ``chaos.run`` calls it: every argument checked before anything starts."""
    g = RunGroups(load=groups.get("load", Load()), watch=groups.get("watch", Watch()),
                  setup=groups.get("setup", JobSetup()), timing=groups.get("timing", Timing()))
    return build_run(job, place=JobPlace(), faults=[], groups=g, guarantee=guarantee, default_checkpoint="local")


def record(_spec: Any) -> dict:
    return {"id": 1, "Items": [1, 2]}


def lines(rec: Any) -> float:
    return len(rec["Items"])


def outputs_reader(_value: Any, _key: Any) -> list[int]:
    return []


CALL: dict[str, Callable[[Any], str]] = {
    "chaos.run(<keyword>=...)": lambda _: refusal(lambda: check_keywords(ChaosFixture.run, {"duraton": 30})),
    "Load(...), Watch(...), JobSetup(...), Timing(...) keywords": lambda _: refusal(lambda: Load(patitions=4)),
    "MetricParams(<field>=...)": lambda _: refusal(lambda: MetricParams(hold_second=3)),
    "MetricParams(fault_kinds=..., system_detection_kinds=...)":
        lambda _: refusal(lambda: MetricParams(system_detection_kinds=("executor_remvoed",))),
    "guarantee=": lambda _: refusal(lambda: build(guarantee="exactly_once")),
    "chaos.run(job)": lambda _: refusal(lambda: build(job="jobs/ordres.py")),
    "JobSetup(args=[...]) placeholders": lambda _: refusal(lambda: build(setup=JobSetup(args=["{chekpoint_dir}"]))),
    "JobSetup(checkpoint=)": lambda _: refusal(lambda: build(setup=JobSetup(checkpoint="hfds"))),
    "JobSetup(stale_checkpoint=)": lambda _: refusal(lambda: build(setup=JobSetup(stale_checkpoint="keep"))),
    "JobSetup(deploy_mode=)": lambda _: refusal(lambda: build(setup=JobSetup(deploy_mode="clusterr"))),
    "JobSetup(files=, py_files=)": lambda _: refusal(lambda: build(setup=JobSetup(files=["prices.cvs"]))),
    "kafka_port=, JobSetup(kafka_port=)": lambda _: refusal(lambda: build(setup=JobSetup(kafka_port=90920))),
    "Load(partitions, key_space, skew, record_size, late_fraction)":
        lambda _: refusal(lambda: build(load=Load(late_fraction=5))),
    "Timing(trigger_seconds, warmup_timeout, drain_timeout, settle_seconds)":
        lambda _: refusal(lambda: build(timing=Timing(trigger_seconds=0))),
    "inputs={topic: ...} (the name)": lambda _: refusal(lambda: build(load=Load(inputs={"orders in": None}))),
    "outputs={name: ...} (the kind)": lambda _: refusal(lambda: build(watch=Watch(outputs={"dleta:/lake/t": "id"}))),
    "Watch(annotate={name: ...})": lambda _: refusal(
        lambda: build(load=Load(inputs={"orders": record}), watch=Watch(annotate={"": lines}))),
    "IdentityOracle(copies='<annotation>')": lambda _: refusal(lambda: build(
        load=Load(inputs={"orders": record}), watch=Watch(oracle=IdentityOracle(copies="lnes"),
                                                          annotate={"lines": lines}))),
    "AggregateOracle(amount='<annotation>')": lambda _: refusal(lambda: build(
        load=Load(inputs={"orders": record}), watch=Watch(oracle=AggregateOracle(60, agg="sum", amount="totl"),
                                                          annotate={"total": lines}))),
    "oracle topic=, side_topic=, late_topic=": lambda _: refusal(lambda: build(
        watch=Watch(outputs={"ledger": "id"}, oracle=IdentityOracle(topic="ledgr")))),
    "AggregateOracle(agg=, output_mode=), TumblingWindowOracle(closer=)":
        lambda _: refusal(lambda: AggregateOracle(60, output_mode="updates")),
    "inputs={topic: factory}, outputs={name: callable}, annotate= callables":
        lambda _: refusal(lambda: build(watch=Watch(outputs={"ledger": lambda v: [1]}))),
    "chaos.compare(a={...}, b={...})": lambda _: refusal(lambda: check_keywords(ChaosFixture.run, {"sertup": None})),
}


# -- during the warm-up: what the running job shows ---------------------------------------------------------
def kafka_records(n: int = 10, ids: int | None = None, error: str = "", **fields: Any) -> list[Sampled]:
    value = {"id": 7, "amount": 1.5, "customer": "c3", **fields}
    return [Sampled(json.dumps(value).encode(), b"7", ids, error) for _ in range(n)]


PROGRESS = [{"id": "q1", "name": "ledger", "sources": [{"description": "KafkaV2[Subscribe[orders]]"}]}]

RUNTIME: dict[str, Callable[[Any], str | None]] = {
    "inputs={topic: ...} (what the job reads)": lambda _: unread_inputs(["ordrs"], subscriptions(PROGRESS)),
    "inputs={topic: ...} (a topic the brokers lack)": lambda _: missing_source(
        ["purchses"], ["org.apache.spark.sql.streaming.StreamingQueryException: [STREAM_FAILED] Query terminated with "
                       "exception: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does "
                       "not host this topic-partition."],
        mentioned_topics(["127.0.0.1:9092", "purchases", "ledger"], "")),
    "outputs={topic: ...} (what the job writes)": lambda _: unwritten_outputs(
        {"ledger-ue": 0}, missing_topics(["org.apache.kafka.common.errors.TimeoutException: Topic ledger-eu not "
                                          "present in metadata after 60000 ms."])),
    "outputs={name: '<field path>'}": lambda _: idless(
        "outputs['ledger']", "idd", kafka_records(error="ValueError: no field 'idd'")),
    "outputs={name: 'key'}": lambda _: idless(
        "outputs['ledger']", "key", [Sampled(b'{"id": 7}', None, None, "ValueError: output has no key")] * 10),
    "outputs={name: callable} (no id)": lambda _: idless("outputs['ledger']", outputs_reader, kafka_records(ids=0)),
    "outputs={topic: None}": lambda _: idless(
        "outputs['ledger']", None, [Sampled(b'{"order_id": 7, "amount": 1.5}', b"7", None,
                                            "ValueError: no `id` or `ids` field")] * 10),
    "Watch(id_reader=...)": lambda _: idless(
        "Watch(id_reader)", "order.id", [Sampled(b'{"order": {"num": 7}}', None, None, "")] * 10),
    "AggregateOracle(key_field=, window_field=, value_field=)": lambda _: missing_fields(
        "AggregateOracle", "'counts'", AggregateOracle(60, value_field="cnt").output_fields(),
        kafka_records(key="k1", count=3, window={"start": 0, "end": 60})),
    "Reference(key=...), Reference(ignore=...)": lambda _: Reference(key=["skuu"]).refused(
        "delta:data/inventory", [{"sku": "s1", "on_hand": 3}, {"sku": "s2", "on_hand": 5}]),
    "TumblingWindowOracle (each output's window)": lambda _: missing_fields(
        "TumblingWindowOracle", "'counts'", TumblingWindowOracle(60).output_fields(), kafka_records()),
}


# -- at collection and session start: marks and options (a pytester session each) ------------------------------
def session_error(pytester: pytest.Pytester, *args: str, test: str = "def test_a(): pass\n",
                  ini: str = "") -> str:
    """The one-line UsageError a session with ``args`` (and ``test``, ``ini``) stops on."""
    if ini:
        pytester.makeini("[pytest]\n" + ini)
    pytester.makepyfile(test)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    text = [line.strip() for line in result.stderr.lines if line.strip()]
    first = next(i for i, line in enumerate(text) if line.startswith("ERROR:"))
    line = text[first].removeprefix("ERROR:").strip()
    return text[first + 1] if line.endswith(":") and first + 1 < len(text) else line  # the header, then the mark


def marked(*marks: str) -> str:
    return "import pytest\n" + "".join(f"@pytest.mark.{m}\n" for m in marks) + "def test_a(): pass\n"


def collected_explore(args: str) -> Callable[[pytest.Pytester], str]:
    return lambda _: refusal(lambda: parse(eval(f"dict({args})")), ExploreError)  # noqa: S307 - a literal


SESSION: dict[str, Callable[[pytest.Pytester], str]] = {
    "fault mark arguments (@kill_worker(aftr=...))": lambda _: refusal(
        lambda: parse_fault("kill_worker", (), {"aftr": 30}), FaultSpecError),
    "fault mark index= (a role)": lambda _: refusal(
        lambda: parse_fault("kill_broker", (), {"index": "leeder"}), FaultSpecError),
    "fault mark when= (a moment)": lambda _: refusal(
        lambda: parse_fault("kill_driver", (), {"when": "uncomitted_output"}), FaultSpecError),
    "fault mark target=": lambda _: refusal(
        lambda: parse_fault("network_delay", (), {"target": "kafak", "ms": 100}), FaultSpecError),
    "@pytest.mark.<fault> (the mark's name)": lambda p: session_error(p, test=marked("kill_wroker(after=30)")),
    "@pytest.mark.chaos(...)": lambda p: session_error(p, test=marked("chaos(repat=3)")),
    "@pytest.mark.chaos(spark=, backend=)": lambda p: session_error(p, test=marked("chaos(spark='yran')")),
    "@pytest.mark.sla(<bound>=...)": lambda p: session_error(p, test=marked("sla(max_dowtime=15)")),
    "@pytest.mark.sla(<bound>=<value>)": lambda p: session_error(p, test=marked("sla(min_reliability=99.9)")),
    "@pytest.mark.sla(over=), RepeatedRun.assert_sla(over=)": lambda p: session_error(
        p, test=marked("sla(max_downtime=15, over='medain')")),
    "run.assert_sla(<bound>=...)": lambda _: refusal(lambda: SLA().merged(max_lost="0")),
    "@explore(faults=[...])": collected_explore("faults=['kill_drvier']"),
    "@explore(<knob>=...)": collected_explore("faults=['kill_driver'], budjet=4"),
    "--chaos-<option> choices": lambda p: session_error(p, ini="streamchaos_checkpoint = hfds\n"),
    "--chaos-<option> numbers": lambda p: session_error(p, "--chaos-worker-cores=0"),
    "--chaos-worker-memory, --chaos-java-home, --chaos-report, --chaos-explore-db":
        lambda p: session_error(p, "--chaos-worker-memory=1 GB"),
    "ini streamchaos_<key>": lambda p: session_error(p, ini="streamchaos_explroe_profile = ci\n"),
    "--chaos-compare=<baseline>": lambda p: session_error(p, "--chaos-compare=nightly"),
    "--chaos-compare-fail=<METRIC>:<N>": lambda p: session_error(p, "--chaos-compare-fail=dowtime:20%"),
    "--chaos-explore-profile=<name>": lambda p: session_error(p, "--chaos-explore-profile=nightly"),
    "--chaos-replay=<token>": lambda p: session_error(p, "--chaos-replay=sc1.garbage"),
    "RepeatedRun.median('<metric>'), values(), worst()": lambda _: refusal(
        lambda: keys.from_run(SimpleNamespace(downtime=1.0), "dowtime")),
}
#: every case, by the table's row name
CASES: dict[str, Callable[[Any], str | None]] = {**CALL, **RUNTIME, **SESSION}


# -- the table ---------------------------------------------------------------------------------------------------
def table() -> dict[str, str]:
    """docs/names.md's first table (the one headed ``| name |``): the name (first column, backticks taken off) ->
    the refusal (last column, the text of its ``` `` ... `` ``` code span). Later tables (the measured one) are not
    rows of it."""
    rows: dict[str, str] = {}
    inside = False
    for line in DOC.read_text().splitlines():
        if line.startswith("| name |"):
            inside = True
        elif inside and not line.startswith("|"):
            break
        if not inside:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if not line.startswith("|") or len(cells) < 4 or set(cells[0]) <= {"-", " ", ":"} or cells[0] == "name":
            continue
        said = re.fullmatch(r"``\s?(.*?)\s?``", cells[-1])
        rows[cells[0].replace("`", "").strip()] = said.group(1) if said else cells[-1]
    return rows


def matches(documented: str, actual: str) -> bool:
    """Whether ``actual`` is the documented refusal: its parts between ``…`` in order."""
    at = 0
    for part in documented.split("…"):
        found = actual.find(part.strip(), at)
        if found < 0:
            return False
        at = found + len(part.strip())
    return True


def test_every_row_of_the_table_has_a_case_and_every_case_a_row():
    rows = set(table())
    assert rows, f"no table found in {DOC}"
    assert not rows - set(CASES) - ELSEWHERE, ("rows of docs/names.md without a case here: "
                                                f"{sorted(rows - set(CASES) - ELSEWHERE)}")
    assert not set(CASES) - rows, f"cases without a row in docs/names.md: {sorted(set(CASES) - rows)}"
    assert ELSEWHERE <= rows, "the rows checked elsewhere are listed in the table too"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_typo_of_each_row_is_refused_as_the_table_says(name: str, pytester: pytest.Pytester) -> None:
    actual = CASES[name](pytester)
    assert actual, f"{name}: no refusal"
    assert "\n" not in actual, f"{name}: the refusal is not one line: {actual!r}"
    documented = table()[name]
    assert matches(documented, actual), f"{name}:\n  the table says: {documented}\n  the plugin says: {actual}"


def test_the_marks_and_options_of_a_correct_session_pass(pytester: pytest.Pytester) -> None:
    """The other way: a mark of the user's own (registered or not, even one near a fault's name when registered),
    every plugin mark spelt right, options at their edges, and gates on metrics a run's JSON has start the
    session once a baseline is saved (before, the gates cannot be checked: refused at start)."""
    pytester.makeini("[pytest]\nmarkers =\n    pauses: the user's own mark\nstreamchaos_connect_port = 0\n")
    pytester.makepyfile(marked("slow", "pauses", "chaos(repeat=2, ha=False)", "kill_worker(after=30)",
                               "sla(max_downtime=15, min_reliability=0.99, over='median')"))
    args = ("-p", "no:cacheprovider", "--co", "--chaos-kafka-port=9092",
            "--chaos-compare-fail=latency.p99:0.5,checks.lost.numbers.lost:0")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--chaos-compare-fail (compares with the latest baseline): no baseline saved in" in result.stderr.str()
    pytester.mkdir(".chaos")
    (pytester.path / ".chaos" / "0001_base.json").write_text('{"tests": []}')
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
