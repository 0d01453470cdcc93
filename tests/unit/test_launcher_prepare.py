"""JobLauncher.prepare: the command, conf and environment it builds, and its early errors (no JVM)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_streamchaos.job.config import JobConfig, job_config
from pytest_streamchaos.spark.launcher import DEFAULT_CONF, JobLauncher, LaunchError

JOBS = Path(__file__).resolve().parents[1] / "integration" / "jobs"


@pytest.fixture
def launcher(tmp_path: Path) -> JobLauncher:
    return JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "jobs", conf={"spark.cores.max": "1"})


def _conf_args(argv: list[str]) -> dict[str, str]:
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_prepare_builds_client_mode_command(launcher: JobLauncher, tmp_path: Path):
    cfg = JobConfig("127.0.0.1:9092", "in", "out", str(tmp_path / "cp"), 0.5)
    job = launcher.prepare(JOBS / "batch_count.py", config=cfg, env={"EXTRA": "1"},
                           conf={"spark.sql.shuffle.partitions": "3"}, args=["a1"])
    assert job.process is None and not job.alive  # prepared, not started
    argv = job.argv
    assert argv[0].endswith("bin/spark-submit")
    assert argv[argv.index("--master") + 1] == "spark://127.0.0.1:7077"
    assert argv[argv.index("--deploy-mode") + 1] == "client"
    assert argv[-2:] == [str(JOBS / "batch_count.py"), "a1"]
    conf = _conf_args(argv)
    assert conf == job.effective_conf
    # merge order: defaults < launcher conf < job conf
    assert conf["spark.executor.memory"] == DEFAULT_CONF["spark.executor.memory"]
    assert conf["spark.cores.max"] == "1" and conf["spark.sql.shuffle.partitions"] == "3"
    # every driver port pinned, distinct, and everything on 127.0.0.1
    ports = [int(conf[k]) for k in ("spark.driver.port", "spark.driver.blockManager.port", "spark.blockManager.port")]
    assert len(set(ports)) == 3 and all(p > 1024 for p in ports)
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false" and "spark.ui.port" not in conf
    assert conf["spark.eventLog.dir"] == job.event_log_dir.as_uri() and job.event_log_dir.is_dir()
    assert conf["spark.eventLog.compress"] == "false"
    env = job.env
    assert job_config(env) == cfg  # the STREAMCHAOS_* contract round-trips
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    repo = str(Path(__file__).resolve().parents[2])
    assert repo in env["PYTHONPATH"].split(":") and env["EXTRA"] == "1"
    assert env["SPARK_HOME"] == str(Path(argv[0]).parents[1])


def test_ui_enabled_gets_a_pinned_port(launcher: JobLauncher):
    job = launcher.prepare(JOBS / "batch_count.py", conf={"spark.ui.enabled": "true"})
    assert int(job.effective_conf["spark.ui.port"]) > 1024


def test_two_jobs_get_their_own_directories_and_ports(launcher: JobLauncher):
    a = launcher.prepare(JOBS / "batch_count.py")
    b = launcher.prepare(JOBS / "batch_count.py")
    assert a.workdir != b.workdir
    assert a.effective_conf["spark.driver.port"] != b.effective_conf["spark.driver.port"]


def test_missing_script_is_refused_at_once(launcher: JobLauncher, tmp_path: Path):
    with pytest.raises(LaunchError, match="does not exist"):
        launcher.prepare(tmp_path / "nope.py")
    assert launcher.jobs == []


def test_cluster_mode_for_python_names_the_alternative(launcher: JobLauncher):
    with pytest.raises(LaunchError) as err:
        launcher.prepare(JOBS / "batch_count.py", deploy_mode="cluster")
    msg = str(err.value)
    assert "not supported for python applications on standalone clusters" in msg
    assert "deploy_mode='client'" in msg and "restart()" in msg


def test_bad_master_url(tmp_path: Path):
    with pytest.raises(LaunchError, match="spark://"):
        JobLauncher.for_master("127.0.0.1:7077", tmp_path)


def test_missing_java_is_named(tmp_path: Path):
    launcher = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path, java_home=str(tmp_path / "no-jdk"))
    with pytest.raises(LaunchError, match="JAVA_HOME"):
        launcher.prepare(JOBS / "batch_count.py")
    assert not (tmp_path / "batch_count").exists()  # nothing half-made


def _java_opts(job) -> list[str]:
    return [job.effective_conf[f"spark.{who}.extraJavaOptions"] for who in ("driver", "executor")]


def test_quick_jit_runs_the_job_jvms_on_c1_unless_the_job_chose_its_tiering(tmp_path: Path):
    quick = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "q")
    assert all(o.endswith("-XX:TieredStopAtLevel=1") for o in _java_opts(quick.prepare(JOBS / "batch_count.py")))
    own = quick.prepare(JOBS / "batch_count.py", conf={"spark.executor.extraJavaOptions": "-XX:-TieredCompilation"})
    driver, executor = _java_opts(own)
    assert "-XX:TieredStopAtLevel=1" in driver
    assert executor.startswith("-XX:-TieredCompilation") and "TieredStopAtLevel" not in executor
    full = JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path / "f", jit="full")
    assert not any("Tiered" in o for o in _java_opts(full.prepare(JOBS / "batch_count.py")))


def test_unknown_jit_mode_is_refused(tmp_path: Path):
    with pytest.raises(LaunchError, match=r"jit='c2': use one of \('quick', 'full'\)"):
        JobLauncher.for_master("spark://127.0.0.1:7077", tmp_path, jit="c2")
