"""What ``spark-submit`` is run with: the job's directory (its event logs, Spark's scratch space, the
driver's log4j2 configuration and its staged files), the environment and the command line."""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.machine import cds

#: names the launcher itself makes in the driver's working directory (a job file may not take one)
RESERVED = ("eventlog", "local", "log4j2.properties", "driver.log", "connect-server.log")

# Spark's INFO output per micro-batch is large; keep WARN, plus the lines that say what the cluster did
# with the application (its id, executors added/removed).
LOG4J2 = read_fixture("spark", "log4j2.properties")


class JobDirs(NamedTuple):
    """A job's directory and what :func:`make_dirs` makes in it."""

    job: Path
    event: Path  # the event logs
    local: Path  # spark.local.dir and the JVMs' java.io.tmpdir
    log4j: Path  # log4j2.properties


def make_dirs(workdir: Path, name: str) -> JobDirs:
    """A fresh directory for job ``name`` under ``workdir`` (``name``, ``name-2`` ...) with its event log and
    Spark scratch directories and its log4j2 configuration (by -D, not on the class path: see cds.conf_dir)."""
    job = _fresh_dir(workdir, name)
    (job / "eventlog").mkdir()
    (job / "local").mkdir()
    (job / "log4j2.properties").write_text(LOG4J2)
    return JobDirs(job=job, event=job / "eventlog", local=job / "local", log4j=job / "log4j2.properties")


def _fresh_dir(workdir: Path, name: str) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    for i in range(1, 1000):
        d = workdir / (name if i == 1 else f"{name}-{i}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise LaunchError(f"too many jobs named {name!r} in {workdir}")


def stage_files(files: Sequence[Path], workdir: Path) -> None:
    """Copy the job's data files (or folders) into the driver's working directory, under their own names."""
    for f in files:
        if f.is_dir():
            shutil.copytree(f, workdir / f.name)
        else:
            shutil.copy2(f, workdir / f.name)


def ship_py_files(py_files: Sequence[Path], workdir: Path) -> list[Path]:
    """What ``--py-files`` gets: each file as it is, each folder (a package) zipped into ``workdir``
    so that ``import <folder name>`` works on the driver and the executors."""
    out = []
    for p in py_files:
        if not p.is_dir():
            out.append(p)
            continue
        archive = workdir / f"{p.name}.zip"
        with zipfile.ZipFile(archive, "w") as z:
            for f in sorted(p.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts:
                    z.write(f, Path(p.name) / f.relative_to(p))
        out.append(archive)
    return out


def job_pythonpath(script: Path) -> str:
    """PYTHONPATH for the driver and executors: this package's root (so jobs can import it), the script's
    directory (as spark-submit puts the primary script's folder on the driver's path), then ours."""
    repo = str(Path(__file__).resolve().parents[3])  # the directory that holds pytest_streamchaos/
    return os.pathsep.join(dict.fromkeys(
        p for p in [repo, str(script.parent), os.environ.get("PYTHONPATH", "")] if p))


def child_env(*, home: Path, pythonpath: str, python: str, bind: str, java_home: str | None,
              env: Mapping[str, str]) -> dict[str, str]:
    """spark-submit's environment: ours without what would override the job's Spark settings, plus
    Spark's and Python's settings, ``java_home``, then the job's ``env`` (last wins)."""
    out = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_SUBMIT_ARGS", "PYSPARK_DRIVER_PYTHON_OPTS", "SPARK_CONF_DIR")}
    out.update({
        "SPARK_HOME": str(home),
        "SPARK_CONF_DIR": str(cds.conf_dir()),
        "SPARK_LOCAL_IP": bind,
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        "PYTHONPATH": pythonpath,
        "SPARK_LAUNCHER_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",  # spark-class's helper JVM
        "PYTHONUNBUFFERED": "1",  # so the log shows the job's prints in order with Spark's lines
    })
    if java_home:
        out["JAVA_HOME"] = java_home
    out.update({k: str(v) for k, v in env.items()})
    return out


def submit_argv(*, home: Path, master_url: str, deploy_mode: str, name: str, script: Path,
                effective: Mapping[str, str], py_files: Sequence[Path], files: Sequence[Path],
                args: Sequence[str]) -> list[str]:
    """The spark-submit command line: master, deploy mode, name, ``--py-files``, ``--files``, every
    conf entry, then the script and its arguments."""
    argv = [str(home / "bin" / "spark-submit"), "--master", master_url, "--deploy-mode", deploy_mode, "--name", name]
    if py_files:
        argv += ["--py-files", ",".join(str(Path(p).resolve()) for p in py_files)]
    if files:
        argv += ["--files", ",".join(str(f) for f in files)]
    for k, v in effective.items():
        argv += ["--conf", f"{k}={v}"]
    return [*argv, str(script), *map(str, args)]
