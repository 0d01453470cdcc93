"""Jars from Maven Central, resolved once per machine into the plugin's cache.

The real stack's servers (Apache Kafka, Hadoop's HDFS) and Spark's own Kafka connector are published
as Maven artifacts. Each :class:`JarSet` names pinned coordinates; :func:`resolve` runs the ordinary
resolver (the Ivy jar that pyspark ships, ``java -jar ivy.jar``) once, retrieves the runtime closure
into ``<cache>/jars/<name>/lib`` and writes a manifest last. A later call finds the manifest and
returns at once, without Java and without the network (a second run is offline and fast).

``STREAMCHAOS_MAVEN_REPO`` points the resolver at a Maven repository mirror instead of Maven Central.
Concurrent resolutions of one set (two pytest processes) are serialised by a lock file.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.stack.base import StackError

#: Apache Kafka, the brokers' release (KRaft; Java 17)
KAFKA_VERSION = "4.4.0"
#: the log4j2 backend Kafka's POM leaves out (its tarball adds it); Kafka 4.4.0's own log4j2 version
KAFKA_LOG4J_VERSION = "2.25.5"
#: Hadoop's HDFS servers: the client line pyspark 4 ships, the first whose servers run on Java 17
HADOOP_VERSION = "3.5.0"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
#: how long one resolution may take (a cold Hadoop closure is ~100 MB)
RESOLVE_TIMEOUT_S = 900.0

Progress = Callable[[str], None]


class ResolutionError(StackError):
    """A jar set could not be resolved; the message names the coordinates, the cache and the fix."""


@dataclass(frozen=True)
class JarSet:
    """Pinned Maven coordinates resolved together into one cache folder."""

    name: str  #: the cache folder, e.g. ``kafka-4.4.0``
    what: str  #: for messages, e.g. ``Apache Kafka 4.4.0``
    coordinates: tuple[str, ...]  #: ``group:artifact:version``
    #: artifact names to leave out of the result (already on the class path that uses the set)
    skip_artifacts: frozenset[str] = field(default_factory=frozenset)

    def folder(self) -> Path:
        return jars_root() / self.name


def jars_root() -> Path:
    """``<cache>/jars``: one folder per resolved set, and Ivy's download cache."""
    return cache_dir() / "jars"


def kafka_jars() -> JarSet:
    """The Kafka broker's runtime: ``kafka_2.13`` and a log4j2 backend for its slf4j logging."""
    return JarSet(f"kafka-{KAFKA_VERSION}", f"Apache Kafka {KAFKA_VERSION}", (
        f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        f"org.apache.logging.log4j:log4j-slf4j2-impl:{KAFKA_LOG4J_VERSION}",
        f"org.apache.logging.log4j:log4j-core:{KAFKA_LOG4J_VERSION}",
    ))


def hadoop_jars() -> JarSet:
    """HDFS's NameNode and DataNode (``hadoop-hdfs`` declares ``hadoop-common`` as provided: listed)."""
    return JarSet(f"hadoop-{HADOOP_VERSION}", f"Hadoop HDFS {HADOOP_VERSION}", tuple(
        f"org.apache.hadoop:{a}:{HADOOP_VERSION}" for a in ("hadoop-common", "hadoop-hdfs", "hadoop-hdfs-client")))


def hadoop_yarn_jars() -> JarSet:
    """YARN's ResourceManager and NodeManager of the same Hadoop release as HDFS. What their POMs declare
    as provided is listed (``hadoop-common``; the RM's web app binds ``hadoop-yarn-server-timelineservice``
    classes even with the timeline service off), and ``hadoop-hdfs-client`` so that a NodeManager can
    localize from HDFS. Its own folder: the HDFS set's manifest stays as it is; Ivy's download cache is shared."""
    return JarSet(f"hadoop-yarn-{HADOOP_VERSION}", f"Hadoop YARN {HADOOP_VERSION}", tuple(
        f"org.apache.hadoop:{a}:{HADOOP_VERSION}" for a in (
            "hadoop-common", "hadoop-hdfs-client", "hadoop-yarn-server-resourcemanager",
            "hadoop-yarn-server-nodemanager", "hadoop-yarn-server-timelineservice")))


def spark_kafka_connector(spark_version: str, scala: str, present: Sequence[str] = ()) -> JarSet:
    """Spark's own Kafka connector of one Spark/Scala line and its dependencies, minus what the
    Spark distribution already has (``present``: artifact names of ``pyspark/jars``)."""
    coord = f"org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark_version}"
    return JarSet(f"spark-sql-kafka-0-10_{scala}-{spark_version}", f"Spark's Kafka connector {coord}", (coord,),
                  frozenset(present))


