"""Spark's own Kafka connector for the user's job: resolved once, given as ``spark.jars``; pins replaced.

``format("kafka")`` in a job runs on ``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark version>`` of
the installed pyspark (its Scala line read from the Scala library it ships), resolved once per machine
into the plugin's cache (:mod:`pytest_streamchaos.stack.artifacts`, one folder per coordinate, so two
Spark lines never share one) and passed to every job as ``spark.jars`` (absolute paths: nothing is
resolved when a job starts).

Jobs often pin a connector themselves, in ``spark.jars.packages`` -- very often
``spark-sql-kafka-0-10_2.12:3.5.0``, the wrong Scala and Spark line for pyspark 4. The plugin's choice:
**the job runs on the connector that matches the installed pyspark.** A pin of the installed *line*
(same Scala binary version, same Spark major.minor: ``_2.12:3.5.0`` under pyspark 3.5.7) just runs,
without a note: a connector of another patch release of one line is what Spark's own compatibility
promise covers, and a warning on every such run would only be noise. A pin of another line gets one
line in the run's warnings saying what was replaced (:func:`replacement_note`); it could not load here.

Where the pin is matters for what the launcher must do. A pin in the conf passed to spark-submit is
taken out of ``spark.jars.packages`` (else spark-submit's Ivy would resolve it at every start, and a
wrong line fails with a class-loading trace mid-run). A pin in the job's code
(``SparkSession.builder.config("spark.jars.packages", ...)``) has no effect under spark-submit, which
resolves packages before the job's Python runs and hands it its running JVM: verified with pyspark 3.5.7
and 4.2.0 (no Ivy output, no ``~/.ivy2*``, the pinned classes not loadable unless ``spark.jars`` brings
them; ``tests/chaos/test_chaos_spark_lines.py`` checks the driver's log on every run), so it is only
reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.stack import artifacts

#: a Kafka connector coordinate as jobs write it (group:artifact_scala:version)
PIN = re.compile(r"org\.apache\.spark:spark-sql-kafka-0-10_(?P<scala>2\.1[0-9]):(?P<version>[0-9][\w.\-]*)")


@dataclass(frozen=True)
class ConnectorPin:
    """A connector the job asks for, and where."""

    coordinate: str
    scala: str
    version: str
    where: str  #: ``spark.jars.packages`` (conf) or ``<file>:<line>``


def scala_binary(spark_jars: Path) -> str:
    """The Scala binary version (``2.13``) of a Spark distribution, from the Scala library it ships."""
    names = sorted(p.name for p in spark_jars.iterdir()) if spark_jars.is_dir() else []
    found = [n for n in names if n.startswith("scala-library-") and n.endswith(".jar")]
    if not found:
        raise artifacts.ResolutionError(f"no scala-library-*.jar in {spark_jars}: cannot tell pyspark's Scala line; "
                                        "reinstall pyspark (pip install --force-reinstall pyspark)")
    version = found[-1].removeprefix("scala-library-").removesuffix(".jar")
    return ".".join(version.split(".")[:2])


def spark_version(spark_home: Path) -> str:
    """The installed pyspark's Spark version."""
    import pyspark

    return pyspark.__version__


def connector(spark_home: Path) -> artifacts.JarSet:
    """The connector jar set matching the Spark distribution at ``spark_home`` (minus what it ships)."""
    jars = spark_home / "jars"
    return artifacts.spark_kafka_connector(spark_version(spark_home), scala_binary(jars),
                                           sorted(artifacts.artifacts_in(jars)))


def connector_jars(spark_home: Path, progress: Callable[[str], None] | None = None,
                   java: str | None = None) -> list[Path]:
    """The connector's jars, resolved on first use. A failed resolution names the coordinate (a pyspark
    release whose connector is not on Maven Central says so, with the fix)."""
    jar_set = connector(spark_home)
    try:
        return artifacts.resolve(jar_set, progress, java=java)
    except artifacts.ResolutionError as exc:
        raise artifacts.ResolutionError(
            f"{exc}\nSpark's Kafka connector for pyspark {spark_version(spark_home)} ({jar_set.coordinates[0]}) is "
            "needed for format(\"kafka\"); if Maven Central does not have it (a new pyspark release can come before "
            "its connector is published), install a pyspark whose connector is there, e.g. pip install "
            "'pyspark==4.2.0' or 'pyspark==3.5.7'") from None


