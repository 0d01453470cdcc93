"""What the harness knows about a run is read as typed attributes of ``ChaosRun`` (``run.driver_launches``,
``run.checkpoint``, ``run.load.ended``, ...), never by key from ``run.meta``: the JSON the report keeps is
written from the same facts and read back nowhere (issue 39).

The runs are synthetic traces with known facts (the stack is not under test)."""

from __future__ import annotations

import re
from pathlib import Path

from synthetic import stateless_trace

from pytest_streamchaos.analysis.delay_class import DelayOutcome
from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.facts import (
    DelayClassChoice,
    GeneratorStats,
    JobFacts,
    LoadFacts,
    RunFacts,
    RunSetup,
    SinkQuery,
    StateStoreFacts,
    Topics,
)
from pytest_streamchaos.history import History

ROOT = Path(__file__).resolve().parents[2]
#: where ``meta`` is read by key: the module that writes it (``RunFacts.meta``), which also reads a saved
#: report's back for a baseline comparison (``RunSetup.from_meta``)
WRITER = "pytest_streamchaos/facts.py"
SCANNED = ("pytest_streamchaos", "tests", "benchmarks")
#: ``meta`` subscripted or asked ``.get``: a fact looked up by its JSON name
READ_BY_KEY = re.compile(r"\bmeta\s*(\[|\.get\()")

STORE = StateStoreFacts("org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
                        ("changelog", "zip"), format_v2=False, description="RocksDB, changelog checkpointing")
TIMEOUT = DelayClassChoice(target="kafka", ms=3000.0, above_timeout=True, setting="spark.network.timeout",
                           before="120s", after="2s", conf={"spark.network.timeout": "2s"})


def known_facts() -> RunFacts:
    return RunFacts(
        setup=RunSetup(test="t.py::test", seed=7, arguments={"rate": 10.0, "supervise": True},
                       spark_conf={"spark.jars": "/cache/a.jar"}, timeouts=[TIMEOUT]),
        job=JobFacts(args=["x"], workdir="/w", log="/w/driver.log", master="spark://m:7077", launches=2,
                     restarts_by_supervisor=1, checkpoint="hdfs://nn/chk", checkpoint_storage="hdfs",
                     state_store=STORE),
        load=LoadFacts(planned_s=40.0, why="no duration given", ended="ended early on recovery", ran_s=22.5),
        generators={"in": GeneratorStats(produced=200, acked=199, failed=1), "in2": GeneratorStats(produced=5)},
        sinks=[SinkQuery("q", "id-1", "console")], poisoned_ids=[3, 9], fault_errors=["kill#0: skipped: why"],
        warnings=["careful"], client_samples={}, transaction_markers={})


def known_run() -> ChaosRun:
    history = History(stateless_trace(rate=10, duration=20), topics=Topics("in", "out", "late"), facts=known_facts())
    return ChaosRun.judge(history)


def test_the_runs_facts_are_typed_attributes() -> None:
    run = known_run()
    assert (run.driver_launches, run.driver_restarts_by_supervisor) == (2, 1)
    assert (run.checkpoint, run.checkpoint_storage) == ("hdfs://nn/chk", "hdfs")
    assert run.state_store is STORE and run.state_store.provider.endswith("RocksDBStateStoreProvider")
    assert (run.job_log, run.job_workdir) == ("/w/driver.log", "/w")
    assert run.seed == 7 and run.arguments["supervise"] is True and run.spark_conf["spark.jars"] == "/cache/a.jar"
    assert run.timeouts == [TIMEOUT]
    assert run.topics is not None and (run.topics.input, run.topics.output) == ("in", "out")
    assert run.load is not None and run.load.ran_s == 22.5 and run.load.ended == "ended early on recovery"
    assert run.generator is not None and (run.generator.produced, run.generator.failed) == (200, 1)
    assert set(run.generators) == {"in", "in2"} and run.generators["in2"].produced == 5
    assert [q.kind for q in run.sinks] == ["console"] and run.poisoned_ids == [3, 9]
    assert run.fault_errors == ["kill#0: skipped: why"] and run.warnings == ["careful"]
    assert run.delay_outcomes == [] and all(isinstance(o, DelayOutcome) for o in run.delay_outcomes)


