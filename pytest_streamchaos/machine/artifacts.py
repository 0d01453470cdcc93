"""Jars from Maven Central, resolved once per machine into the plugin's cache.

The real stack's servers (Apache Kafka, Hadoop's HDFS), Spark's own Kafka connector and Delta Lake are published
as Maven artifacts. Each :class:`JarSet` names pinned coordinates; :func:`resolve` runs the ordinary
resolver (the Ivy jar that pyspark ships, ``java -jar ivy.jar``) once, retrieves the runtime closure
into ``<cache>/jars/<name>/lib`` and writes a manifest last. A later call finds the manifest and
returns at once, without Java and without the network (a second run is offline and fast).

``STREAMCHAOS_MAVEN_REPO`` points the resolver at a Maven repository mirror instead of Maven Central.
Concurrent resolutions of one set (two pytest processes) are serialised by a lock file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict
from xml.sax.saxutils import quoteattr

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.errors import StackError
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.machine import commands

#: Apache Kafka, the brokers' release (KRaft; Java 17)
KAFKA_VERSION = "4.4.0"
#: the log4j2 backend Kafka's POM leaves out (its tarball adds it); Kafka 4.4.0's own log4j2 version
KAFKA_LOG4J_VERSION = "2.25.5"
#: Hadoop's HDFS servers: the client line pyspark 4 ships, the first whose servers run on Java 17
HADOOP_VERSION = "3.5.0"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
#: how long one resolution may take (a cold Hadoop closure is ~100 MB)
RESOLVE_TIMEOUT_S = 900.0
#: how long a cached list of an artifact's published versions is trusted before it is fetched again
VERSIONS_MAX_AGE_S = 86400.0
#: how long fetching a ``maven-metadata.xml`` may take
METADATA_TIMEOUT_S = 20.0

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
    #: ``group:artifact`` modules the resolution leaves out of the closure (an SDK's fat bundle, for its modules)
    excludes: tuple[str, ...] = ()

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


def kafka_tools_jars() -> JarSet:
    """Kafka's own command-line tools of the brokers' release (``kafka-reassign-partitions``: the admin API's
    AlterPartitionReassignments, which the Python client lacks), with the closure they need to run alone."""
    return JarSet(f"kafka-tools-{KAFKA_VERSION}", f"Kafka's tools {KAFKA_VERSION}",
                  (f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",))


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


def delta_jars(artifact: str, version: str, present: Sequence[str] = ()) -> JarSet:
    """Delta Lake for Spark (``io.delta:<artifact>:<version>``, e.g. ``delta-spark_4.2_2.13:4.4.0``) and its
    dependencies (``delta-storage``, ANTLR's runtime), minus what the Spark distribution already has
    (``present``: artifact names of ``pyspark/jars``)."""
    coord = f"io.delta:{artifact}:{version}"
    return JarSet(f"{artifact}-{version}", f"Delta Lake {version}", (coord,), frozenset(present))


#: the AWS SDK that each Hadoop release's ``hadoop-aws`` is built against (its POM names the SDK's bundle: 686 MB
#: for SDK v2, 281 MB for v1), and the SDK's modules S3A uses instead of it (19 MB and 11 MB with their
#: closures): Hadoop version -> (the bundle left out, the SDK's group, version and modules)
S3A_SDK = {
    "3.5.0": ("software.amazon.awssdk:bundle", "software.amazon.awssdk", "2.35.4",
              ("s3", "s3-transfer-manager", "sts")),
    "3.3.4": ("com.amazonaws:aws-java-sdk-bundle", "com.amazonaws", "1.12.262",
              ("aws-java-sdk-s3", "aws-java-sdk-dynamodb", "aws-java-sdk-sts")),
}


def hadoop_aws_jars(hadoop: str, present: Sequence[str] = ()) -> JarSet:
    """S3A for a Spark whose Hadoop client is ``hadoop`` (``3.5.0`` in pyspark 4.2, ``3.3.4`` in 3.5):
    ``org.apache.hadoop:hadoop-aws:<hadoop>`` and the AWS SDK it was built against, as the modules S3A uses
    (:data:`S3A_SDK`) rather than the SDK's bundle; for another Hadoop, its POM's own closure, bundle and all.
    ``present``: artifact names of ``pyspark/jars`` (Netty, Jackson, httpclient: Spark's are used)."""
    coord = f"org.apache.hadoop:hadoop-aws:{hadoop}"
    if hadoop not in S3A_SDK:
        return JarSet(f"hadoop-aws-{hadoop}", f"S3A (hadoop-aws {hadoop})", (coord,), frozenset(present))
    bundle, group, version, modules = S3A_SDK[hadoop]
    return JarSet(f"hadoop-aws-{hadoop}", f"S3A (hadoop-aws {hadoop}, AWS SDK {version})",
                  (coord, *(f"{group}:{m}:{version}" for m in modules)), frozenset(present), (bundle,))


def maven_repo() -> str:
    """The Maven repository in use: ``STREAMCHAOS_MAVEN_REPO`` or Maven Central (with a final ``/``)."""
    repo = os.environ.get("STREAMCHAOS_MAVEN_REPO", MAVEN_CENTRAL)
    return repo if repo.endswith("/") else repo + "/"


def is_resolved(jars: JarSet) -> bool:
    """Whether ``jars`` is in the cache already (then :func:`resolve` needs neither Java nor the network)."""
    return _cached(jars) is not None


def published_versions(group: str, artifact: str, *, max_age: float = VERSIONS_MAX_AGE_S) -> list[str] | None:
    """The versions of ``group:artifact`` the repository publishes, from its ``maven-metadata.xml``;
    cached in ``<cache>/jars/<artifact>.versions.json`` and fetched again only when older than
    ``max_age`` (``0``: now). None when they cannot be had (no network and nothing cached)."""
    repo = maven_repo()
    path = jars_root() / f"{artifact}.versions.json"
    try:
        cached = json.loads(path.read_text())
        if cached.get("repository") != repo:
            cached = None
    except (OSError, ValueError):
        cached = None
    if cached is not None and time.time() - max(cached.get("fetched_at", 0), cached.get("tried_at", 0)) < max_age:
        return list(cached["versions"])
    url = f"{repo}{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    try:
        with urllib.request.urlopen(url, timeout=METADATA_TIMEOUT_S) as answer:
            root = ET.fromstring(answer.read())
    except (OSError, urllib.error.URLError, ET.ParseError, ValueError):
        if cached is None:
            return None
        write_json(path, {**cached, "tried_at": time.time()})  # offline: the last answer stands, for a while
        return list(cached["versions"])
    versions = [v.text.strip() for v in root.iter("version") if v.text and v.text.strip()]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"repository": repo, "url": url, "fetched_at": time.time(), "versions": versions})
    return versions


