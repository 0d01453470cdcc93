"""Delta Lake's jars for the user's job (issue 38, point 1): which jobs need them, which release each Spark
line runs on, what a pin of another line gets, and the one-line errors before anything starts (no JVM)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.observe.output_names import check_path_output, output_kind, output_path
from pytest_streamchaos.spark import delta, job_code
from pytest_streamchaos.spark.launcher import JobLauncher, LaunchError, spark_home

JOBS = Path(__file__).resolve().parents[1] / "chaos" / "jobs"
PER_LINE = {"delta-spark_4.2_2.13": ["4.4.0"], "delta-spark_4.1_2.13": ["4.1.0", "4.4.0"],
            "delta-spark_2.12": ["3.2.0", "3.3.2", "3.3.3"]}


def published(artifact: str) -> list[str] | None:
    return PER_LINE.get(artifact)


@pytest.mark.parametrize("spark, scala, python, coordinate", [
    ("4.2.0", "2.13", "4.4.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ("4.2.0", "2.13", None, "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ("4.1.1", "2.13", "4.1.0", "io.delta:delta-spark_4.1_2.13:4.1.0"),  # the release the job imports
    ("3.5.7", "2.12", "3.3.3", "io.delta:delta-spark_2.12:3.3.3"),
    ("3.5.7", "2.12", "3.3.2", "io.delta:delta-spark_2.12:3.3.2"),
    ("3.5.7", "2.12", None, "io.delta:delta-spark_2.12:3.3.3"),
])
def test_each_spark_line_runs_on_its_own_delta(spark: str, scala: str, python: str | None, coordinate: str) -> None:
    chosen = delta.choose(spark, scala, python, published)
    assert chosen.coordinate == coordinate and chosen.note is None


def test_a_python_package_whose_jar_is_not_published_runs_on_the_lines_newest_saying_so() -> None:
    chosen = delta.choose("4.2.0", "2.13", "4.4.1", published)
    assert chosen.coordinate == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert chosen.note is not None and "\n" not in chosen.note
    assert "delta-spark 4.4.1 (pip) has no jar for Spark 4.2" in chosen.note
    assert chosen.note.endswith("Fix: pip install 'delta-spark==4.4.0'")


def test_a_line_without_delta_fails_before_anything_starts_naming_the_lines_that_have_one() -> None:
    with pytest.raises(artifacts.ResolutionError) as err:
        delta.choose("4.3.0", "2.13", None, published)
    msg = str(err.value)
    assert "\n" not in msg and "no Delta Lake release is published for Spark 4.3" in msg
    assert "pip install 'pyspark==4.2.0' 'delta-spark==4.4.0'" in msg


def test_the_installed_line_is_locked_and_resolves_into_its_own_folder() -> None:
    ours = delta.choice(spark_home())
    jars = delta.delta_set(spark_home())
    assert jars.coordinates == (ours.coordinate,) and artifacts.locked(jars) is not None
    assert "scala-library" in jars.skip_artifacts  # what pyspark ships is left out


def test_jobs_that_use_delta_are_found_in_their_code_their_conf_and_their_outputs(tmp_path: Path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text('spark.readStream.format("kafka").load().writeStream.format("parquet").start("/x")\n')
    assert delta.needs_delta([plain], {}) is None
    assert delta.needs_delta([plain], {}, ["delta:/tmp/t"]) == "outputs= names delta:/tmp/t"
    assert delta.needs_delta([plain], {"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0"}) is not None
    for code in ('df.writeStream.format( "delta" ).start(p)', "from delta.tables import DeltaTable",
                 "import delta", "spark.sql('CREATE TABLE t (a INT) USING DELTA')",
                 "configure_spark_with_delta_pip(builder)"):
        job = tmp_path / "job.py"
        job.write_text(f"x = 1\n{code}\n")
        assert delta.needs_delta([job], {}) == "its code uses Delta Lake (job.py:2)", code


def test_the_modules_a_job_imports_from_beside_it_are_its_code(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text("import os\nfrom sinks import write_lake\nimport lake.tables\n")
    (tmp_path / "sinks.py").write_text("def write_lake(df, path):\n    df.write.format('delta').save(path)\n")
    (tmp_path / "lake").mkdir()
    (tmp_path / "lake" / "__init__.py").write_text("")
    (tmp_path / "lake" / "tables.py").write_text("from delta.tables import DeltaTable\n")
    (tmp_path / "unrelated.py").write_text("import delta\n")
    sources = job_code.job_sources(tmp_path / "job.py")
    assert [p.name for p in sources] == ["job.py", "sinks.py", "__init__.py", "tables.py"]
    assert delta.uses_delta(sources) == "sinks.py:2" and delta.imports_delta(sources) == "tables.py:1"


def test_a_job_importing_deltas_python_api_without_the_package_is_told_what_to_install(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    job = tmp_path / "job.py"
    job.write_text("from delta import configure_spark_with_delta_pip\n")
    monkeypatch.setattr(delta.importlib.util, "find_spec", lambda name: None)
    chosen = delta.choose("4.2.0", "2.13", None, published)
    assert delta.python_api_missing([job], chosen) == (
        "the job imports Delta Lake's Python API (job.py:1), but the delta-spark package is not installed here: "
        "pip install 'delta-spark==4.4.0'")


def test_a_delta_pin_of_another_line_gets_one_line_and_leaves_the_packages(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text('builder.config("spark.jars.packages", "io.delta:delta-spark_2.12:3.2.0")\n')
    ours = "io.delta:delta-spark_4.2_2.13:4.4.0"
    pins = delta.find_pins([job], {"spark.jars.packages": f"io.delta:delta-core_2.12:2.4.0,{ours}"})
    assert [(p.coordinate, p.where) for p in pins] == [("io.delta:delta-core_2.12:2.4.0", "spark.jars.packages"),
                                                      (ours, "spark.jars.packages"),
                                                      ("io.delta:delta-spark_2.12:3.2.0", "job.py:1")]
    note = delta.replacement_note(pins, ours)
    assert note is not None and "\n" not in note and ours in note
    assert "io.delta:delta-spark_2.12:3.2.0 (job.py:1)" in note
    assert delta.replacement_note([delta.DeltaPin(ours, "job.py:1")], ours) is None
    assert delta.without_pins(f"com.example:lib:1.0, {ours},io.delta:delta-storage:4.4.0") == "com.example:lib:1.0"


def test_the_launcher_gives_a_delta_job_the_installed_lines_jars_and_deltas_session_conf(tmp_path: Path) -> None:
    ours = delta.choice(spark_home())
    launcher = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "jobs")
    job = launcher.prepare(JOBS / "orders_to_delta_foreach_batch.py",
                           conf={"spark.jars.packages": "io.delta:delta-spark_2.12:3.2.0,com.example:lib:1.0"})
    conf = job.effective_conf
    assert f"{ours.artifact}-{ours.version}.jar" in conf["spark.jars"]
    assert conf["spark.jars.packages"] == "com.example:lib:1.0"
    assert conf["spark.sql.extensions"] == delta.SESSION_CONF["spark.sql.extensions"]
    assert conf[delta.SNAPSHOT_PARTITIONS] == conf["spark.sql.shuffle.partitions"] == "2"
    assert [n for n in job.notes if "io.delta" in n] == [delta.replacement_note(
        delta.find_pins([JOBS / "orders_to_delta_foreach_batch.py"],
                        {"spark.jars.packages": "io.delta:delta-spark_2.12:3.2.0"}), ours.coordinate)]
    plain = launcher.prepare(JOBS / "orders_pinned_spark35.py")
    assert "delta" not in plain.effective_conf["spark.jars"] and "spark.sql.extensions" not in plain.effective_conf


def test_a_delta_job_on_a_line_without_delta_is_refused_in_one_line(tmp_path: Path, monkeypatch) -> None:
    def none(_home: Path) -> delta.DeltaChoice:
        return delta.choose("4.3.0", "2.13", None, published)

    monkeypatch.setattr(delta, "choice", none)
    launcher = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "jobs")
    with pytest.raises(LaunchError, match="no Delta Lake release is published for Spark 4.3"):
        launcher.prepare(JOBS / "orders_to_delta_bronze.py")
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir()), "nothing half-made"


def test_output_names_say_their_kind_and_a_bad_one_is_refused_naming_the_fix() -> None:
    assert [output_kind(n) for n in ("delta:/t", "file:out", "orders", "db:x")] == ["delta", "file", "kafka", "kafka"]
    assert output_path("delta:/tmp/t") == "/tmp/t" and output_path("orders") is None
    with pytest.raises(ValueError, match=r"say how to read input ids from the table's rows"):
        check_path_output("delta:/tmp/t", None)
    with pytest.raises(ValueError, match=r"give the path after 'delta:'"):
        check_path_output("delta:", "txn_id")
