"""A job's own files (files= / py_files=), what its driver died of, the checkpoint locations its code
names, and the connector's dependencies pinned beside a connector (issue 27, items 4, 5, 8). No JVM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_streamchaos.observe.checkpoints import checkpoint_literals, is_checkpoint
from pytest_streamchaos.runner import check_stale_checkpoint, resumed_from_earlier
from pytest_streamchaos.spark import connector, job_files
from pytest_streamchaos.spark.launcher import JobLauncher, LaunchError
from pytest_streamchaos.stack.driver import command
from pytest_streamchaos.stack.driver.job import last_exception

JOBS = Path(__file__).resolve().parents[1] / "integration" / "jobs"


@pytest.fixture
def job_folder(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    (d / "helpers").mkdir(parents=True)
    (d / "job.py").write_text("import helpers\n")
    (d / "rates.csv").write_text("a,b\n1,2\n")
    (d / "util.py").write_text("X = 1\n")
    (d / "helpers" / "__init__.py").write_text("from .more import Y\n")
    (d / "helpers" / "more.py").write_text("Y = 2\n")
    return d


def test_files_resolve_beside_the_job_and_a_missing_one_names_every_place_looked(job_folder: Path, tmp_path: Path):
    other = tmp_path / "tests"
    other.mkdir()
    (other / "extra.csv").write_text("x\n")
    got = job_files.resolve("files", ["rates.csv", "extra.csv"], [job_folder, other])
    assert got == [job_folder / "rates.csv", other / "extra.csv"]
    with pytest.raises(ValueError, match=r"files: 'nope.csv' not found; looked at .*job/nope.csv, .*tests/nope.csv"):
        job_files.resolve("files", ["nope.csv"], [job_folder, other])


def test_files_that_would_share_a_name_or_take_the_launchers_are_refused(job_folder: Path, tmp_path: Path):
    (tmp_path / "rates.csv").write_text("")
    with pytest.raises(ValueError, match="two files would be named 'rates.csv'"):
        job_files.resolve("files", ["rates.csv", tmp_path / "rates.csv"], [job_folder])
    (job_folder / "driver.log").write_text("")
    with pytest.raises(ValueError, match="'driver.log' is a name the plugin uses"):
        job_files.resolve("files", ["driver.log"], [job_folder])
    with pytest.raises(ValueError, match="py_files: .*rates.csv is not a .py, .zip or .egg file"):
        job_files.resolve("py_files", ["rates.csv"], [job_folder])


def test_a_package_folder_in_py_files_is_zipped_so_that_it_imports(job_folder: Path, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    shipped = command.ship_py_files([job_folder / "util.py", job_folder / "helpers"], out)
    assert shipped == [job_folder / "util.py", out / "helpers.zip"]
    code = "import helpers; print(helpers.Y)"
    done = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(out / "helpers.zip")},
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "2"


def test_prepare_copies_files_into_the_drivers_dir_and_ships_them(job_folder: Path, tmp_path: Path):
    launcher = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "jobs")
    job = launcher.prepare(job_folder / "job.py", files=["rates.csv"], py_files=["helpers", "util.py"])
    assert (job.workdir / "rates.csv").read_text() == "a,b\n1,2\n"
    argv = job.argv
    assert argv[argv.index("--files") + 1] == str(job_folder / "rates.csv")
    assert argv[argv.index("--py-files") + 1] == f"{job.workdir / 'helpers.zip'},{job_folder / 'util.py'}"
    assert str(job_folder) in job.env["PYTHONPATH"].split(":"), "the job's folder is on its sys.path"
    assert str(job_folder) in job.effective_conf["spark.executorEnv.PYTHONPATH"].split(":")
    with pytest.raises(LaunchError, match="files: 'missing.csv' not found"):
        launcher.prepare(job_folder / "job.py", files=["missing.csv"])


LOG = """26/11/25 09:00:01 WARN NativeCodeLoader: Unable to load native-hadoop library
Traceback (most recent call last):
  File "/jobs/enrich.py", line 30, in <module>
    regions = load_regions("regions.csv")
  File "/jobs/regions.py", line 8, in load_regions
    with open(path, newline="") as f:
         ^^^^^^^^^^^^^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: 'regions.csv'