def find_pins(script: Path, conf: Mapping[str, str]) -> list[ConnectorPin]:
    """Every Kafka connector the job pins: in ``spark.jars.packages`` of ``conf``, and in the job's
    source (its script), with the line."""
    pins = [ConnectorPin(m.group(0), m["scala"], m["version"], "spark.jars.packages")
            for m in PIN.finditer(conf.get("spark.jars.packages", ""))]
    try:
        lines = script.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for n, line in enumerate(lines, 1):
        pins += [ConnectorPin(m.group(0), m["scala"], m["version"], f"{script.name}:{n}") for m in PIN.finditer(line)]
    return pins


#: what Spark's Kafka connector depends on, pinned beside it in ``spark.jars.packages`` by many jobs: the
#: connector's jar set (given in ``spark.jars``) has each at the version it was built with, and a pin
#: left in the packages would have spark-submit's Ivy resolve it at every driver start (a wait, and with
#: no network a failure) and put a second kafka-clients on the class path
COMPANION = re.compile(r"org\.apache\.kafka:kafka-clients:[\w.\-]+"
                       r"|org\.apache\.spark:spark-token-provider-kafka-0-10_2\.1[0-9]:[\w.\-]+"
                       r"|org\.apache\.commons:commons-pool2:[\w.\-]+")


def without_pins(packages: str) -> str:
    """``spark.jars.packages`` with every Kafka connector coordinate (and :data:`COMPANION`) taken out."""
    return ",".join(p for p in _coordinates(packages) if not PIN.fullmatch(p) and not COMPANION.fullmatch(p))


def _coordinates(packages: str) -> list[str]:
    return [p for p in (x.strip() for x in packages.split(",")) if p]


def companions_note(packages: str) -> str | None:
    """One line on the connector's dependencies taken out of ``spark.jars.packages``; None when none were."""
    dropped = [p for p in _coordinates(packages) if COMPANION.fullmatch(p)]
    if not dropped:
        return None
    return (f"spark.jars.packages: {', '.join(dropped)} taken out: Spark's Kafka connector the run gives the job "
            "brings its own, and resolving them would hold every driver start")


def line(coordinate: str) -> tuple[str, str] | None:
    """The Spark line of a connector coordinate: (Scala binary version, Spark major.minor), e.g.
    ``("2.12", "3.5")``; None for a string that is not a Kafka connector coordinate."""
    m = PIN.fullmatch(coordinate)
    if m is None:
        return None
    return m["scala"], ".".join(m["version"].split(".")[:2])


def replacement_note(pins: list[ConnectorPin], ours: str) -> str | None:
    """One line on what the job pinned of another Spark line and what it runs on instead; None when
    every pin is of the installed line (see the module docstring: those just run)."""
    other = [p for p in pins if line(p.coordinate) != line(ours)]
    if not other:
        return None
    asked = ", ".join(f"{p.coordinate} ({p.where})" for p in other)
    scala, version = ours.rsplit("_", 1)[1].split(":")
    return (f"the job pins {asked}; this pyspark is Spark {version} on Scala {scala}, so the run uses Spark's Kafka "
            f"connector {ours} instead (a connector of another Spark or Scala line cannot load here)")


#: a Kafka client timeout the job sets in its code, e.g. ``.option("kafka.request.timeout.ms", "1500")``
#: or ``{"kafka.request.timeout.ms": 1500}`` (a literal: what the job computes at run time is not seen)
_OPTION = re.compile(r"""["'](kafka\.request\.timeout\.ms|kafka\.default\.api\.timeout\.ms"""
                     r"""|kafkaConsumer\.pollTimeoutMs)["']\s*[,:=]\s*["']?(\d+)""")


def kafka_timeouts(script: Path) -> dict[str, tuple[str, str]]:
    """The Kafka client timeouts the job's script sets as literals: option -> (value in ms, ``file:line``),
    the lowest where it sets one several times (a reader and a writer)."""
    found: dict[str, tuple[str, str]] = {}
    try:
        lines = script.read_text(errors="replace").splitlines()
    except OSError:
        return found
    for n, line in enumerate(lines, 1):
        for m in _OPTION.finditer(line):
            key, value = m.group(1), m.group(2)
            if key not in found or int(value) < int(found[key][0]):
                found[key] = (value, f"{script.name}:{n}")
    return found
