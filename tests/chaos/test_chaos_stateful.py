"""Stateful jobs on the state stores users run, hidden checkpoints, slow triggers and Spark's stateful
Python APIs (issue 38, points 3 and 4).

The jobs are written as such jobs are (``tests/chaos/jobs``): Kafka in and out with ``format("kafka")``,
Spark's defaults, hard-coded broker and topics, nothing of the test plugin. The click dedupe keeps its
broker, topics and checkpoint in ``config.py`` beside it, the checkpoint path computed at run time: the
run finds it from Spark's own driver log line, with no argument. Its state store is what the deployment
sets: Spark's default (HDFS-backed: ``N.delta``), RocksDB with changelog checkpointing set in the job's
code (``N.changelog``), RocksDB without it (``N.zip``) or with state checkpoint format v2
(``N_<id>.changelog``) passed as spark-submit conf. An executor killed at ``state_commit`` is held by
the checkpoint gate inside the task's rename of its state store's new version, on each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyspark
import pytest
from planted import click

from pytest_streamchaos import JobSetup, NotMeasurable, kill_driver, kill_executor
from pytest_streamchaos.runner import RunError

JOBS = Path(__file__).parent / "jobs"
DEDUPE = str(JOBS / "click_dedupe" / "dedupe_clicks.py")
DEDUPE_ROCKSDB = str(JOBS / "click_dedupe" / "dedupe_clicks_rocksdb.py")
#: where config.py puts the dedupe jobs' checkpoints (computed there at run time)
LAKE_ROOT = Path("/tmp/streamchaos-test-clicks-lake-root")
READINGS = str(JOBS / "readings_every_30s.py")
NUMBERED = {"pandas_state": str(JOBS / "clicks_numbered_pandas_state.py"),
            "tws": str(JOBS / "clicks_numbered_tws.py")}
#: what the other jobs hard-code under /tmp
HARDCODED = (LAKE_ROOT, Path("/tmp/streamchaos-test-readings-30s-chk"),
             Path("/tmp/streamchaos-test-clicks-numbered-pandas-chk"),
             Path("/tmp/streamchaos-test-clicks-numbered-tws-chk"))
ROCKSDB = {"spark.sql.streaming.stateStore.providerClass":
           "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}


def spark_4() -> bool:
    return int(pyspark.__version__.split(".")[0]) >= 4


@pytest.fixture(autouse=True)
def hardcoded_paths():
    for p in HARDCODED:
        shutil.rmtree(p, ignore_errors=True)
    yield
    for p in HARDCODED:
        shutil.rmtree(p, ignore_errors=True)


def dedupe(chaos, job: str, conf: dict[str, str] | None = None):
    """The dedupe job under the test's kill; no duration: the load lasts until its recovery is settled."""
    return chaos.run(job, rate=100, guarantee="at-least-once", kafka_port=9092, inputs={"clicks": click},
                     outputs={"unique-clicks": "key"}, setup=JobSetup(conf=conf or {}))


def assert_held_in_the_state_commit(run, name: str, suffix: str) -> None:
    """The kill landed in a task committing its state store's next version: the gate held an executor's
    task thread before renaming ``<version><suffix>`` into the checkpoint the job's config.py computed."""
    assert run.checkpoint == str(LAKE_ROOT / "_checkpoints" / name), run.checkpoint
    # found when the query started: no wait for its starting offsets, no drain asking for the path
    assert not [w for w in run.warnings if "starting offsets" in w or "checkpoint was not found" in w], run.warnings
    started = next(e.t for e in run.timeline if e.kind == "query_started")
    fixed = next(e.t for e in run.timeline if e.kind == "starting_offsets_fixed")
    assert fixed - started < 10, "the starting offsets were read in the checkpoint found from Spark's log line"
    (fault,) = run.faults
    assert fault.hit and fault.aim.phase == "state_commit", fault.aim
    (held,) = [e for e in run.history.trace.timeline if e.kind == "checkpoint_held"]
    d = held.detail
    assert d["log"] == "state" and d["when"] == "before" and d["batch"] == fault.aim.batch + 1, d
    assert d["thread"].startswith(("Executor_task", "ChecksumCheckpo")), d  # v2: the pool the task waits for
    assert d["path"].startswith(f"{run.checkpoint}/state/") and d["path"].endswith(suffix), d
    assert Path(d["path"]).exists(), "the task's retry committed the version the killed task did not"
    assert run.lost == 0 and run.incorrect == 0  # at-least-once: the retried task's records are produced again
    assert fault.recovered, fault


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos(backend="local")  # localhost:9092 in the job's config
@kill_executor(when="state_commit", after=6)
def test_an_executor_killed_committing_rocksdb_changelog_state_in_a_job_whose_config_builds_its_checkpoint(chaos):
    run = dedupe(chaos, DEDUPE_ROCKSDB)
    print(run.describe())
    assert_held_in_the_state_commit(run, "dedupe-clicks-rocksdb", ".changelog")
    assert run.state_store.provider.endswith("RocksDBStateStoreProvider")