26/11/25 09:00:02 INFO ShutdownHookManager: Shutdown hook called
"""


def test_the_last_exception_of_a_driver_log_is_its_own_line():
    assert last_exception(LOG) == "FileNotFoundError: [Errno 2] No such file or directory: 'regions.csv'"
    chained = LOG + ("\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent "
                     "call last):\n  File \"x.py\", line 1, in <module>\npyspark.errors.exceptions.captured."
                     "AnalysisException: [PATH_NOT_FOUND] Path does not exist: file:/w/jobs/x/regions.csv.\n"
                     "JVM stacktrace:\norg.apache.spark.sql.AnalysisException: ...\n")
    assert last_exception(chained).startswith("pyspark.errors.exceptions.captured.AnalysisException: "
                                                        "[PATH_NOT_FOUND]")
    assert last_exception("26/11/25 INFO all fine\n") is None


def test_a_missing_relative_file_beside_the_job_is_named_with_the_files_to_pass(job_folder: Path, tmp_path: Path):
    workdir = tmp_path / "run0" / "jobs" / "job"
    hint = job_files.missing_file_hint("FileNotFoundError: [Errno 2] No such file or directory: 'rates.csv'",
                                       job_folder, workdir)
    assert "files=['rates.csv']" in hint and str(workdir) in hint
    spark = f"AnalysisException: [PATH_NOT_FOUND] Path does not exist: file:{workdir}/rates.csv."
    assert "files=['rates.csv']" in job_files.missing_file_hint(spark, job_folder, workdir)
    elsewhere = job_files.missing_file_hint("FileNotFoundError: [Errno 2] No such file or directory: 'x.csv'",
                                            job_folder, workdir)
    assert "files=[...]" in elsewhere
    assert job_files.missing_file_hint("ValueError: bad", job_folder, workdir) == ""


def test_checkpoint_locations_are_read_from_the_jobs_literals():
    source = '''CHECKPOINT = "/tmp/orders-chk"
q = df.writeStream.option("checkpointLocation", "/tmp/a").start()
q2 = df.writeStream.start(path, checkpointLocation=CHECKPOINT)
spark.conf.set("spark.sql.streaming.checkpointLocation", 'hdfs:///chk')
q3 = df.writeStream.options(**{"checkpointLocation": "rel/chk"})
q4 = df.writeStream.option("checkpointLocation", f"/tmp/{name}")
'''
    assert checkpoint_literals(source, "job.py") == [("/tmp/a", "job.py:2"), ("/tmp/orders-chk", "job.py:3"),
                                                     ("hdfs:///chk", "job.py:4"), ("rel/chk", "job.py:5")]


def test_a_checkpoint_is_a_directory_with_a_query_log(tmp_path: Path):
    assert not is_checkpoint(tmp_path) and not is_checkpoint(tmp_path / "absent")
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "0").write_text("v1\n")
    assert is_checkpoint(tmp_path)


def test_stale_checkpoint_takes_fail_or_clear():
    check_stale_checkpoint("clear")
    check_stale_checkpoint("fail")
    with pytest.raises(ValueError, match=r"stale_checkpoint='keep': use 'fail' .* or 'clear'"):
        check_stale_checkpoint("keep")


def test_the_connectors_own_dependencies_pinned_beside_it_are_taken_out_and_named():
    packages = ("org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.0,org.apache.kafka:kafka-clients:3.5.1,"
                "io.delta:delta-spark_2.13:4.0.0,org.apache.commons:commons-pool2:2.11.1")
    assert connector.without_pins(packages) == "io.delta:delta-spark_2.13:4.0.0"
    note = connector.companions_note(packages)
    assert "org.apache.kafka:kafka-clients:3.5.1, org.apache.commons:commons-pool2:2.11.1 taken out" in note
    assert connector.companions_note("io.delta:delta-spark_2.13:4.0.0") is None


def test_a_query_that_resumed_from_an_earlier_checkpoint_is_told_from_a_fresh_one():
    fresh = [{"id": "q1", "batchId": 0}, {"id": "q1", "batchId": 1}, {"id": "q2", "batchId": 0}]
    assert resumed_from_earlier(fresh, checkpoint_made=100.5, started=100.0) is None
    assert resumed_from_earlier([], checkpoint_made=None, started=100.0) is None
    resumed = [{"id": "q1", "batchId": 0}, {"id": "q2", "batchId": 37}, {"id": "q2", "batchId": 38}]
    assert resumed_from_earlier(resumed, None, 100.0) == "its first micro-batch was batch 37"
    assert resumed_from_earlier([], checkpoint_made=42.0, started=100.0) == "it was written before the job started"