def resolve(jars: JarSet, progress: Progress | None = None, *, java: str | None = None,
            announce: bool = True) -> list[Path]:
    """The jars of ``jars``, resolved on first use (see the module docstring). ``progress`` gets one
    line when a resolution starts (unless ``announce`` is false) and one when it ends (default: stderr)."""
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
        return _resolve_now(jars, progress or stderr, java, announce)


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


def _resolve_now(jars: JarSet, progress: Progress, java: str | None, announce: bool = True) -> list[Path]:
    """Fetch the set: its lock's jars downloaded in parallel when it has one (:func:`locked`), else Ivy."""
    folder = jars.folder()
    repo = maven_repo()
    lock = locked(jars)
    if announce:
        progress(f"pytest-streamchaos: {'downloading' if lock else 'resolving'} {jars.what} "
                 f"({', '.join(jars.coordinates)}) from {repo} into {folder} (once per machine) ...")
    started = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "lib").mkdir(parents=True)
    if lock:
        _download(jars, lock, repo)
    else:
        _ivy(jars, repo, java or _java())
    names = sorted(p.name for p in (folder / "lib").glob("*.jar"))
    write_json(folder / "manifest.json", {"coordinates": list(jars.coordinates), "jars": names,
                                          "repository": repo, "locked": bool(lock), "resolved_at": time.time()})
    size = sum((folder / "lib" / n).stat().st_size for n in names) / 1e6
    progress(f"pytest-streamchaos: {'downloaded' if lock else 'resolved'} {jars.what}: {len(names)} jars, "
             f"{size:.0f} MB in {time.monotonic() - started:.1f}s")
    found = _cached(jars)
    assert found is not None
    return found