def resolve(jars: JarSet, progress: Progress | None = None, *, java: str | None = None) -> list[Path]:
    """The jars of ``jars``, resolved on first use (see the module docstring). ``progress`` gets one
    line when a resolution starts and one when it ends (default: stderr)."""
    found = _cached(jars)
    if found is not None:
        return found
    folder = jars.folder()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{jars.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be resolving the same set
        found = _cached(jars)
        if found is not None:
            return found
        return _resolve_now(jars, progress or _stderr, java or _java())


def _cached(jars: JarSet) -> list[Path] | None:
    """The set's jars when its manifest is complete and every jar listed is there."""
    manifest = jars.folder() / "manifest.json"
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    if data.get("coordinates") != list(jars.coordinates):
        return None
    paths = [jars.folder() / "lib" / n for n in data.get("jars", [])]
    if not paths or not all(p.is_file() for p in paths):
        return None
    return [p for p in paths if _artifact(p.name) not in jars.skip_artifacts]


def _resolve_now(jars: JarSet, progress: Progress, java: str) -> list[Path]:
    folder = jars.folder()
    repo = os.environ.get("STREAMCHAOS_MAVEN_REPO", MAVEN_CENTRAL)
    progress(f"pytest-streamchaos: resolving {jars.what} ({', '.join(jars.coordinates)}) from {repo} into "
             f"{folder} (once per machine) ...")
    started = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "lib").mkdir(parents=True)
    (folder / "ivy.xml").write_text(_ivy_module(jars))
    argv = [java, "-jar", str(ivy_jar()), "-ivy", str(folder / "ivy.xml"), "-confs", "default",
            "-types", "jar", "bundle", "-retrieve", str(folder / "lib" / "[artifact]-[revision](-[classifier]).[ext]"),
            "-sync", "-warn", "-cache", str(jars_root() / "ivy-cache")]
    if repo != MAVEN_CENTRAL:
        (folder / "ivysettings.xml").write_text(_ivy_settings(repo))
        argv += ["-settings", str(folder / "ivysettings.xml")]
    out = _run(argv, jars)
    names = sorted(p.name for p in (folder / "lib").glob("*.jar"))
    if not names:
        raise ResolutionError(_failure(jars, f"the resolver retrieved no jar; its output:\n{out[-2000:]}"))
    write_json(folder / "manifest.json", {"coordinates": list(jars.coordinates), "jars": names,
                                          "repository": repo, "resolved_at": time.time()})
    size = sum((folder / "lib" / n).stat().st_size for n in names) / 1e6
    progress(f"pytest-streamchaos: resolved {jars.what}: {len(names)} jars, {size:.0f} MB in "
             f"{time.monotonic() - started:.1f}s")
    found = _cached(jars)
    assert found is not None
    return found


def _run(argv: list[str], jars: JarSet) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ResolutionError(_failure(jars, f"the resolver did not finish within {RESOLVE_TIMEOUT_S:.0f}s")) from None
    except OSError as exc:
        raise ResolutionError(_failure(jars, f"cannot run {argv[0]}: {exc}")) from None
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 or "UNRESOLVED DEPENDENCIES" in out or "unresolved dependency" in out:
        raise ResolutionError(_failure(jars, _ivy_problem(out)))
    return out


def _ivy_problem(out: str) -> str:
    """The lines of Ivy's output that say what failed (unresolved modules, download errors)."""
    keep = [ln.strip() for ln in out.splitlines()
            if any(w in ln for w in ("unresolved dependency", "not found", "FAILED", "Exception", "ERROR",
                                     "Connection", "UnknownHost", "timed out"))]
    return "; ".join(dict.fromkeys(keep[:8])) or out.strip()[-1500:]


def _failure(jars: JarSet, why: str) -> str:
    return (f"could not resolve {jars.what} ({', '.join(jars.coordinates)}) into {jars.folder()}: {why}. "
            "Fix: check that this machine reaches Maven Central (https://repo1.maven.org), or set "
            "STREAMCHAOS_MAVEN_REPO to a reachable mirror, then run again (or `python -m pytest_streamchaos.prepare`)")


def _ivy_module(jars: JarSet) -> str:
    deps = []
    for coord in jars.coordinates:
        group, artifact, version = coord.split(":")
        deps.append(f"    <dependency org={quoteattr(group)} name={quoteattr(artifact)} rev={quoteattr(version)}/>")
    return ("<ivy-module version=\"2.0\">\n"
            f"  <info organisation=\"pytest-streamchaos\" module={quoteattr(jars.name)}/>\n"
            "  <configurations defaultconfmapping=\"default->default\"><conf name=\"default\"/></configurations>\n"
            "  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</ivy-module>\n")


def _ivy_settings(repo: str) -> str:
    return ("<ivysettings><settings defaultResolver=\"mirror\"/><resolvers>"
            f"<ibiblio name=\"mirror\" m2compatible=\"true\" root={quoteattr(repo)}/>"
            "</resolvers></ivysettings>\n")


def _artifact(jar_name: str) -> str:
    """``kafka-clients`` of ``kafka-clients-3.9.2.jar`` (the name up to the first ``-<digit>``)."""
    stem = jar_name.removesuffix(".jar")
    parts = stem.split("-")
    for i, part in enumerate(parts):
        if i and part[:1].isdigit():
            return "-".join(parts[:i])
    return stem


def artifacts_in(directory: Path) -> frozenset[str]:
    """The artifact names of the jars in ``directory`` (e.g. ``pyspark/jars``)."""
    return frozenset(_artifact(p.name) for p in directory.glob("*.jar"))


def ivy_jar() -> Path:
    """The Ivy jar pyspark ships (``pyspark/jars/ivy-2.5.*.jar``)."""
    try:
        import pyspark
    except ImportError:
        raise ResolutionError("pyspark is not installed, and the resolver uses the Ivy jar it ships: "
                              "pip install pyspark") from None
    found = sorted((Path(pyspark.__file__).resolve().parent / "jars").glob("ivy-*.jar"))
    if not found:
        raise ResolutionError(f"no ivy-*.jar in {Path(pyspark.__file__).parent / 'jars'}: reinstall pyspark "
                              "(pip install --force-reinstall pyspark)")
    return found[-1]


def _java() -> str:
    from pytest_streamchaos.stack.environment import find_java

    return str(find_java()[0])


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
