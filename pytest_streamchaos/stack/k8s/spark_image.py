"""Spark's image for the pods, built here with no registry (issue 51): the host's own JDK, Python and installed
pyspark, copied into a multi-layer OCI archive that ``ctr images import`` loads into the cluster's containerd.

No Dockerfile and no base image: each file is taken from this host at its own path (the JDK's tree, Python's
prefix without its ``site-packages`` but for pyspark and py4j, pyspark's folder as ``SPARK_HOME``), with every
symbolic link on the way kept as a link and its target taken too (Debian's JDK links its ``conf`` into
``/etc/java-17-openjdk``), and the shared libraries ``ldd`` says those programs need. So the image's paths are
the host's: the driver here and the executors there name the same ``SPARK_HOME``, Java and Python. The
entrypoint (``fixtures/k8s/spark-entrypoint.py``) does for an executor pod what Spark's ``entrypoint.sh`` does,
in Python (the image has no shell).

Cached in ``<cache>/k8s/v<version>/images/`` under a name keyed by the versions (pyspark, Java, Python): a new
pyspark or JDK is a new image. Built by ``python -m pytest_streamchaos.prepare --k8s`` (opt-in), never by a run.
Layers are written to disk and hashed as they are written (the image is ~1 GB): no layer is held in memory.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import stat
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.assets import fixture_path
from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.k8s import images, relay

REPOSITORY = "streamchaos.local/spark"
#: where the entrypoint is in the image
ENTRYPOINT = "/opt/streamchaos/spark-entrypoint.py"
#: what of Python's standard library an executor never needs (tests, GUIs, installers)
_STDLIB_SKIP = ("site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")
#: the programs Spark's JVMs run (Hadoop's local file system: ``chmod`` of every file it creates, the event log's
#: and the checkpoint's; Spark's clean-up: ``rm``), which a driver pod needs (issue 51, cluster mode)
TOOLS = ("/usr/bin/chmod", "/usr/bin/rm", "/usr/bin/ls")
#: what of the JDK a JVM never reads
_JDK_SKIP = ("jmods", "include", "man", "docs", "legal", "demo", "lib/src.zip", "lib/ct.sym")


@dataclass(frozen=True)
class Sources:
    """Where the image's parts are on this host, and their versions (the image's name)."""

    java_home: Path
    java_version: str
    python_prefix: Path
    python: Path
    spark_home: Path
    spark_version: str

    @property
    def tag(self) -> str:
        """The versions, and the recipe's own files (the entrypoint and the relay: a change of either is a new
        image)."""
        py = ".".join(map(str, sys.version_info[:3]))
        return f"{self.spark_version}-java{self.java_version}-py{py}-{recipe()}"

    @property
    def image(self) -> str:
        return f"{REPOSITORY}:{self.tag}"

    @property
    def archive(self) -> Path:
        return images.folder() / f"spark-{self.tag}.tar"


def recipe() -> str:
    """A short digest of the files the image takes from the plugin (its entrypoint and the relay) and of its tools."""
    h = hashlib.sha256(fixture_path("k8s", "spark-entrypoint.py").read_bytes())
    h.update(Path(relay.__file__).read_bytes())
    h.update(" ".join(TOOLS).encode())
    return h.hexdigest()[:8]


def sources(java_home: str | None = None) -> Sources:
    """This host's JDK (``java_home``, else ``JAVA_HOME``, else ``java`` on PATH), Python and pyspark."""
    from pytest_streamchaos.stack.driver.conf import java_env, java_path, spark_home

    java = java_path(java_env(java_home))
    if java is None:
        raise StackError("no java for the Spark image; fix: set JAVA_HOME (Java 17 or 21)")
    home = Path(os.path.realpath(java)).parents[1]
    release = (home / "release").read_text() if (home / "release").is_file() else ""
    version = re.search(r'^JAVA_VERSION="([^"]+)"', release, re.M)
    spark = spark_home()
    import pyspark

    prefix = Path(sys.base_prefix)
    python = prefix / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if not python.is_file():
        raise StackError(f"no {python}: the Spark image takes this Python's own prefix ({prefix})")
    return Sources(home, version.group(1) if version else "unknown", prefix, python, spark, pyspark.__version__)


def is_built(src: Sources | None = None) -> bool:
    """Whether the image of this host's versions is cached."""
    try:
        return (src or sources()).archive.is_file()
    except StackError:
        return False


