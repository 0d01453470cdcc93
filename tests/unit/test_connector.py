"""Spark's Kafka connector per Spark line: which pins just run, which get the one-line note, and what the
launcher passes (no JVM; the installed pyspark's connector is resolved once per machine, then cached)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.spark import connector
from pytest_streamchaos.spark.launcher import JobLauncher, spark_home

SPARK35 = "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"
SPARK4 = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
PIN_3_5_0 = "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0"


def test_line_is_scala_binary_and_spark_major_minor() -> None:
    assert connector.line(PIN_3_5_0) == connector.line(SPARK35) == ("2.12", "3.5")
    assert connector.line(SPARK4) == ("2.13", "4.2")
    assert connector.line("org.apache.spark:spark-sql-kafka-0-10_2.13:3.5.0") == ("2.13", "3.5")
    assert connector.line("com.example:lib:1.0") is None


def _pin(coordinate: str, where: str = "job.py:3") -> connector.ConnectorPin:
    scala, version = coordinate.rsplit("_", 1)[1].split(":")
    return connector.ConnectorPin(coordinate, scala, version, where)


@pytest.mark.parametrize("ours", [SPARK35, "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0"])
def test_a_pin_of_the_installed_line_just_runs(ours: str) -> None:
    """Another patch release of the same line (3.5.0 under 3.5.7), or the very coordinate: no note."""
    assert connector.replacement_note([_pin(PIN_3_5_0)], ours) is None


def test_a_pin_of_another_line_gets_one_line_naming_both() -> None:
    note = connector.replacement_note([_pin(PIN_3_5_0), _pin(SPARK4, "spark.jars.packages")], SPARK4)
    assert note is not None and "\n" not in note
    assert f"the job pins {PIN_3_5_0} (job.py:3);" in note
    assert note.endswith(f"uses Spark's Kafka connector {SPARK4} instead (a connector of another Spark or Scala "
                         "line cannot load here)")
    # Scala line alone differs: still another line
    assert connector.replacement_note([_pin("org.apache.spark:spark-sql-kafka-0-10_2.13:3.5.7")], SPARK35)


def test_pins_are_found_in_conf_and_in_the_jobs_code(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(f'spark = SparkSession.builder.config("spark.jars.packages", "{PIN_3_5_0}").getOrCreate()\n')
    pins = connector.find_pins(script, {"spark.jars.packages": f"com.example:lib:1.0,{SPARK4}"})
    assert [(p.coordinate, p.where) for p in pins] == [(SPARK4, "spark.jars.packages"), (PIN_3_5_0, "job.py:1")]
    assert connector.without_pins(f"com.example:lib:1.0, {SPARK4}") == "com.example:lib:1.0"


def test_scala_line_is_read_from_the_scala_library_pyspark_ships(tmp_path: Path) -> None:
    (tmp_path / "scala-library-2.12.18.jar").touch()
    assert connector.scala_binary(tmp_path) == "2.12"
    with pytest.raises(artifacts.ResolutionError, match="no scala-library"):
        connector.scala_binary(tmp_path / "missing")


def test_each_line_resolves_into_its_own_cache_folder_without_what_pyspark_ships() -> None:
    a = artifacts.spark_kafka_connector("3.5.7", "2.12", ["kafka-clients"])
    b = artifacts.spark_kafka_connector("4.2.0", "2.13")
    assert a.folder() != b.folder() and a.coordinates == (SPARK35,)
    assert a.skip_artifacts == {"kafka-clients"}


def test_the_launcher_gives_the_installed_lines_connector_and_drops_conf_pins(tmp_path: Path) -> None:
    ours = connector.connector(spark_home()).coordinates[0]
    jobs = Path(__file__).resolve().parents[1] / "chaos" / "jobs"
    launcher = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "jobs")
    job = launcher.prepare(jobs / "orders_pinned_spark35.py",
                           conf={"spark.jars.packages": f"{PIN_3_5_0},com.example:lib:1.0"})
    assert job.effective_conf["spark.jars.packages"] == "com.example:lib:1.0"
    jar = ours.split(":", 1)[1].replace(":", "-") + ".jar"
    assert any(Path(p).name == jar for p in job.effective_conf["spark.jars"].split(","))
    same_line = connector.line(PIN_3_5_0) == connector.line(ours)
    assert job.notes == ([] if same_line else [connector.replacement_note(
        connector.find_pins(job.script, {"spark.jars.packages": PIN_3_5_0}), ours)])


def _fake_spark(root: Path, jars: list[str]) -> Path:
    (root / "jars").mkdir(parents=True)
    for name in jars:
        (root / "jars" / name).write_bytes(name.encode())
    return root


def test_the_cds_archives_of_two_spark_lines_never_coincide(tmp_path: Path) -> None:
    """The class-data archives are keyed by Spark's jars: another pyspark maps none of this one's."""
    from pytest_streamchaos.machine import cds

    java = str(tmp_path / "java")
    s35 = _fake_spark(tmp_path / "s35", ["spark-core_2.12-3.5.7.jar", "scala-library-2.12.18.jar"])
    s4 = _fake_spark(tmp_path / "s4", ["spark-core_2.13-4.2.0.jar", "scala-library-2.13.16.jar"])
    for kind in cds.KINDS:
        assert cds.archive_path(kind, java, s35) != cds.archive_path(kind, java, s4)
        assert cds.archive_path(kind, java, s35) == cds.archive_path(kind, java, s35)


# -- a pyspark whose own connector is not published: the newest of its line ------------------------------

SCALA_212 = ["2.4.8", "3.4.4", "3.5.0", "3.5.1", "3.5.3", "3.5.7"]
SCALA_213 = ["3.5.9", "4.0.0-preview1", "4.0.0", "4.0.4", "4.1.0-preview4", "4.1.3", "4.2.0-preview5", "4.2.0"]


@pytest.mark.parametrize(("installed", "scala", "published", "expected"), [
    ("3.5.7", "2.12", SCALA_212, "3.5.7"),  # published: its own
    ("3.5.9", "2.12", SCALA_212, "3.5.7"),  # 3.5.8 / 3.5.9 exist for Scala 2.13 only
    ("3.5.2", "2.12", SCALA_212, "3.5.1"),  # a gap: the newest not newer than it
    ("4.2.1", "2.13", SCALA_213, "4.2.0"),  # a patch release before its connector
    ("4.1.9", "2.13", SCALA_213, "4.1.3"),
    ("4.0.0", "2.13", SCALA_213, "4.0.0"),
    ("3.5.0", "2.12", ["3.5.3", "3.5.7"], "3.5.7"),  # none older in the line: the newest of the line
    ("4.2.0-preview5", "2.13", SCALA_213, "4.2.0-preview5"),  # a pre-release that is published
])
def test_the_connector_is_the_installed_release_or_the_newest_of_its_line(installed, scala, published,
                                                                          expected) -> None:
    assert connector.choose(installed, scala, published) == expected


def test_a_line_without_any_connector_fails_naming_the_lines_that_have_one() -> None:
    with pytest.raises(artifacts.ResolutionError) as err:
        connector.choose("4.3.0", "2.13", SCALA_213)
    msg = str(err.value)
    assert "pyspark 4.3.0 (org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0) is not on" in msg
    assert "nor any release of its Spark line 4.3 for Scala 2.13" in msg
    assert "the newest of each line: 4.2.0, 4.1.3, 4.0.4, 3.5.9)" in msg  # releases only, no previews
    assert msg.endswith("pip install 'pyspark==4.2.0'")
    with pytest.raises(artifacts.ResolutionError, match=r"3\.5\.7, 3\.4\.4, 2\.4\.8\).*pyspark==3\.5\.7'"):
        connector.choose("3.6.0", "2.12", SCALA_212)


def test_the_choice_says_so_in_one_line() -> None:
    assert connector.Choice("3.5.7", "2.12", "3.5.7").note is None
    note = connector.Choice("3.5.9", "2.12", "3.5.7").note
    assert note == ("Spark's Kafka connector spark-sql-kafka-0-10_2.12:3.5.9 (pyspark 3.5.9) is not published; the "
                    "job runs on 3.5.7, the newest of Spark 3.5 for Scala 2.12")
    assert connector.Choice("3.5.9", "2.12", "3.5.7").coordinate == "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"


METADATA = ("<metadata><groupId>org.apache.spark</groupId><artifactId>spark-sql-kafka-0-10_2.12</artifactId>"
            "<versioning><latest>3.5.7</latest><versions>" + "".join(f"<version>{v}</version>" for v in SCALA_212)
            + "</versions></versioning></metadata>")


META_PATH = "org/apache/spark/spark-sql-kafka-0-10_2.12/maven-metadata.xml"


def test_published_versions_are_fetched_once_and_cached(maven_repo) -> None:
    maven_repo.files[META_PATH] = METADATA.encode()
    assert artifacts.published_versions("org.apache.spark", "spark-sql-kafka-0-10_2.12") == SCALA_212
    assert artifacts.published_versions("org.apache.spark", "spark-sql-kafka-0-10_2.12") == SCALA_212
    assert maven_repo.asked == [META_PATH]  # the second answer came from the cache
    maven_repo.stop.set()  # offline: a stale list still answers, and is not asked for again for a while
    assert artifacts.published_versions("org.apache.spark", "spark-sql-kafka-0-10_2.12", max_age=0) == SCALA_212
    assert artifacts.published_versions("org.apache.spark", "spark-sql-kafka-0-10_2.12", max_age=60) == SCALA_212
    assert len(maven_repo.asked) == 2
    assert artifacts.published_versions("org.apache.spark", "spark-sql-kafka-0-10_2.13") is None  # never had


def test_a_pyspark_without_its_connector_runs_on_the_newest_of_its_line(maven_repo, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    maven_repo.files[META_PATH] = METADATA.encode()
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "scala-library-2.12.18.jar").touch()
    (home / "jars" / "kafka-clients-3.4.1.jar").touch()
    monkeypatch.setattr(connector, "spark_version", lambda _home: "3.5.9")
    chosen = connector.choice(home)
    assert (chosen.version, chosen.coordinate) == ("3.5.7", "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7")
    jar_set = connector.connector(home)
    assert jar_set.coordinates == ("org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7",)
    assert "kafka-clients" in jar_set.skip_artifacts  # what pyspark ships is still left out
    assert connector.fallback_note(home) == chosen.note
    monkeypatch.setattr(connector, "spark_version", lambda _home: "3.5.7")
    assert connector.fallback_note(home) is None
