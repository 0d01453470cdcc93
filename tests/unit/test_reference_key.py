"""The reference's key (``runner/reference_key.py``): everything that decides the job's output on the
reference input changes it -- the job, a module it imports, its files, arguments, conf, environment, the
record factories and what they read, the load, the Spark line, the stack, the plugin -- and nothing else
does (a file beside the job it does not use, the job's folder moved, a test function beside the factory).
A key that cannot hold all that decides the output (a file the job reads but was not given, a module found
nowhere, a factory without source) says why in one line naming the fix. No stack: plain files and specs."""

from __future__ import annotations

import importlib.util
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos.runner import reference_key as rk
from pytest_streamchaos.runner.reference_key import changes, reference_key, stack_part
from pytest_streamchaos.runner.spec import RunInputs, RunSpec
from pytest_streamchaos.usercode import fingerprint

SCALE = 3


def click(rec: Any) -> dict:
    return {"clickId": str(rec.id), "userId": rec.key}


def click_upper(rec: Any) -> dict:
    return {"clickId": str(rec.id), "userId": rec.key.upper()}


def scaled(rec: Any) -> dict:
    return {"n": rec.id * SCALE}


JOB = """\
import os
from helpers import parse
from lake.tables import write
from pyspark.sql import SparkSession

HERE = os.path.dirname(os.path.abspath(__file__))
RATES = os.path.join(HERE, "rates.csv")
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A job as people write one: the script, a helper module, a package, a data file it reads by its path."""
    job = tmp_path / "job"
    (job / "lake").mkdir(parents=True)
    (job / "job.py").write_text(JOB)
    (job / "helpers.py").write_text("def parse(v):\n    return v\n")
    (job / "lake" / "__init__.py").write_text("")
    (job / "lake" / "tables.py").write_text("def write(df):\n    return df\n")
    (job / "rates.csv").write_text("EUR,1.0\n")
    (job / "udfs.py").write_text("def f(x):\n    return x\n")
    return job


def spec_of(job: Path, **kw: Any) -> RunSpec:
    base: dict[str, Any] = dict(
        job=str(job / "job.py"), rate=50.0, duration=20.0, guarantee="at-least-once", partitions=2, key_space=20,
        skew=0.0, record_size=0, late_fraction=0.0, trigger_seconds=1.0, warmup_timeout=60.0, drain_timeout=60.0,
        settle_seconds=5.0, inputs=["clicks"], outputs=["file:/tmp/out"], files=[str(job / "rates.csv")],
        py_files=[str(job / "udfs.py")], conf={"spark.sql.shuffle.partitions": "2"}, env={"MODE": "a"})
    return RunSpec(**{**base, **kw})


def inputs_of(job: Path, factory: Callable[[Any], Any] | None = click) -> RunInputs:
    return RunInputs(script=job / "job.py", planned=[], load_why="", settle_pinned=False, oracle=None,  # type: ignore
                     id_reader=None, params=None, factories={"clicks": factory}, output_ids={}, annotate={})


STACK = {"workers": 2, "worker_cores": 1, "worker_memory": "1g", "kafka_brokers": 3, "backend": "local"}


def key_of(job: Path, spec: RunSpec | None = None, factory: Callable[[Any], Any] | None = click, seed: int = 7,
           stack: dict[str, Any] | None = None, cluster: str = "LocalSparkCluster") -> rk.RefKey:
    return reference_key(spec or spec_of(job), inputs_of(job, factory), seed, stack_part(cluster, stack or STACK))


def edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# changed\n")