def archive(src: Sources | None = None) -> Path:
    """The cached image's archive; :class:`StackError` naming ``prepare --k8s`` when it is not built."""
    src = src or sources()
    if not src.archive.is_file():
        raise StackError(f"no Spark image for Kubernetes ({src.image}); fix: run "
                         "`python -m pytest_streamchaos.prepare --k8s` once")
    return src.archive


class _Layer:
    """One layer's tar, written to disk as files are added, each path once; directories made as needed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tar = tarfile.open(path, "w", format=tarfile.PAX_FORMAT)
        self.seen: set[str] = set()

    def _info(self, name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name.lstrip("/"))
        info.type, info.mode, info.mtime, info.uid, info.gid = kind, mode, 0, 0, 0
        return info

    def _parents(self, path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self.directory("/" + "/".join(parts[:i]))

    def directory(self, path: str, mode: int = 0o755) -> None:
        if path in self.seen:
            return
        self._parents(path)
        self.seen.add(path)
        self.tar.addfile(self._info(path, tarfile.DIRTYPE, mode))

    def data(self, path: str, content: bytes, mode: int = 0o644) -> None:
        import io

        self._parents(path)
        self.seen.add(path)
        info = self._info(path, tarfile.REGTYPE, mode)
        info.size = len(content)
        self.tar.addfile(info, io.BytesIO(content))

    def host(self, path: str) -> None:
        """``path`` as it is on this host: each symbolic link on the way a link here too, its target taken."""
        path = os.path.normpath(path)
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):  # a linked folder on the way (/lib -> usr/lib): the link, then its target
            prefix = "/" + "/".join(parts[:i])
            if os.path.islink(prefix):
                self._link(prefix)
                self.host(os.path.join(os.path.realpath(prefix), *parts[i:]))
                return
        if path in self.seen:
            return
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            self._link(path)
            target = os.path.join(os.path.dirname(path), os.readlink(path))
            if os.path.exists(target):
                self.host(target)
        elif stat.S_ISDIR(st.st_mode):
            self.directory(path, stat.S_IMODE(st.st_mode))
        elif stat.S_ISREG(st.st_mode):
            self._parents(path)
            self.seen.add(path)
            info = self._info(path, tarfile.REGTYPE, stat.S_IMODE(st.st_mode))
            info.size = st.st_size
            with open(path, "rb") as f:
                self.tar.addfile(info, f)

    def _link(self, path: str) -> None:
        if path in self.seen:
            return
        self._parents(path)
        self.seen.add(path)
        info = self._info(path, tarfile.SYMTYPE, 0o777)
        info.linkname = os.readlink(path)
        self.tar.addfile(info)

    def tree(self, root: Path, skip: Iterable[str] = ()) -> list[str]:
        """Every file and link under ``root`` but the ``skip`` ones (paths relative to it); the ELF files."""
        skip = tuple(skip)
        elves = []
        for folder, dirs, files in os.walk(root):
            rel = os.path.relpath(folder, root)
            dirs[:] = sorted(d for d in dirs if os.path.normpath(os.path.join(rel, d)) not in skip)
            if os.path.islink(folder):
                continue
            self.host(folder)
            for name in sorted(files):
                full = os.path.join(folder, name)
                if os.path.normpath(os.path.join(rel, name)) in skip or not os.path.lexists(full):
                    continue
                if os.path.islink(full) and not os.path.exists(full):
                    continue  # a dangling link (Debian's JDK links optional GUI libraries)
                self.host(full)
                if not os.path.islink(full) and _is_elf(full):
                    elves.append(full)
            for d in dirs:  # a linked folder is taken as a link (and its target by host())
                if os.path.islink(os.path.join(folder, d)):
                    self.host(os.path.join(folder, d))
        return elves

    def close(self) -> tuple[str, int]:
        """Finish the tar; its digest and size."""
        self.tar.close()
        return _file_digest(self.path), self.path.stat().st_size


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def shared_libraries(elves: list[str]) -> list[str]:
    """The host's shared libraries (and the loader) that ``elves`` need, as ``ldd`` resolves them."""
    found: set[str] = set()
    for i in range(0, len(elves), 200):
        out = commands.completed(["ldd", *elves[i:i + 200]], timeout=120, error=StackError).stdout
        for line in out.splitlines():
            m = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(0x", line)
            if m:
                found.add(m.group(1))
    return sorted(found)


def build(line: Callable[[str], None] = print, src: Sources | None = None) -> Path:
    """The image's archive of this host's versions, built now when it is not cached (see the module docstring)."""
    src = src or sources()
    if src.archive.is_file():
        return src.archive
    commands.need("ldd", "apt-get install libc-bin", StackError)
    images.folder().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=images.folder()) as tmp:
        work = Path(tmp)
        elves: list[str] = []
        layers: list[tuple[Path, str, int]] = []

        def layer(name: str, fill: Callable[[_Layer], None]) -> None:
            lay = _Layer(work / f"{name}.tar")
            fill(lay)
            digest, size = lay.close()
            layers.append((lay.path, digest, size))
            line(f"prepare: Spark image layer {name}: {size / 1e6:.0f} MB")

        layer("jdk", lambda lay: elves.extend(lay.tree(src.java_home, _JDK_SKIP)))

        def python(lay: _Layer) -> None:
            lay.host(str(src.python))
            lib = src.python_prefix / "lib"
            for so in sorted(lib.iterdir()):
                if so.name.startswith("libpython"):
                    lay.host(str(so))
            stdlib = lib / f"python{sys.version_info[0]}.{sys.version_info[1]}"
            elves.extend([str(src.python), *lay.tree(stdlib, _STDLIB_SKIP)])
            site = src.spark_home.parent
            elves.extend(lay.tree(site / "py4j"))
            for dist in sorted(site.iterdir()):  # their metadata: importlib.metadata finds them
                if dist.name.startswith(("pyspark-", "py4j-")) and dist.name.endswith(".dist-info"):
                    lay.tree(dist)

        layer("python", python)
        layer("spark", lambda lay: elves.extend(lay.tree(src.spark_home, ("examples", "data", "licenses"))))

        def base(lay: _Layer) -> None:
            for path in shared_libraries([*elves, *TOOLS]):
                lay.host(path)
            for tool in TOOLS:
                lay.host(tool)
            lay.data("/etc/passwd", b"root:x:0:0:root:/root:/sbin/nologin\nspark:x:185:185:spark:/opt/spark:"
                     b"/sbin/nologin\n")
            lay.data("/etc/group", b"root:x:0:\nspark:x:185:\n")
            lay.directory("/tmp", 0o1777)
            lay.directory("/opt/spark/work-dir", 0o777)
            lay.data(ENTRYPOINT, fixture_path("k8s", "spark-entrypoint.py").read_bytes(), 0o755)
            lay.data(str(Path(ENTRYPOINT).parent / "relay.py"), Path(relay.__file__).read_bytes())

        layer("base", base)
        images.write_layered_archive(src.archive, src.image, [(p, d, s) for p, d, s in layers],
                                     _config(src, [d for _, d, _ in layers]))
    line(f"prepare: Spark image {src.image}: {src.archive} ({src.archive.stat().st_size / 1e6:.0f} MB)")
    for old in superseded(src):
        old.unlink()
        line(f"prepare: removed the superseded Spark image {old.name}")
    return src.archive


def _config(src: Sources, diff_ids: list[str]) -> dict[str, object]:
    """The image's OCI config: the entrypoint in the image's Python, the JDK, Python and Spark at their host paths."""
    return {"architecture": images.ARCH.get(platform.machine(), platform.machine()), "os": "linux",
            "config": {"Entrypoint": [str(src.python), ENTRYPOINT], "WorkingDir": "/opt/spark/work-dir",
                       "Env": [f"PATH={src.java_home}/bin:{src.python.parent}:/usr/bin:/bin",
                               f"JAVA_HOME={src.java_home}", f"SPARK_HOME={src.spark_home}", "LANG=C.UTF-8"]},
            "rootfs": {"type": "layers", "diff_ids": diff_ids}}


def superseded(src: Sources) -> list[Path]:
    """The cached images of this host's versions but an older recipe: ~880 MB each, never loaded again (a cluster
    imports the current recipe's only)."""
    stem = f"spark-{src.tag.rsplit('-', 1)[0]}-"  # the tag without its recipe
    return [p for p in src.archive.parent.glob(f"{stem}*.tar") if p != src.archive]
