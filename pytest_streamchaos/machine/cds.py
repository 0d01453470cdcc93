"""JVM class-data sharing (CDS) archives for Spark's driver and executor JVMs.

Every chaos run starts a driver JVM and one executor JVM per worker on a 2-core machine, and each
spends seconds loading and verifying the same ~10,000 Spark classes. A dynamic CDS archive (JDK 13+)
maps them from a file instead: a local PySpark app took 8.3 s and 12.0 s of CPU without, 5.2 s and
7.8 s with (docs/architecture.md, "Start-up"). The archives are built once per machine by a training
run (``fixtures/cds/train.py``) and kept in the cache, keyed by everything the JVM checks before it
maps one: the JVM, Spark's jars and the exact class path. A JVM whose class path differs (a user's
``extraClassPath``) simply runs without.

Two rules of CDS shape the stack: the class path at run time must start with the one at dump time,
and at dump time no *non-empty* directory may be on it. Spark puts ``SPARK_CONF_DIR`` on every JVM's
class path, so the plugin's Spark JVMs share one empty conf dir in the cache (:func:`conf_dir`);
configuration goes in through ``--conf`` and ``-Dlog4j2.configurationFile`` instead.

Build: ``python -m pytest_streamchaos.prepare`` (``./dev test`` runs it; a no-op once built).
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.machine import commands

KINDS = ("driver", "executor")
#: the JVM's CDS messages (an archive it cannot use is not an error here: it runs without)
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def conf_dir() -> Path:
    """The empty ``SPARK_CONF_DIR`` of the plugin's Spark JVMs (stable, so their class path is)."""
    d = cache_dir() / "spark-conf-empty"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _slf4j(spark_home: Path) -> str:
    found = sorted(glob.glob(str(spark_home / "jars" / "slf4j-api-*.jar")))
    return found[0] if found else ""


def class_path(kind: str, spark_home: Path, extra: str = "") -> str:
    """The class path Spark gives a ``kind`` JVM (as its launcher and the worker build it)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} must be one of {KINDS}")
    jars = spark_home / "jars"
    parts = [extra, f"{conf_dir()}/", _slf4j(spark_home), f"{jars}/*"]
    return ":".join(p for p in parts if p)


def _fingerprint(java: str, spark_home: Path, cp: str) -> str:
    h = hashlib.sha256(cp.encode())
    real = os.path.realpath(java)
    h.update(real.encode())
    for f in glob.glob(os.path.join(os.path.dirname(os.path.dirname(real)), "lib", "server", "libjvm.so")):
        st = os.stat(f)
        h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    for f in sorted(glob.glob(str(spark_home / "jars" / "*.jar"))):
        st = os.stat(f)
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    for entry in cp.split(":"):
        if entry.endswith(".jar") and os.path.exists(entry):
            st = os.stat(entry)
            h.update(f"{entry}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def archive_path(kind: str, java: str, spark_home: Path, extra: str = "") -> Path:
    """Where the archive of a ``kind`` JVM with this JVM, Spark and class path is (or would be)."""
    cp = class_path(kind, spark_home, extra)
    return cache_dir() / "cds" / f"{kind}-{_fingerprint(java, spark_home, cp)}.jsa"


def java_opts(kind: str, java: str, spark_home: Path, extra: str = "") -> str:
    """JVM options that map the archive when one was built for exactly this JVM (else "")."""
    if os.environ.get("STREAMCHAOS_CDS", "1") == "0":
        return ""
    path = archive_path(kind, java, spark_home, extra)
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


def build(kind: str, java: str, spark_home: Path, train: Path, extra: str = "",
          timeout: float = 600.0) -> Path:
    """Dump the archive of a ``kind`` JVM by running the training app with its class path."""
    path = archive_path(kind, java, spark_home, extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    # Spark's scratch folders (spark-*, blockmgr-*) in one of our own, removed also when the run is killed
    scratch = tempfile.mkdtemp(prefix="streamchaos-cds-")
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_CONF_DIR": str(conf_dir()),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_DIRS": scratch}
    argv = [java, "-cp", class_path(kind, spark_home, extra), f"-XX:ArchiveClassesAtExit={tmp}", "-Xmx1g",
            f"-Djava.io.tmpdir={scratch}", *_SPARK_JAVA_OPTS, "org.apache.spark.deploy.SparkSubmit",
            "--master", "local[1]", str(train)]
    try:
        p = commands.completed(argv, env=env, timeout=timeout, error=RuntimeError)
        if p.returncode != 0 or not tmp.is_file():
            raise RuntimeError(f"CDS training run for the {kind} failed (exit {p.returncode}): {p.stderr[-800:]}")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return path


#: the module options Spark's launcher adds for Java 17 (the archive records them)
_SPARK_JAVA_OPTS = ["-XX:+IgnoreUnrecognizedVMOptions", "--add-modules=jdk.incubator.vector"] + [
    f"--add-opens={m}=ALL-UNNAMED" for m in (
        "java.base/java.lang", "java.base/java.lang.invoke", "java.base/java.lang.reflect", "java.base/java.io",
        "java.base/java.net", "java.base/java.nio", "java.base/java.util", "java.base/java.util.concurrent",
        "java.base/java.util.concurrent.atomic", "java.base/jdk.internal.ref", "java.base/sun.nio.ch",
        "java.base/sun.nio.cs", "java.base/sun.security.action", "java.base/sun.util.calendar",
        "java.security.jgss/sun.security.krb5")]