#: a change the user makes between sessions -> the words the new key's difference is told in
CHANGES: dict[str, tuple[Callable[[Path], dict[str, Any]], str]] = {
    "the job": (lambda j: edit(j / "job.py") or {}, "the job job.py"),
    "a helper module": (lambda j: edit(j / "helpers.py") or {}, "its module helpers.py"),
    "a module of a package": (lambda j: edit(j / "lake" / "tables.py") or {}, "its module lake/tables.py"),
    "a py_file": (lambda j: edit(j / "udfs.py") or {}, "its module udfs.py"),
    "a data file": (lambda j: edit(j / "rates.csv") or {}, "its file rates.csv"),
    "args": (lambda j: {"spec": {"args": ["--fast"]}}, "its arguments"),
    "a conf value": (lambda j: {"spec": {"conf": {"spark.sql.shuffle.partitions": "4"}}},
                     "conf spark.sql.shuffle.partitions"),
    "an env value": (lambda j: {"spec": {"env": {"MODE": "b"}}}, "env MODE"),
    "the record factory": (lambda j: {"factory": click_upper}, "the record factory of clicks"),
    "the outputs": (lambda j: {"spec": {"outputs": ["file:/tmp/other"]}}, "output file:/tmp/other (new)"),
    "the seed": (lambda j: {"seed": 8}, "seed"),
    "the rate": (lambda j: {"spec": {"rate": 60.0}}, "rate"),
    "the duration": (lambda j: {"spec": {"duration": 30.0}}, "duration"),
    "the partitions": (lambda j: {"spec": {"partitions": 4}}, "partitions"),
    "the keys": (lambda j: {"spec": {"key_space": 7}}, "key_space"),
    "the skew": (lambda j: {"spec": {"skew": 1.2}}, "skew"),
    "the record size": (lambda j: {"spec": {"record_size": 512}}, "record_size"),
    "late records": (lambda j: {"spec": {"late_fraction": 0.1}}, "late_fraction"),
    "the trigger": (lambda j: {"spec": {"trigger_seconds": 2.0}}, "trigger"),
    "the checkpoint storage": (lambda j: {"spec": {"checkpoint": "hdfs"}}, "checkpoint"),
    "kafka_port": (lambda j: {"spec": {"kafka_port": 9092}}, "kafka_port"),
    "the workers": (lambda j: {"stack": {**STACK, "workers": 3}}, "the session's workers: 2 -> 3"),
    "the cluster manager": (lambda j: {"cluster": "ConnectSparkCluster"},
                            "the session's cluster: LocalSparkCluster -> ConnectSparkCluster"),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_thing_that_decides_the_output_changes_the_key_and_is_named(folder: Path, change: str) -> None:
    before = key_of(folder)
    make, words = CHANGES[change]
    given = make(folder)
    spec = replace(spec_of(folder), **given.pop("spec", {}))
    after = key_of(folder, spec, **given)
    assert after.key != before.key and after.why_not is None and before.why_not is None
    assert words in changes(before.parts, after.parts), changes(before.parts, after.parts)


def test_an_upgraded_package_the_job_imports_changes_the_key(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = key_of(folder)
    monkeypatch.setattr(rk, "_version", lambda dist: "9.9.9")
    after = key_of(folder)
    assert after.key != before.key
    [said] = changes(before.parts, after.parts)
    assert said.startswith("the installed pyspark: pyspark==") and said.endswith("-> pyspark==9.9.9")


def test_the_plugin_s_own_record_code_and_version_are_in_the_key(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = key_of(folder)
    assert set(before.parts["plugin"]) == {"version", "workload", "observe", "job", "runner/reference.py"}
    monkeypatch.setattr(rk, "plugin_part", lambda: {**before.parts["plugin"], "workload": "other"})
    assert changes(before.parts, key_of(folder).parts) == ["the plugin's workload"]


def test_a_delta_job_s_key_holds_the_delta_jar_it_runs_on(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (folder / "job.py").write_text(JOB + "\ndf.writeStream.format('delta')\n")
    chosen = {"jar": "io.delta:delta-spark_4.2_2.13:4.4.0"}
    monkeypatch.setattr(rk.delta, "choice", lambda home: type("C", (), {"coordinate": chosen["jar"]})())
    before = key_of(folder)
    assert before.parts["spark"]["delta"] == "io.delta:delta-spark_4.2_2.13:4.4.0"
    chosen["jar"] = "io.delta:delta-spark_4.2_2.13:4.4.1"
    assert "delta: io.delta:delta-spark_4.2_2.13:4.4.0 -> io.delta:delta-spark_4.2_2.13:4.4.1" in changes(
        before.parts, key_of(folder).parts)


def test_what_does_not_decide_the_output_leaves_the_key_alone(folder: Path, tmp_path: Path) -> None:
    before = key_of(folder)
    (folder / "notes.md").write_text("the job's notes")  # beside the job, never named nor imported
    (folder / "unused.py").write_text("x = 1\n")
    (folder / "job.py").touch()  # a new time, the same content
    assert key_of(folder).key == before.key
    moved = shutil.copytree(folder, tmp_path / "elsewhere" / "job")  # another checkout of the same job
    spec = spec_of(moved, conf={"spark.sql.shuffle.partitions": "2"})
    assert key_of(moved, spec).key == before.key
    again = spec_of(folder, env={"MODE": "a"}, conf=dict(reversed(list(spec_of(folder).conf.items()))))
    assert key_of(folder, again).key == before.key


def _module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FACTORIES = """\
import hashlib
import json
import math

import numpy as np

RATE = {rate}

def user(i):
    return f"u{{i % {users}}}"

def retried(rec):
    tag = hashlib.md5(json.dumps([rec.id]).encode()).hexdigest()[:4] + str(math.floor(np.float64(rec.id) / 2))
    return {{"clickId": str(rec.id // 2), "userId": user(rec.id), "tag": tag,
             "at": rec.ts - (rec.id % 2) * 1000 // RATE}}

def test_other():
    assert {other}
"""


def test_a_factory_is_known_by_its_code_and_what_it_reads_not_by_the_test_file_around_it(tmp_path: Path) -> None:
    def made(n: int, rate: int = 100, users: int = 7, other: str = "True") -> str:
        path = tmp_path / f"test_f{n}.py"
        path.write_text(FACTORIES.format(rate=rate, users=users, other=other))
        return fingerprint(_module(path, f"test_f{n}").retried)  # builtins, the stdlib and numpy: by name

    first = made(1)
    assert made(2, other="1 + 1 == 2") == first  # another test in the file changed: the same factory
    assert made(3, rate=200) != first  # the constant it reads changed
    assert made(4, users=9) != first  # the project's function it calls changed
    assert fingerprint(scaled) == fingerprint(scaled) and fingerprint(click) != fingerprint(click_upper)


def test_a_factory_without_source_makes_a_key_that_is_not_kept_and_says_why(folder: Path) -> None:
    anonymous = eval("lambda rec: {'id': rec.id}")  # code made at run time: no source to read
    key = key_of(folder, factory=anonymous)
    assert key.why_not is not None and key.why_not.startswith("the record factory of input 'clicks': <lambda> has "
                                                              "no source to read")


def test_a_file_the_job_reads_but_was_not_given_makes_the_key_unknown_naming_the_fix(folder: Path) -> None:
    key = key_of(folder, spec_of(folder, files=[]))
    assert key.why_not == ("the job's code names rates.csv (job.py:7), which it was not given as files=: its content "
                           "is not in the reference's key; pass setup=JobSetup(files=['rates.csv']) to keep the "
                           "reference")
    assert key_of(folder).why_not is None  # given: its content is in the key


def test_an_absolute_file_the_job_names_makes_the_key_unknown(folder: Path, tmp_path: Path) -> None:
    data = tmp_path / "lookup.json"
    data.write_text("{}")
    (folder / "helpers.py").write_text(f"LOOKUP = {str(data)!r}\n")
    assert key_of(folder).why_not == (f"the job's code names {data} (helpers.py:1), which it was not given as files=: "
                                      f"its content is not in the reference's key; pass setup=JobSetup(files=["
                                      f"{str(data)!r}]) to keep the reference")


def test_a_module_found_nowhere_makes_the_key_unknown_unless_its_import_is_optional(folder: Path) -> None:
    (folder / "helpers.py").write_text("import streamchaos_nowhere_lib\n")
    assert key_of(folder).why_not == (
        "the job imports streamchaos_nowhere_lib (helpers.py:1), found neither beside it nor installed here: what "
        "it runs cannot be told; give it as py_files=[...] or install it")
    (folder / "helpers.py").write_text(textwrap.dedent("""\
        try:
            import streamchaos_nowhere_lib
        except ImportError:
            streamchaos_nowhere_lib = None
        """))
    assert key_of(folder).why_not is None
