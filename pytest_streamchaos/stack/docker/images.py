"""The images of the docker backend, built on this machine with no pull.

No registry may be reachable (CI machines behind a proxy, this project's own), so the default images
are built locally from what the host already has: a root of a few kilobytes (``fixtures/docker/``:
the symlinks of a merged-/usr Debian layout and a minimal ``/etc``) imported with ``docker import``,
and, at run time, the host's ``/usr`` (libc, the JDK), its Python installation (pyspark, the
plugin, confluent-kafka) and the plugin's cache mounted read-only at the same paths. A container
therefore runs exactly the Java, Spark and Python the driver on the host runs - what Spark needs
anyway (the executors' Python must match the driver's) - and the image is rebuilt only when the
recipe changes.

Such a container needs the daemon on this host (bind mounts of host paths). A remote daemon
(``DOCKER_HOST``) needs images that carry all of it: docs/docker-backend.md, "Beyond one machine".
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_streamchaos.assets import cache_dir, fixture_path
from pytest_streamchaos.stack.base import StackError

if TYPE_CHECKING:  # docker-py: imported when the backend is used; untyped (mypy reads it as Any)
    from docker import DockerClient

REPO = "pytest-streamchaos/host-runtime"
#: /etc files the JVM and Python read (users for user.home, name service order); copied, not mounted,
#: so that Docker's own /etc/hosts and /etc/resolv.conf stay the container's
ETC_FILES = ("passwd", "group", "nsswitch.conf")
#: the folder holding the package (this file is pytest_streamchaos/stack/docker/images.py)
PACKAGE_ROOT = Path(__file__).resolve().parents[3]


def _recipe() -> dict[str, bytes]:
    """The files of the root: ``fixtures/docker/host-runtime/`` plus the host's :data:`ETC_FILES`."""
    files = {}
    recipe = fixture_path("docker", "host-runtime", "layout.txt")
    files["layout.txt"] = recipe.read_bytes()
    for name in ETC_FILES:
        p = Path("/etc") / name
        if p.is_file():
            files[f"etc/{name}"] = p.read_bytes()
    return files


def _root_tar(files: dict[str, bytes]) -> bytes:
    """The image's root as a tar: directories and symlinks from ``layout.txt``, then ``files``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for line in files["layout.txt"].decode().splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            kind, name, *rest = line.split()
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, int(rest[0], 8) if rest else 0o755
            elif kind == "link":
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, rest[0], 0o777
            else:
                raise StackError(f"fixtures/docker/host-runtime/layout.txt: unknown entry {kind!r}")
            tar.addfile(info)
        for name, data in files.items():
            if name.startswith("etc/"):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def host_runtime_image(client: DockerClient) -> str:
    """The local runtime image's tag, built (``docker import``) if this recipe was never built."""
    files = _recipe()
    key = hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(files.items()))).hexdigest()[:12]
    tag = f"{REPO}:{key}"
    if not client.images.list(name=tag):
        client.api.import_image_from_data(_root_tar(files), repository=REPO, tag=key,
                                          changes=["WORKDIR /", "ENV LANG=C.UTF-8"])
        if not client.images.list(name=tag):
            raise StackError(f"docker import of {tag} left no image; see the daemon's log")
    return tag


def _java_conf_dirs(java_home: Path) -> set[str]:
    """Directories outside /usr that the JDK's ``conf`` links into (Debian: /etc/java-17-openjdk)."""
    dirs = set()
    conf = java_home / "conf"
    for p in conf.rglob("*") if conf.is_dir() else []:
        if p.is_symlink():
            target = Path(os.path.realpath(p))
            if not str(target).startswith("/usr/") and target.parts[1:2] == ("etc",):
                dirs.add(str(Path(*target.parts[:3])))
    return dirs


def host_mounts(java_home: Path, rw: tuple[str, ...] = (), ro_extra: tuple[str, ...] = ()) -> dict[str, dict[str, str]]:
    """docker-py ``volumes``: the host's ``/usr``, Python, the plugin, the JDK's config and the plugin's
    cache read-only at the same paths, and ``ro_extra`` (the user's project: modules a job imports);
    ``rw`` (scratch and checkpoint directories) writable."""
    # never "/" (a rootdir at the top would hide the image's own root)
    ro = {"/usr", sys.base_prefix, sys.prefix, str(cache_dir()), *(str(p) for p in ro_extra if str(p) != "/")}
    ro.add(str(PACKAGE_ROOT))  # an editable install's source
    if not str(java_home).startswith("/usr/"):
        ro.add(str(java_home))
    ro |= _java_conf_dirs(java_home)
    mounts = {p: {"bind": p, "mode": "ro"} for p in sorted(_outermost(ro - {os.path.realpath(r) for r in rw}))
              if os.path.exists(p)}
    for p in rw:
        Path(p).mkdir(parents=True, exist_ok=True)
        mounts[str(p)] = {"bind": str(p), "mode": "rw"}
    return mounts


def _outermost(paths: set[str]) -> set[str]:
    """Drop paths inside another one of ``paths`` (one mount covers them)."""
    norm = {os.path.realpath(p) for p in paths}
    return {p for p in norm if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in norm)}


def image_present(client: DockerClient, ref: str) -> bool:
    """Whether ``ref`` is here, or can be pulled now (a registry that does not answer: False)."""
    if client.images.list(name=ref):
        return True
    try:
        client.images.pull(ref)
    except Exception:
        return False
    return True


def resolve(client: DockerClient, ref: str = "") -> str:
    """The image to run: ``ref`` (``--chaos-docker-image``) when it is here or can be pulled, else a
    :class:`StackError` naming the fix; without ``ref`` the local runtime image (built if needed)."""
    if not ref:
        return host_runtime_image(client)
    if not image_present(client, ref):
        raise StackError(f"image {ref!r} is not on this Docker host and cannot be pulled; fix: docker pull or "
                         "docker load it, or unset --chaos-docker-image / ini streamchaos_docker_image to use the "
                         "image built on this machine")
    return ref