def _ivy(jars: JarSet, repo: str, java: str) -> None:
    """The set's closure retrieved into its ``lib`` by Ivy (Maven's resolution rules). Each set has its
    own Ivy cache: Ivy does not lock its cache, and sets are resolved concurrently."""
    folder = jars.folder()
    (folder / "ivy.xml").write_text(_ivy_module(jars))
    argv = [java, "-jar", str(ivy_jar()), "-ivy", str(folder / "ivy.xml"), "-confs", "default",
            "-types", "jar", "bundle", "-retrieve", str(folder / "lib" / "[artifact]-[revision](-[classifier]).[ext]"),
            "-sync", "-warn", "-cache", str(ivy_cache(jars))]
    if repo != MAVEN_CENTRAL:
        (folder / "ivysettings.xml").write_text(_ivy_settings(repo))
        argv += ["-settings", str(folder / "ivysettings.xml")]
    out = _run(argv, jars)
    if not any((folder / "lib").glob("*.jar")):
        raise ResolutionError(_failure(jars, f"the resolver retrieved no jar; its output:\n{out[-2000:]}"))


def ivy_cache(jars: JarSet) -> Path:
    """Ivy's download cache (and its resolution report) of one set."""
    return jars_root() / "ivy-cache" / jars.name


# -- locked sets: the closure pinned in the package, downloaded in parallel ---------------------------------

#: the lock files (``<set name>.json``): every jar of a pinned set's closure as Ivy resolved it, with its
#: path in the repository and its SHA-256; written by ``python -m pytest_streamchaos.machine.artifacts --lock``
LOCKS = Path(__file__).with_name("jar_locks")
#: downloads at once: Maven Central answers each request in ~0.1 s, so a closure of 100+ jars is
#: bound by round trips, not bandwidth (Ivy, one after the other: 30-80 s; these: a few seconds)
DOWNLOADS = 8
DOWNLOAD_TIMEOUT_S = 120.0
DOWNLOAD_ATTEMPTS = 3


class LockedJar(TypedDict):
    """One jar of a lock (``jar_locks/<set>.json``): its file name, its path in the Maven repository, its size
    and SHA-256."""

    file: str
    path: str
    size: int
    sha256: str


def locked(jars: JarSet) -> list[LockedJar] | None:
    """The set's locked jars (``file``, ``path``, ``size``, ``sha256``), or None when it has no lock
    for exactly its coordinates."""
    try:
        data = json.loads((LOCKS / f"{jars.name}.json").read_text())
    except (OSError, ValueError):
        return None
    return list(data["jars"]) if data.get("coordinates") == list(jars.coordinates) and data.get("jars") else None


