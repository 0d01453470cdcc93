"""The Spark Connect server: where its classes come from, and how it is started.

Spark 4's wheel ships the server (``pyspark/jars/spark-connect_2.13-<version>.jar``): nothing to fetch.
Spark 3.5's does not: ``org.apache.spark:spark-connect_2.12:<version>`` comes from Maven Central into the
plugin's cache, once per machine, like the Kafka connector (:mod:`pytest_streamchaos.machine.artifacts`),
minus what pyspark ships. A resolution that fails is a
:class:`~pytest_streamchaos.machine.artifacts.ResolutionError` naming the coordinate and the fix.

The server is a Spark application submitted like ``start-connect-server.sh`` does it: ``spark-submit
--class`` :data:`SERVER_CLASS` with Spark's internal primary resource, bound to 127.0.0.1 on the run's
Connect port (:func:`server_conf`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.steps import Step, spark_home_step

#: the server's main class (what ``sbin/start-connect-server.sh`` submits)
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
#: spark-submit's primary resource for an application whose classes are on Spark's own class path
INTERNAL = "spark-internal"
#: where Spark's Connect server listens by default (what a job's ``sc://localhost`` means)
DEFAULT_PORT = 15002
GROUP = "org.apache.spark"


def artifact(scala: str) -> str:
    return f"spark-connect_{scala}"


def shipped(spark_home: Path) -> Path | None:
    """The server's jar in the pyspark distribution (Spark 4), or None (Spark 3.5)."""
    found = sorted((spark_home / "jars").glob("spark-connect_*.jar"))
    return found[-1] if found else None


def spark_line(spark_home: Path) -> tuple[str, str]:
    """(Spark's version, its Scala binary version) of the distribution, from its ``spark-core`` jar's name."""
    found = sorted((spark_home / "jars").glob("spark-core_*.jar"))
    if not found:
        raise artifacts.ResolutionError(f"no spark-core_*.jar in {spark_home / 'jars'}: cannot tell pyspark's Spark "
                                        "line; reinstall pyspark (pip install --force-reinstall pyspark)")
    scala, _, version = found[-1].name.removeprefix("spark-core_").removesuffix(".jar").partition("-")
    return version, scala


def jar_set(spark_home: Path) -> artifacts.JarSet:
    """The server's jars from Maven Central for a distribution that does not ship them (Spark 3.5): the
    installed release's own (every 3.5 release's is published), minus what pyspark ships."""
    version, scala = spark_line(spark_home)
    coord = f"{GROUP}:{artifact(scala)}:{version}"
    return artifacts.JarSet(f"{artifact(scala)}-{version}", f"Spark Connect's server {coord}", (coord,),
                            artifacts.artifacts_in(spark_home / "jars"))


def is_ready(spark_home: Path) -> bool:
    """Whether the server can start without the network: shipped, or resolved into the cache."""
    return shipped(spark_home) is not None or artifacts.is_resolved(jar_set(spark_home))


def server_jars(spark_home: Path, progress: Callable[[str], None] | None = None, *, java: str | None = None,
                announce: bool = True) -> list[Path]:
    """The jars the server needs besides Spark's own: none when the distribution ships it, else its Maven
    artifact resolved on first use. :class:`~pytest_streamchaos.machine.artifacts.ResolutionError` names the
    coordinate and the fix."""
    if shipped(spark_home) is not None:
        return []
    jars = jar_set(spark_home)
    try:
        return artifacts.resolve(jars, progress, java=java, announce=announce)
    except artifacts.ResolutionError as exc:
        raise artifacts.ResolutionError(
            f"{exc}\nSpark Connect's server for this pyspark ({jars.coordinates[0]}) is not in its wheel (Spark 3.5) "
            "and could not be had from Maven Central: a run on spark='connect' needs it. Fix: let the machine reach "
            "Maven Central once (python -m pytest_streamchaos.prepare --for connect), or install pyspark 4, whose "
            "wheel ships it (pip install 'pyspark==4.2.0')") from None


def server_conf(port: int, host: str) -> dict[str, str]:
    """The server's own conf: its gRPC address, and sessions that outlive a client for as long as Spark's
    defaults keep them (a client's loss leaves its streaming queries running: what Connect promises)."""
    return {"spark.connect.grpc.binding.address": host, "spark.connect.grpc.binding.port": str(port)}


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The Connect managers' step of ``prepare``: the Connect server's jars of the installed Spark line."""
    return {"connect": spark_home_step("Spark Connect's server", is_ready,
                                       lambda home: server_jars(home, line, announce=False))}
