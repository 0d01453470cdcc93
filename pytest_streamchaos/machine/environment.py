"""Preflight checks for the local stack, run before anything is started.

Each failure raises :class:`StackError` with one line naming the problem and the fix.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.errors import StackError
from pytest_streamchaos.machine import commands
from pytest_streamchaos.machine.ports import HOST, port_is_free

MIN_JAVA = 17  #: Spark 3.5 and 4.x run on Java 17 and 21; the Kafka and HDFS servers need 17
JAVA_FIX = ("install a JDK (`apt-get install openjdk-17-jre-headless`), or point JAVA_HOME "
            "or the ini key streamchaos_java_home / --chaos-java-home at one")


@dataclass(frozen=True)
class SparkEnvironment:
    """What the local Spark stack runs with."""

    java: Path  #: the java executable
    java_home: Path  #: its JAVA_HOME
    java_version: int  #: the feature release, e.g. 17
    spark_home: Path  #: the pyspark package directory (it carries bin/ and jars/)

    @property
    def jars(self) -> Path:
        return self.spark_home / "jars"


def find_java(java_home: str = "") -> tuple[Path, Path]:
    """(java executable, JAVA_HOME): the ``java_home`` setting, else ``$JAVA_HOME``, else ``java`` on
    PATH."""
    for origin, home in (("streamchaos_java_home", java_home), ("JAVA_HOME", os.environ.get("JAVA_HOME", ""))):
        if home:
            java = Path(home) / "bin" / "java"
            if not os.access(java, os.X_OK):
                raise StackError(f"java not found: {origin}={home!r} has no executable bin/java; {JAVA_FIX}")
            return java, Path(home)
    on_path = shutil.which("java")
    if not on_path:
        raise StackError(f"java not found (no JAVA_HOME, no java on PATH); {JAVA_FIX}")
    java = Path(on_path).resolve()
    return java, java.parent.parent


def java_version(java: Path) -> int:
    """The feature release of ``java`` (8 for 1.8.x, 17 for 17.0.x)."""
    out = commands.completed([str(java), "-version"], timeout=30,
                             error=lambda why: StackError(f"cannot run {java} -version ({why}); {JAVA_FIX}"))
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if out.returncode != 0 or not m:
        raise StackError(f"{java} -version failed (exit {out.returncode}: {out.stderr.strip()[:200]}); {JAVA_FIX}")
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def find_spark_home() -> Path:
    """The pyspark package directory, which carries Spark's ``bin/spark-class`` and ``jars/``."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.origin:
        raise StackError("pyspark is not installed; fix: pip install 'pyspark==4.2.0' (or 'pyspark==3.5.7')")
    home = Path(spec.origin).parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        raise StackError(f"SPARK_HOME not found: {home} (the pyspark package) has no bin/spark-class or jars/; "
                         "fix: reinstall the full pyspark wheel (pip install --force-reinstall pyspark)")
    return home


def check_pyarrow() -> None:
    """pyarrow is needed by PySpark's pandas/Arrow paths that the plugin's jobs use."""
    if importlib.util.find_spec("pyarrow") is None:
        raise StackError("pyarrow is not installed; fix: pip install 'pyarrow>=14'")


def distutils_problem(spark_version: str, python: tuple[int, int], have_distutils: bool) -> str | None:
    """Why the job's Arrow paths would fail, or None: pyspark 3.5's (``mapInArrow``, ``toPandas``, the
    exactly-once sink) import ``distutils``, which Python 3.12 dropped; setuptools provides it again."""
    if have_distutils or python < (3, 12) or int(spark_version.split(".")[0]) >= 4:
        return None
    return (f"pyspark {spark_version} imports distutils in its Arrow paths, and Python {python[0]}.{python[1]} "
            "has none; fix: pip install setuptools (it provides distutils), or use pyspark 4.x")


def check_distutils() -> None:
    """:func:`distutils_problem` for this interpreter and the installed pyspark."""
    from importlib import metadata

    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return  # find_spark_home names that problem
    problem = distutils_problem(version, sys.version_info[:2], importlib.util.find_spec("distutils") is not None)
    if problem:
        raise StackError(problem)


def check_ports_free(ports: Mapping[str, int], host: str = HOST) -> None:
    """Every requested fixed port must be free on ``host``."""
    busy = {name: port for name, port in ports.items() if not port_is_free(port, host)}
    if busy:
        listing = ", ".join(f"{name}={port}" for name, port in busy.items())
        raise StackError(f"port clash: {listing} already in use on {host}; "
                         "fix: stop whatever listens there or choose another port (or none, to allocate one)")


def check_spark_environment(java_home: str = "", fixed_ports: Mapping[str, int] | None = None) -> SparkEnvironment:
    """All preflight checks of the local Spark stack; returns what it will run with."""
    java, home = find_java(java_home)
    version = java_version(java)
    if version < MIN_JAVA:
        raise StackError(f"{java} is Java {version}, the stack needs Java 17 or 21; {JAVA_FIX}")
    spark_home = find_spark_home()
    check_pyarrow()
    check_distutils()
    check_ports_free(fixed_ports or {})
    return SparkEnvironment(java=java, java_home=home, java_version=version, spark_home=spark_home)
