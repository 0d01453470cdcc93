"""The ``kafka.DefaultSource`` shim jar: makes ``format("kafka")`` resolve to the Python Kafka source.

Spark's ``DataSource.lookupDataSource`` tries registered ``DataSourceRegister`` services, then the
classes ``kafka`` and ``kafka.DefaultSource``, and only then fails with
``KAFKA_DATA_SOURCE_NOT_ENABLED``. The shim (``fixtures/kafka-shim/kafka/DefaultSource.java``) is a
``PythonDataSourceV2`` named "kafka"; on the driver's class path it hands ``format("kafka")`` to the
Python data source of that name (:mod:`pyspark_streamchaos`). It registers no service, so Spark's
real connector still wins wherever its jar is present.

The jar is compiled from source on first use and cached under
``${XDG_CACHE_HOME:-~/.cache}/pytest-streamchaos/``, keyed by a hash of the Java source, the Spark
version and the javac version. ``python -m pytest_streamchaos.spark.kafka_shim`` prints its path.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from pytest_streamchaos.assets import cache_dir, fixture_path, fixture_roots


def _shim_source_dir() -> Path:
    try:
        return fixture_path("kafka-shim")
    except FileNotFoundError:  # reported when the source is read, naming the fix
        return fixture_roots()[0] / "kafka-shim"


#: the Java source tree of the shim (top-level ``fixtures/``, not package code; see :mod:`pytest_streamchaos.assets`)
SHIM_SOURCE_DIR = _shim_source_dir()
SHIM_CLASS = "kafka/DefaultSource"
_JDK_FIX = "apt-get install openjdk-17-jdk-headless"


class KafkaShimError(RuntimeError):
    """The shim jar cannot be built; the message names the fix."""



def _java_source() -> bytes:
    path = SHIM_SOURCE_DIR / f"{SHIM_CLASS}.java"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise KafkaShimError(f"shim source {path} is missing; reinstall pytest-streamchaos (pip install "
                             "pytest-streamchaos, or pip install -e . from its source tree)") from None


def _javac() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = os.path.join(java_home, "bin", "javac") if java_home else None
    javac = candidate if candidate and os.access(candidate, os.X_OK) else shutil.which("javac")
    if javac is None:
        raise KafkaShimError("javac not found: format(\"kafka\") without Spark's connector needs a JDK to "
                             f"build its shim jar once; install one ({_JDK_FIX}) or set JAVA_HOME to a JDK")
    return javac


@functools.lru_cache(maxsize=4)
def _javac_version(javac: str) -> str:
    out = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    return (out.stdout + out.stderr).strip()


def cache_key(java_source: bytes, spark_version: str, javac_version: str) -> str:
    """The cache key of a shim jar: changes whenever the source, Spark or the compiler does."""
    h = hashlib.sha256()
    for part in (java_source, spark_version.encode(), javac_version.encode()):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:20]


def _spark_jars() -> tuple[str, Path]:
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    return pyspark.__version__, home / "jars"


def kafka_shim_jar(cache: Path | None = None) -> Path:
    """The path of the shim jar for the installed pyspark, built (once, atomically) if needed.

    Raises :class:`KafkaShimError` naming the fix when no ``javac`` is available or compiling fails.
    """
    spark_version, jars = _spark_jars()
    javac = _javac()
    key = cache_key(_java_source(), spark_version, _javac_version(javac))
    target = (cache or cache_dir()) / f"kafka-shim-{key}.jar"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        built = _build(javac, jars, Path(tmp))
        # os.replace is atomic: a concurrent build either finds the old state or a complete jar.
        os.replace(built, target)
    return target


def _build(javac: str, jars: Path, tmp: Path) -> Path:
    classes = tmp / "classes"
    classes.mkdir()
    src = SHIM_SOURCE_DIR / f"{SHIM_CLASS}.java"
    cmd = [javac, "--release", "17", "-nowarn", "-cp", str(jars / "*"), "-d", str(classes), str(src)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise KafkaShimError(f"compiling {src} failed (javac exit {out.returncode}); is {jars} a complete "
                             f"pyspark install with a matching JDK ({_JDK_FIX})?\n{out.stderr[-2000:]}")
    jar = tmp / "kafka-shim.jar"
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: pytest-streamchaos\n\n")
        # Only the class: no META-INF/services entry, which would shadow Spark's real connector.
        for f in sorted(classes.rglob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())
    return jar


if __name__ == "__main__":
    print(kafka_shim_jar())