def _download(jars: JarSet, lock: list[LockedJar], repo: str) -> None:
    lib = jars.folder() / "lib"
    with ThreadPoolExecutor(max_workers=DOWNLOADS, thread_name_prefix=f"fetch-{jars.name}") as pool:
        errors = [e for e in pool.map(lambda jar: _fetch(repo, jar, lib), lock) if e]
    if errors:
        shutil.rmtree(jars.folder(), ignore_errors=True)
        raise ResolutionError(_failure(jars, "; ".join(errors[:3])
                                       + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")))


def _fetch(repo: str, jar: LockedJar, lib: Path) -> str | None:
    """Download one locked jar into ``lib`` (checked against its SHA-256); what failed, or None."""
    url, dest = repo + jar["path"], lib / jar["file"]
    part = dest.with_name(dest.name + ".part")
    why = ""
    for _ in range(DOWNLOAD_ATTEMPTS):
        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as answer, open(part, "wb") as out:
                while chunk := answer.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
        except (OSError, urllib.error.URLError) as exc:
            why = f"{url}: {exc}"
            continue
        if digest.hexdigest() != jar["sha256"]:
            part.unlink(missing_ok=True)
            return f"{url}: its SHA-256 {digest.hexdigest()} is not the locked {jar['sha256']} (a changed artifact?)"
        part.rename(dest)
        return None
    part.unlink(missing_ok=True)
    return why


def write_lock(jars: JarSet, java: str | None = None) -> Path:
    """Resolve ``jars`` with Ivy (in this cache, whatever lock exists) and pin what it retrieved: the lock
    file that later resolutions download in parallel. For a maintainer, when a pinned version changes."""
    shutil.rmtree(jars.folder(), ignore_errors=True)
    (jars.folder() / "lib").mkdir(parents=True)
    _ivy(jars, maven_repo(), java or _java())
    report = ivy_cache(jars) / f"pytest-streamchaos-{jars.name}-default.xml"
    return lock_from_report(jars, report, jars.folder() / "lib")


def lock_from_report(jars: JarSet, report: Path, lib: Path) -> Path:
    """Write the lock of ``jars`` from Ivy's resolution report (where each jar came from) and the jars
    it retrieved into ``lib`` (their SHA-256)."""
    urls = {u.rsplit("/", 1)[1]: u for u in (o.get("location", "") for o in ET.parse(report).iter("origin-location"))}
    repo = maven_repo()
    entries: list[LockedJar] = []
    for path in sorted(lib.glob("*.jar")):
        url = urls[path.name]
        if not url.startswith(repo):
            raise ResolutionError(f"{path.name} came from {url}, not from {repo}: cannot lock it")
        entries.append({"file": path.name, "path": url[len(repo):], "size": path.stat().st_size,
                        "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    LOCKS.mkdir(exist_ok=True)
    return write_json(LOCKS / f"{jars.name}.json", {"coordinates": list(jars.coordinates), "jars": entries})


def lockable_sets() -> list[JarSet]:
    """The pinned sets that have a lock: the servers, Kafka's tools, and the connector and Delta Lake of each
    tested Spark line."""
    return [kafka_jars(), kafka_tools_jars(), hadoop_jars(), spark_kafka_connector("4.2.0", "2.13"),
            spark_kafka_connector("3.5.7", "2.12"), delta_jars("delta-spark_4.2_2.13", "4.4.0"),
            delta_jars("delta-spark_2.12", "3.3.3"), *(hadoop_aws_jars(h) for h in S3A_SDK)]


def _run(argv: list[str], jars: JarSet) -> str:
    proc = commands.completed(argv, timeout=RESOLVE_TIMEOUT_S,
                              error=lambda why: ResolutionError(_failure(jars, f"the resolver: {why}")))
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
    excludes = [f"    <exclude org={quoteattr(g)} module={quoteattr(a)}/>"
                for g, a in (e.split(":") for e in jars.excludes)]
    return ("<ivy-module version=\"2.0\">\n"
            f"  <info organisation=\"pytest-streamchaos\" module={quoteattr(jars.name)}/>\n"
            "  <configurations defaultconfmapping=\"default->default\"><conf name=\"default\"/></configurations>\n"
            "  <dependencies>\n" + "\n".join([*deps, *excludes]) + "\n  </dependencies>\n</ivy-module>\n")


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


def hadoop_client_version(spark_jars: Path) -> str:
    """The Hadoop client version a Spark distribution ships (``hadoop-client-api-3.5.0.jar`` -> ``3.5.0``)."""
    found = sorted(p.name for p in spark_jars.glob("hadoop-client-api-*.jar")) or sorted(
        p.name for p in spark_jars.glob("hadoop-common-*.jar"))
    if not found:
        raise ResolutionError(f"no hadoop-client-api-*.jar in {spark_jars}: cannot tell pyspark's Hadoop; "
                              "reinstall pyspark (pip install --force-reinstall pyspark)")
    return found[-1].removesuffix(".jar").rsplit("-", 1)[1]


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
    from pytest_streamchaos.machine.environment import find_java

    return str(find_java()[0])


def stderr(line: str) -> None:
    """The default progress: one line on stderr, flushed."""
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m pytest_streamchaos.machine.artifacts --lock``: (re)write the lock of every lockable set."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["--lock"]:
        print("usage: python -m pytest_streamchaos.machine.artifacts --lock", file=sys.stderr)
        return 2
    for jars in lockable_sets():
        print(f"locked {jars.what}: {write_lock(jars)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
