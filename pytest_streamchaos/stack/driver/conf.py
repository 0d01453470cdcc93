"""The Spark conf a driver is started with: the defaults every job gets, its pinned ports and
directories, the JVM options of the driver and its executors, and the Java and SPARK_HOME it runs."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_streamchaos.errors import LaunchError
from pytest_streamchaos.machine import cds
from pytest_streamchaos.machine.ports import HOST, PortRegistry
from pytest_streamchaos.stack.jvm import jvm_tmp_opts

#: Conf every job gets unless the caller overrides it. Small resources for a 2-core machine, quick
#: failure detection (a lost executor is noticed in seconds, not the default 120 s), and what the
#: progress capture needs.
DEFAULT_CONF: dict[str, str] = {
    "spark.executor.memory": "512m",
    "spark.executor.cores": "1",
    "spark.cores.max": "2",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.python.worker.reuse": "true",
    # Failure detection: the driver declares an executor dead after spark.network.timeout without a
    # heartbeat (sent every spark.executor.heartbeatInterval, which must stay well below it).
    "spark.network.timeout": "20s",
    "spark.executor.heartbeatInterval": "2s",
    # How often the driver checks for expired heartbeats; Spark requires it <= spark.network.timeout.
    "spark.network.timeoutInterval": "5s",
    "spark.ui.enabled": "false",
    "spark.eventLog.enabled": "true",
    # Spark 4 defaults to zstd-compressed rolling logs, which cannot be read while written.
    "spark.eventLog.compress": "false",
    "spark.eventLog.rolling.enabled": "false",
    "spark.sql.streaming.metricsEnabled": "false",
    # workers forked with pyarrow, the Kafka client and the plugin's source already imported
    # (job/daemon.py): the first micro-batch after a start or an executor restart is seconds faster
    "spark.python.daemon.module": "pytest_streamchaos.job.daemon",
}

#: C1 only: the JIT mode ``quick`` (docs/architecture.md, "Start-up")
QUICK_JIT = "-XX:TieredStopAtLevel=1"
#: with ``quick``, too: the class path's classes loaded unverified, as Spark's daemons load them (stack/jvm.py). A JVM
#: with no CDS archive (a fresh machine's first run: ``./dev demo``) verifies each of the ~14,000 classes it loads
#: from Spark's and the job's jars, ~12 % of its start-up CPU; an archive's classes were verified when it was made
UNVERIFIED = "-XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
JIT_MODES = ("quick", "full")


def spark_home() -> Path:
    """``$SPARK_HOME`` for spark-submit: the installed ``pyspark`` package directory."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-submit").is_file():
        raise LaunchError(f"{home}/bin/spark-submit not found; reinstall pyspark "
                          "(pip install --force-reinstall pyspark)")
    return home


def java_path(env: Mapping[str, str]) -> str | None:
    """The java binary spark-submit will run in ``env`` (what the CDS archives are keyed by)."""
    java_home = env.get("JAVA_HOME")
    if java_home:
        return os.path.join(java_home, "bin", "java")
    return shutil.which("java", path=env.get("PATH"))


def java_env(java_home: str | None) -> dict[str, str]:
    """The environment spark-submit's java is looked up in (``java_home`` over ``os.environ``);
    :class:`LaunchError` when it has no java."""
    env = dict(os.environ, **({"JAVA_HOME": java_home} if java_home else {}))
    java = java_path(env)
    if java is None or not os.access(java, os.X_OK):
        raise LaunchError("no java found for spark-submit: set JAVA_HOME (or --chaos-java-home) or put java "
                          "on PATH (Java 17 or 21)")
    return env


def job_conf(*, name: str, driver_host: str, ports: PortRegistry, event_dir: Path, local_dir: Path,
             pythonpath: str, python: str) -> dict[str, str]:
    """A job's own conf: its name, a driver bound to ``driver_host`` with pinned ports (allocated here, in
    this order), event log and scratch directories, and the Python it runs."""
    conf = {
        "spark.app.name": name,
        "spark.driver.host": driver_host,
        "spark.driver.bindAddress": driver_host,
        "spark.driver.port": str(ports.free()),
        "spark.driver.blockManager.port": str(ports.free()),
        # Executors start at this port and count up (spark.port.maxRetries) when several share a host.
        "spark.blockManager.port": str(ports.free()),
        "spark.eventLog.dir": event_dir.as_uri(),
        "spark.local.dir": str(local_dir),
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": python,
        "spark.executorEnv.PYTHONPATH": pythonpath,
    }
    if driver_host == HOST:  # executors on this host: loopback too (in a container: their own address)
        conf["spark.executorEnv.SPARK_LOCAL_IP"] = HOST
    return conf


def add_java_options(effective: dict[str, str], *, log4j: Path, local_dir: Path, home: Path, java: str | None,
                     jit: str = "quick") -> None:
    """Complete the driver's and executors' ``extraJavaOptions`` in ``effective``: the driver's log4j2
    configuration (by -D), the JVMs' scratch files in the job's directory (:func:`~..jvm.jvm_tmp_opts`),
    Spark's classes mapped from the machine's CDS archives when they match
    (:mod:`pytest_streamchaos.machine.cds`), and C1 only when ``jit`` is ``quick`` and the job chose no tiering of
    its own (and, ``quick``, the class path's classes unverified: :data:`UNVERIFIED`)."""
    cds_opts = {"spark.driver.extraJavaOptions": cds.java_opts(
                    "driver", java, home, effective.get("spark.driver.extraClassPath", "")) if java else "",
                "spark.executor.extraJavaOptions": cds.java_opts(
                    "executor", java, home, effective.get("spark.executor.extraClassPath", "")) if java else ""}
    effective["spark.driver.extraJavaOptions"] = (f"{effective.get('spark.driver.extraJavaOptions', '')} "
                                                  f"-Dlog4j2.configurationFile={log4j.as_uri()}")
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        own = effective.get(key, "")
        quick = QUICK_JIT if jit == "quick" and "Tiered" not in own else ""
        unverified = UNVERIFIED if jit == "quick" else ""
        effective[key] = " ".join(p for p in (own, jvm_tmp_opts(local_dir), cds_opts[key], unverified, quick) if p)


def with_jars(effective: dict[str, str], jars: Sequence[Path]) -> None:
    """``jars`` first in ``spark.jars`` (on the driver's and every executor's class path)."""
    effective["spark.jars"] = ",".join(p for p in (*map(str, jars), effective.get("spark.jars", "")) if p)