def test_the_reports_meta_is_the_json_of_the_same_facts() -> None:
    """The report's schema is unchanged (docs/report-schema.md): each typed attribute is written under
    its JSON name, the state store with its ``describe`` line."""
    run = known_run()
    assert run.meta.items() >= {
        "driver_launches": 2, "driver_restarts_by_supervisor": 1, "checkpoint": "hdfs://nn/chk",
        "checkpoint_storage": "hdfs", "job_log": "/w/driver.log", "job_workdir": "/w", "seed": 7,
        "run": {"rate": 10.0, "supervise": True}, "spark_conf": {"spark.jars": "/cache/a.jar"},
        "state_store": {"provider": STORE.provider, "files": ["changelog", "zip"], "format_v2": False,
                        "describe": "RocksDB, changelog checkpointing"},
        "load": {"planned_s": 40.0, "why": "no duration given", "ended": "ended early on recovery", "ran_s": 22.5},
        "generator": {"in": GeneratorStats(produced=200, acked=199, failed=1).to_dict(),
                      "in2": GeneratorStats(produced=5).to_dict()},
        "delay_class": [TIMEOUT.to_dict() | {"note": TIMEOUT.describe()}],
        "topics": {"input": "in", "output": "out", "side": "late"}, "poisoned_ids": [3, 9],
        "fault_errors": ["kill#0: skipped: why"], "warnings": ["careful"], "delay_outcomes": [],
    }.items()
    assert "state store: RocksDB, changelog checkpointing" in run.describe()


def test_a_bare_trace_has_the_empty_value_of_each() -> None:
    run = ChaosRun.from_trace(stateless_trace(rate=10, duration=20))
    assert (run.driver_launches, run.driver_restarts_by_supervisor, run.job_log, run.job_workdir) == (0, 0, "", "")
    assert (run.checkpoint, run.state_store, run.seed, run.topics, run.load, run.generator) == (None,) * 6
    assert (dict(run.arguments), dict(run.spark_conf), run.timeouts, run.generators) == ({}, {}, [], {})
    assert (run.sinks, run.poisoned_ids, run.fault_errors, run.warnings) == ([], [], [], [])
    assert run.meta == {}


def test_a_repeated_run_reads_them_from_its_worst_run() -> None:
    runs = RepeatedRun([known_run(), ChaosRun.from_trace(stateless_trace(rate=10, duration=20))])
    assert runs.driver_launches == runs.worst_run.driver_launches and runs.checkpoint == runs.worst_run.checkpoint


def reads_by_key(roots: tuple[Path, ...], allowed: set[Path]) -> list[str]:
    """``path:line: text`` of every line under ``roots`` (Python files) that reads ``meta`` by key."""
    hits = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path in allowed:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if READ_BY_KEY.search(line):
                    hits.append(f"{path.relative_to(root.parent)}:{n}: {line.strip()}")
    return hits


def test_no_code_reads_meta_by_key_outside_the_module_that_writes_it() -> None:
    hits = reads_by_key(tuple(ROOT / d for d in SCANNED), {ROOT / WRITER})
    assert not hits, ("read the run's typed attributes (run.driver_launches, run.checkpoint, run.load, ...: "
                      "pytest_streamchaos/analysis/harness_facts.py) or run.facts instead of run.meta by key:\n"
                      + "\n".join(hits))


def test_the_scan_finds_a_read_by_key(tmp_path: Path) -> None:
    """The check can fail: a planted read is found, the writer and a mere mention are not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    subscript, get = "n = run.meta" + '["driver_launches"]', "log = (run.meta" + '.get("job_log"))'
    (pkg / "reader.py").write_text(f"{subscript}\n{get}\n")
    (pkg / "writer.py").write_text("x = meta" + '.get("seed")\n')
    (pkg / "fine.py").write_text("d = run.meta\nmetadata = {}\nmetadata" + '["a"] = 1\n')
    assert reads_by_key((pkg,), {pkg / "writer.py"}) == [f"pkg/reader.py:1: {subscript}", f"pkg/reader.py:2: {get}"]
