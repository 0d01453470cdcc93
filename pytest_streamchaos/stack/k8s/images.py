"""The cluster's images, built here with no registry: one-layer OCI archives that ``ctr images import`` loads.

The pause image (every pod's sandbox) is Kubernetes' own ``build/pause/linux/pause.c`` from the module cache,
compiled static with gcc; the archive (``oci-layout``, ``index.json``, the blobs: an uncompressed layer tar,
the config, the manifest) is written here, byte for byte the same for the same binary. Cached in
``<cache>/k8s/v<version>/images/``, rebuilt when missing.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.k8s import build

#: the sandbox image's name in containerd (never pulled: kubelet and the CRI plugin find it imported)
PAUSE_IMAGE = "streamchaos.local/pause:3.10"
#: the pause binary's name in its image (not the ``pause`` fault's: the image's own name says it)
PAUSE_BINARY = PAUSE_IMAGE.rsplit("/", 1)[1].split(":")[0]
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def folder() -> Path:
    return build.folder() / "images"


def pause_source() -> Path:
    """``build/pause/linux/pause.c`` of the Kubernetes module that :mod:`.build` downloaded."""
    gomodcache = commands.run(["go", "env", "GOMODCACHE"], timeout=60, error=StackError).strip()
    path = Path(gomodcache) / f"k8s.io/kubernetes@v{build.KUBERNETES_VERSION}/build/pause/linux/pause.c"
    if not path.is_file():
        raise StackError(f"no {path}; fix: run `python -m pytest_streamchaos.prepare --for k8s` (it downloads "
                         f"the Kubernetes module)")
    return path


def pause_archive() -> Path:
    """The pause image's OCI archive, built first when missing (a static gcc build of pause.c)."""
    archive = folder() / "pause.tar"
    if archive.is_file():
        return archive
    gcc = commands.need("gcc", "apt-get install gcc libc6-dev (the pause image is compiled static)", StackError)
    folder().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder()) as tmp:
        binary = Path(tmp) / PAUSE_BINARY
        commands.run([gcc, "-Os", "-static", "-DVERSION=3.10-streamchaos", "-o", str(binary), str(pause_source())],
                     timeout=120, fix="apt-get install gcc libc6-dev", error=StackError)
        commands.run(["strip", str(binary)], timeout=60, error=StackError)
        write_archive(archive, PAUSE_IMAGE, {PAUSE_BINARY: binary.read_bytes()}, entrypoint=[f"/{PAUSE_BINARY}"])
    return archive


def write_archive(path: Path, name: str, files: Mapping[str, bytes], *, entrypoint: Sequence[str]) -> None:
    """An OCI image archive at ``path`` named ``name``: one layer holding ``files`` (path in the image ->
    content, each executable), run as ``entrypoint``. Written whole or not at all."""
    layer = _tar({p: (0o755, data) for p, data in sorted(files.items())})
    layer_digest = _digest(layer)
    config = _json({"architecture": ARCH.get(platform.machine(), platform.machine()), "os": "linux",
                    "config": {"Entrypoint": list(entrypoint), "WorkingDir": "/"},
                    "rootfs": {"type": "layers", "diff_ids": [layer_digest]}})
    manifest = _json({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": _descriptor("application/vnd.oci.image.config.v1+json", config),
                      "layers": [_descriptor("application/vnd.oci.image.layer.v1.tar", layer)]})
    tag = name.rsplit(":", 1)[1]
    index = _json({"schemaVersion": 2, "manifests": [{
        **_descriptor("application/vnd.oci.image.manifest.v1+json", manifest),
        "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag}}]})
    blobs = {f"blobs/sha256/{_digest(b).split(':')[1]}": b for b in (layer, config, manifest)}
    entries = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": index, **blobs}
    partial = path.with_suffix(".partial")
    partial.write_bytes(_tar({p: (0o644, data) for p, data in entries.items()}))
    os.replace(partial, path)


def write_layered_archive(path: Path, name: str, layers: Sequence[tuple[Path, str, int]], config: dict) -> None:
    """An OCI image archive at ``path`` named ``name`` of ``layers`` (each an uncompressed layer tar on disk, its
    digest and size, base first) and the image ``config`` (its ``rootfs`` naming those digests). The layers are
    copied in from disk, never held in memory. Written whole or not at all."""
    config_bytes = _json(config)
    manifest = _json({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": _descriptor("application/vnd.oci.image.config.v1+json", config_bytes),
                      "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": digest,
                                  "size": size} for _, digest, size in layers]})
    annotations = {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}
    index = _json({"schemaVersion": 2, "manifests": [{
        **_descriptor("application/vnd.oci.image.manifest.v1+json", manifest), "annotations": annotations}]})
    partial = path.with_suffix(".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for arcname, data in (("oci-layout", _json({"imageLayoutVersion": "1.0.0"})), ("index.json", index),
                              (_blob(config_bytes), config_bytes), (_blob(manifest), manifest)):
            info = tarfile.TarInfo(arcname)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
        for layer, digest, size in layers:
            info = tarfile.TarInfo(f"blobs/sha256/{digest.split(':')[1]}")
            info.size, info.mode, info.mtime = size, 0o644, 0
            with open(layer, "rb") as f:
                tar.addfile(info, f)
    os.replace(partial, path)


def _blob(data: bytes) -> str:
    return f"blobs/sha256/{_digest(data).split(':')[1]}"


def _tar(files: Mapping[str, tuple[int, bytes]]) -> bytes:
    """A reproducible tar (no owner, no time) of ``files``: path -> (mode, content)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, (mode, data) in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _descriptor(media_type: str, data: bytes) -> dict:
    return {"mediaType": media_type, "digest": _digest(data), "size": len(data)}

