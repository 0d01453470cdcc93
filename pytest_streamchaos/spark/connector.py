"""Spark's own Kafka connector for the user's job: resolved once, given as ``spark.jars``; pins replaced.

``format("kafka")`` in a job runs on ``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark version>`` of
the installed pyspark (its Scala line read from the Scala library it ships), resolved once per machine
into the plugin's cache (:mod:`pytest_streamchaos.machine.artifacts`, one folder per coordinate, so two
Spark lines never share one) and passed to every job as ``spark.jars`` (absolute paths: nothing is
resolved when a job starts).

**A pyspark whose own connector is not published** (pyspark 3.5.9: ``spark-sql-kafka-0-10_2.12`` stops at
3.5.7; a new release can also come out before its connector) runs on the newest published connector of
the same Spark line and Scala version -- what Spark's compatibility promise within a line covers --,
saying so in one line (:attr:`Choice.note`: when it is resolved, and in every run's warnings). The
published versions come from the repository's ``maven-metadata.xml``, cached for a day
(:func:`~pytest_streamchaos.machine.artifacts.published_versions`); only a line with no connector at all
fails, naming the lines that have one (:func:`choose`).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.machine import artifacts

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


GROUP = "org.apache.spark"


def artifact(scala: str) -> str:
    """The connector's artifact name for a Scala binary version."""
    return f"spark-sql-kafka-0-10_{scala}"


def _release(version: str) -> tuple[int, ...] | None:
    """``(3, 5, 7)`` of a release version; None for a pre-release (``4.2.0-preview1``) or anything else."""
    parts = version.split(".")
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def choose(installed: str, scala: str, published: Sequence[str]) -> str:
    """The connector version for pyspark ``installed``: its own when published, else the newest
    published release of the same Spark line (major.minor) not newer than it (else the newest of the
    line). :class:`~pytest_streamchaos.machine.artifacts.ResolutionError` naming the versions that do work
    when the line has none."""
    if installed in published:
        return installed
    mine = _release(installed)
    releases = sorted(r for r in map(_release, published) if r is not None)
    same = [r for r in releases if mine is not None and r[:2] == mine[:2]]
    if same and mine is not None:
        older = [r for r in same if r <= mine]
        return ".".join(map(str, (older or same)[-1]))
    newest: dict[tuple[int, ...], tuple[int, ...]] = {}
    for r in releases:
        newest[r[:2]] = r
    working = [".".join(map(str, r)) for r in sorted(newest.values(), reverse=True)[:4]]
    raise artifacts.ResolutionError(
        f"Spark's Kafka connector for pyspark {installed} ({GROUP}:{artifact(scala)}:{installed}) is not on "
        f"{artifacts.maven_repo()}, nor any release of its Spark line {'.'.join(installed.split('.')[:2])} for "
        f"Scala {scala} (published, the newest of each line: {', '.join(working) or 'none'}). Fix: install a "
        f"pyspark of a line that has one, e.g. pip install 'pyspark=={working[0] if working else DEFAULT}'")


#: the pyspark ./dev installs (docs/spark-versions.md), named when nothing else can be
DEFAULT = "4.2.0"


@dataclass(frozen=True)
class Choice:
    """The connector the installed pyspark's jobs run on."""

    installed: str  #: pyspark's version
    scala: str
    version: str  #: the connector's version: ``installed``, or the newest of its line when that is not published

    @property
    def coordinate(self) -> str:
        return f"{GROUP}:{artifact(self.scala)}:{self.version}"

    @property
    def note(self) -> str | None:
        """One line when the connector is not the installed release's own; None when it is."""
        if self.version == self.installed:
            return None
        line = ".".join(self.installed.split(".")[:2])
        return (f"Spark's Kafka connector {artifact(self.scala)}:{self.installed} (pyspark {self.installed}) is not "
                f"published; the job runs on {self.version}, the newest of Spark {line} for Scala {self.scala}")


def choice(spark_home: Path) -> Choice:
    """Which connector the Spark distribution at ``spark_home`` runs jobs on. Needs no network when the
    installed release's connector is cached, or when the cached list of published versions (refreshed
    daily, :func:`~pytest_streamchaos.machine.artifacts.published_versions`) decides; when the list cannot
    be had at all, the installed release's own (its resolution then says what failed)."""
    installed, scala = spark_version(spark_home), scala_binary(spark_home / "jars")
    own = Choice(installed, scala, installed)
    if artifacts.is_resolved(artifacts.spark_kafka_connector(installed, scala)):
        return own
    published = artifacts.published_versions(GROUP, artifact(scala))
    if published is None:
        return own
    return Choice(installed, scala, choose(installed, scala, published))


def connector(spark_home: Path) -> artifacts.JarSet:
    """The connector jar set the Spark distribution at ``spark_home`` runs jobs on (:func:`choice`),
    minus what the distribution ships."""
    jars = spark_home / "jars"
    chosen = choice(spark_home)
    return artifacts.spark_kafka_connector(chosen.version, chosen.scala, sorted(artifacts.artifacts_in(jars)))


def connector_jars(spark_home: Path, progress: Callable[[str], None] | None = None,
                   java: str | None = None, announce: bool = True) -> list[Path]:
    """The connector's jars, resolved on first use (with one line when it is not the installed release's
    own, :attr:`Choice.note`). A failed resolution names the coordinate and the fix."""
    chosen = choice(spark_home)
    jar_set = connector(spark_home)
    if chosen.note and not artifacts.is_resolved(jar_set):
        (progress or artifacts.stderr)(f"pytest-streamchaos: {chosen.note}")
    try:
        return artifacts.resolve(jar_set, progress, java=java, announce=announce)
    except artifacts.ResolutionError as exc:
        raise artifacts.ResolutionError(
            f"{exc}\nSpark's Kafka connector for pyspark {chosen.installed} ({jar_set.coordinates[0]}) is needed for "
            "format(\"kafka\"); if Maven Central does not have it, install a pyspark whose connector is there, e.g. "
            f"pip install 'pyspark=={DEFAULT}' or 'pyspark==3.5.7'") from None


def fallback_note(spark_home: Path) -> str | None:
    """The one line a run's warnings carry when the installed pyspark's own connector is not published
    (:attr:`Choice.note`); None otherwise."""
    return choice(spark_home).note


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