STORES = {
    "hdfs_backed": ({}, ".delta"),
    "rocksdb": ({**ROCKSDB, "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "false"}, ".zip"),
    "rocksdb_v2": ({**ROCKSDB, "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
                    "spark.sql.streaming.stateStore.checkpointFormatVersion": "2"}, ".changelog"),
}


# slow (-m slow): the state_commit moment on RocksDB with changelog checkpointing, as the test above (slow too)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_executor(when="state_commit", after=6)
@pytest.mark.parametrize("store", list(STORES))
def test_an_executor_killed_committing_state_on_every_state_store(chaos, store):
    conf, suffix = STORES[store]
    if store == "rocksdb_v2" and not spark_4():
        pytest.skip("state checkpoint format v2 is Spark 4's")
    run = dedupe(chaos, DEDUPE, conf)
    print(run.describe())
    assert_held_in_the_state_commit(run, "dedupe-clicks", suffix)
    if store == "rocksdb_v2":
        held = next(e for e in run.history.trace.timeline if e.kind == "checkpoint_held")
        assert "_" in Path(held.detail["path"]).name, "format v2 names a version V_<unique id>"


def reading(rec) -> dict:
    return {"readingId": str(rec.id), "sensor": rec.key, "celsius": round(rec.rng.uniform(15, 30), 1)}


# slow (-m slow): a 30 s trigger's run lasts about four minutes; the analysis is unit-tested on synthetic
# traces (tests/unit/test_slow_trigger.py)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_driver(after=20, restart_after=0)
def test_a_driver_kill_on_a_30s_trigger_is_not_measurable_never_masked(chaos):
    run = chaos.run(READINGS, rate=20, duration=40, guarantee="at-least-once", kafka_port=9092,
                    inputs={"readings": reading}, outputs={"readings-warehouse": "key"})
    text = run.describe()
    print(text)
    (fault,) = run.faults
    assert run.metrics.cycle == pytest.approx(30.0, abs=3.0), "the job's pace, from Spark's progress"
    assert not run.measurable and fault.verdict == "unknown" and "masked" not in text
    assert "recovery not measurable" in text and "micro-batches come every 3" in text
    with pytest.raises(NotMeasurable, match="downtime was not measured"):
        assert run.downtime < 60
    assert run.driver_launches == 2 and fault.first_output_after is not None  # it did restart
    assert run.lost == 0 and run.incorrect == 0


# slow (-m slow) both: transformWithStateInPandas (it needs protobuf, which the set-up installs) and
# applyInPandasWithState
@pytest.mark.chaos(backend="local")
@pytest.mark.parametrize("api", [pytest.param(a, marks=pytest.mark.slow) for a in ("pandas_state", "tws")])
def test_the_stateful_python_apis_run_after_the_readme_setup(chaos, api):
    if api == "tws" and not spark_4():
        pytest.skip("transformWithStateInPandas is Spark 4's")
    run = chaos.run(NUMBERED[api], rate=100, duration=10, guarantee="exactly-once", kafka_port=9092,
                    inputs={"clicks": click}, outputs={"clicks-numbered": "key"})
    print(run.describe())
    assert run.expected > 500 and run.lost == 0 and run.duplicates == 0


# slow (-m slow): the error's extraction is unit-tested on this job's real log (tests/unit/test_worker_crash.py)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
def test_a_python_worker_that_crashes_shows_its_own_import_error(chaos, tmp_path):
    if not spark_4():
        pytest.skip("transformWithStateInPandas is Spark 4's")
    # the job's Python without protobuf, as on a machine set up without it: a "google" package that has none
    (tmp_path / "no-protobuf" / "google").mkdir(parents=True)
    (tmp_path / "no-protobuf" / "google" / "__init__.py").write_text("")
    with pytest.raises(RunError) as failed:
        chaos.run(NUMBERED["tws"], rate=100, duration=10, kafka_port=9092, inputs={"clicks": click},
                  outputs={"clicks-numbered": "key"}, setup=JobSetup(env={"PYTHONPATH": str(tmp_path / "no-protobuf")}))
    first = str(failed.value).splitlines()[0]
    print(first)
    assert "a Python worker crashed with ModuleNotFoundError: No module named 'google.protobuf'" in first
    assert "driver worker exited unexpectedly (crashed)" in first and "fix: install protobuf" in first
    log = Path(str(failed.value).split("--- job log (clicks_numbered_tws: ", 1)[1].split(") tail ---")[0])
    assert log.is_file() and "No module named 'google.protobuf'" in log.read_text(), "the full log is kept"
