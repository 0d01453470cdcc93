"""Delta Lake for the user's job: the jars of the installed Spark line, resolved once, given as ``spark.jars``.

A job that writes ``format("delta")``, calls ``DeltaTable.forPath(...).merge(...)`` or builds its session
with ``configure_spark_with_delta_pip(builder)`` runs on Delta Lake's jar for the installed pyspark's
Spark line and Scala version, resolved once per machine into the plugin's cache like Spark's Kafka
connector (:mod:`pytest_streamchaos.machine.artifacts`: a lock for each tested line, downloaded in
parallel; offline and fast the second time) and passed with it as ``spark.jars``. Which jobs need it
is read from what they are (:func:`needs_delta`): their code and the local modules it imports
(:func:`.job_code.job_sources`), their conf, a ``delta:`` output. Such a job also gets the two settings a
Delta-enabled cluster has (:data:`SESSION_CONF`: Delta's SQL extension and catalog), unless it sets them itself.

**Which Delta** (:func:`choose`): Delta Lake publishes a jar per Spark line since 4.1
(``io.delta:delta-spark_4.2_2.13``); the run takes the version of the ``delta-spark`` Python package
installed beside pyspark (the one the job's ``from delta import ...`` imports, and the one
``configure_spark_with_delta_pip`` would ask for) when its jar for this line is published, else the
newest published for the line, saying so in one line (pip's newest ``delta-spark`` can be a release
whose jar is not on Maven Central: 4.4.1). Spark 3.5, from before the per-line jars, runs on
:data:`BEFORE_PER_LINE`. A line with no Delta at all (pyspark 4.3.0 today) fails before anything
starts, naming the pysparks that have one.

**Pins** (``io.delta:delta-spark_2.12:3.2.0`` in ``spark.jars.packages``, in the conf or in the job's
code) are handled as the Kafka connector's are (:mod:`.connector`): the job runs on the installed line's
Delta; a pin of another coordinate is named in one line of the run's warnings; a pin in the conf is
taken out of ``spark.jars.packages`` (spark-submit would resolve it at every driver start), one in the
code does nothing under spark-submit. ``configure_spark_with_delta_pip`` is such a pin in the code.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.machine import artifacts

GROUP = "io.delta"
#: a Delta Lake jar as jobs pin it: ``io.delta:delta-spark_2.12:3.2.0``, ``io.delta:delta-spark_4.2_2.13:4.4.0``,
#: or the old name ``io.delta:delta-core_2.12:2.4.0``
PIN = re.compile(r"io\.delta:delta-(?:spark|core)_(?:(?P<line>[34]\.[0-9]+)_)?(?P<scala>2\.1[0-9]):"
                 r"(?P<version>[0-9][\w.\-]*)")
#: what Delta's jar brings itself, pinned beside it by some jobs: taken out of ``spark.jars.packages`` too
COMPANION = re.compile(r"io\.delta:delta-storage:[\w.\-]+")
#: the Delta release of each Spark line from before Delta published a jar per line (Delta 4.1): the newest
#: whose jar and ``delta-spark`` Python package are both published. (Scala, Spark major.minor) -> (artifact,
#: version)
BEFORE_PER_LINE = {("2.12", "3.5"): ("delta-spark_2.12", "3.3.3")}
#: what a Delta-enabled cluster sets for every job (Delta's docs: "Configure SparkSession"), given to a job
#: that needs Delta unless it sets them itself (its builder's settings win over these anyway)
SESSION_CONF = {"spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
                "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
#: the partitions of Delta's snapshot state (its default, 50, is sized for a production cluster): sized for the
#: stack's cluster as ``spark.sql.shuffle.partitions`` is. Every new table version reads the log into that many
#: tasks: on the stack's two one-core executors 50 made each micro-batch of a Kafka-to-Delta job take 9-16 s
#: (the first 16 s), 2 made it take 1.2-2.1 s (5.6 s when Delta writes its every-10th-version checkpoint)
SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
#: what in a job's code means it uses Delta Lake
_USES = re.compile(r"""format\(\s*["']delta["']\s*\)|\bfrom\s+delta(?:\.\w+)*\s+import\b|^\s*import\s+delta\b"""
                   r"""|\bDeltaTable\b|configure_spark_with_delta_pip|io\.delta\.|\bUSING\s+DELTA\b""",
                   re.IGNORECASE | re.MULTILINE)
#: a job's import of Delta's Python API (the ``delta-spark`` package)
_IMPORTS = re.compile(r"^\s*(?:from\s+delta(?:\.\w+)*\s+import|import\s+delta)\b", re.MULTILINE)


@dataclass(frozen=True)
class DeltaChoice:
    """The Delta Lake jar the installed pyspark's jobs run on."""

    spark: str  #: pyspark's version
    scala: str
    artifact: str  #: e.g. ``delta-spark_4.2_2.13``
    version: str  #: e.g. ``4.4.0``
    python: str | None  #: the installed ``delta-spark`` Python package's version (None: not installed)

    @property
    def coordinate(self) -> str:
        return f"{GROUP}:{self.artifact}:{self.version}"

    @property
    def note(self) -> str | None:
        """One line when the jar is not of the installed ``delta-spark`` Python package's version."""
        if self.python is None or self.python == self.version:
            return None
        return (f"delta-spark {self.python} (pip) has no jar for Spark {spark_line(self.spark)} on "
                f"{artifacts.maven_repo()}; the job runs on Delta Lake {self.coordinate}. Fix: pip install "
                f"'delta-spark=={self.version}'")


def spark_line(version: str) -> str:
    """``4.2`` of ``4.2.0``."""
    return ".".join(version.split(".")[:2])


def python_package() -> str | None:
    """The version of the installed ``delta-spark`` Python package (None: not installed)."""
    try:
        return importlib.metadata.version("delta-spark")
    except importlib.metadata.PackageNotFoundError:
        return None


def _release(version: str) -> tuple[int, ...] | None:
    parts = version.split(".")
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def choose(spark: str, scala: str, python: str | None,
           published: Callable[[str], Sequence[str] | None]) -> DeltaChoice:
    """The Delta jar for pyspark ``spark`` on Scala ``scala``: the line's own artifact
    (``delta-spark_<line>_<scala>``) at the Python package's version ``python`` when published, else its
    newest release; else :data:`BEFORE_PER_LINE`; else
    :class:`~pytest_streamchaos.machine.artifacts.ResolutionError` naming the lines that have one.
    ``published(artifact)``: the versions the repository has (None: unknown)."""
    line = spark_line(spark)
    per_line = f"delta-spark_{line}_{scala}"
    versions = [v for v in published(per_line) or [] if _release(v) is not None]
    if versions:
        version = python if python in versions else max(versions, key=lambda v: _release(v) or ())
        return DeltaChoice(spark, scala, per_line, version, python)
    if (scala, line) in BEFORE_PER_LINE:
        artifact, version = BEFORE_PER_LINE[(scala, line)]
        if python and spark_line(python) == spark_line(version) and python in (published(artifact) or []):
            version = python  # an earlier patch release of the same Delta line: the one the job imports
        return DeltaChoice(spark, scala, artifact, version, python)
    raise artifacts.ResolutionError(
        f"the job uses Delta Lake, but no Delta Lake release is published for Spark {line} (pyspark {spark}, Scala "
        f"{scala}): {GROUP}:{per_line} is not on {artifacts.maven_repo()}. Fix: install a pyspark whose line has "
        "one: pip install 'pyspark==4.2.0' 'delta-spark==4.4.0' or 'pyspark==3.5.7' 'delta-spark==3.3.3'")


def choice(spark_home: Path) -> DeltaChoice:
    """Which Delta jar the Spark distribution at ``spark_home`` runs jobs on (:func:`choose`). No network
    when the Python package's jar for the line is cached already, or when the cached list of published
    versions (refreshed daily) decides."""
    from pytest_streamchaos.spark import connector

    spark, scala = connector.spark_version(spark_home), connector.scala_binary(spark_home / "jars")
    python = python_package()
    per_line = f"delta-spark_{spark_line(spark)}_{scala}"
    if python is not None and artifacts.is_resolved(artifacts.delta_jars(per_line, python)):
        return DeltaChoice(spark, scala, per_line, python, python)
    return choose(spark, scala, python, lambda artifact: artifacts.published_versions(GROUP, artifact))


def delta_set(spark_home: Path) -> artifacts.JarSet:
    """The Delta jar set of :func:`choice`, minus what the distribution ships."""
    chosen = choice(spark_home)
    return artifacts.delta_jars(chosen.artifact, chosen.version, sorted(artifacts.artifacts_in(spark_home / "jars")))


def delta_jars(spark_home: Path, progress: Callable[[str], None] | None = None, java: str | None = None,
               announce: bool = True) -> list[Path]:
    """Delta's jars for the installed line, resolved on first use. A line without Delta, or a failed
    resolution, raises :class:`~pytest_streamchaos.machine.artifacts.ResolutionError` naming the fix."""
    jar_set = delta_set(spark_home)
    return artifacts.resolve(jar_set, progress, java=java, announce=announce)


# -- which jobs need Delta -----------------------------------------------------------------------------------

def uses_delta(sources: Sequence[Path]) -> str | None:
    """Where the job's code first uses Delta Lake (``job.py:12``), None when it does not."""
    return _first_match(sources, _USES)


def imports_delta(sources: Sequence[Path]) -> str | None:
    """Where the job's code imports Delta's Python API (``from delta.tables import DeltaTable``), None when
    it does not."""
    return _first_match(sources, _IMPORTS)


def _first_match(sources: Sequence[Path], pattern: re.Pattern[str]) -> str | None:
    """``<file>:<line>`` of the first match of ``pattern`` in ``sources``."""
    for path in sources:
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        m = pattern.search(text)
        if m:
            return f"{path.name}:{text.count(chr(10), 0, m.start()) + 1}"
    return None


def needs_delta(sources: Sequence[Path], conf: Mapping[str, str], outputs: Sequence[str] = ()) -> str | None:
    """Why the job needs Delta Lake's jars (for messages), None when nothing says it does: its code
    (:func:`uses_delta`), its conf (a Delta pin, Delta's extension or catalog), or a ``delta:`` output."""
    where = uses_delta(sources)
    if where:
        return f"its code uses Delta Lake ({where})"
    for key, value in conf.items():
        if PIN.search(value) or "io.delta" in value or "org.apache.spark.sql.delta" in value:
            return f"its conf {key} names Delta Lake"
    delta = [o for o in outputs if o.startswith("delta:")]
    return f"outputs= names {delta[0]}" if delta else None


def python_api_missing(sources: Sequence[Path], chosen: DeltaChoice | None) -> str | None:
    """One line when the job imports Delta's Python API and the ``delta-spark`` package is not installed
    (its driver would die with ``ModuleNotFoundError: No module named 'delta'``); None otherwise."""
    where = imports_delta(sources)
    if where is None or importlib.util.find_spec("delta") is not None:
        return None
    version = f"=={chosen.version}" if chosen is not None else ""
    return (f"the job imports Delta Lake's Python API ({where}), but the delta-spark package is not installed "
            f"here: pip install 'delta-spark{version}'")


# -- pins -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeltaPin:
    """A Delta jar the job asks for, and where."""

    coordinate: str
    where: str  #: ``spark.jars.packages`` (conf) or ``<file>:<line>``


def find_pins(sources: Sequence[Path], conf: Mapping[str, str]) -> list[DeltaPin]:
    """Every Delta jar the job pins: in ``spark.jars.packages`` of ``conf`` and in its code, with the line."""
    pins = [DeltaPin(m.group(0), "spark.jars.packages") for m in PIN.finditer(conf.get("spark.jars.packages", ""))]
    for path in sources:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        for n, line in enumerate(lines, 1):
            pins += [DeltaPin(m.group(0), f"{path.name}:{n}") for m in PIN.finditer(line)]
    return pins


def replacement_note(pins: Sequence[DeltaPin], ours: str) -> str | None:
    """One line on the Delta jars the job pinned that are not the one it runs on; None when there are none."""
    other = [p for p in pins if p.coordinate != ours]
    if not other:
        return None
    asked = ", ".join(f"{p.coordinate} ({p.where})" for p in other)
    return (f"the job pins {asked}; it runs on Delta Lake {ours}, the release for this pyspark's Spark line "
            "(a Delta jar of another Spark or Scala line cannot load here)")


def without_pins(packages: str) -> str:
    """``spark.jars.packages`` with every Delta jar coordinate (and ``delta-storage``) taken out."""
    return ",".join(p for p in (x.strip() for x in packages.split(","))
                    if p and not PIN.fullmatch(p) and not COMPANION.fullmatch(p))
