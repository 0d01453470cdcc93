"""The Spark image of the pods (issue 51), built from this host's files with no registry: a layer keeps the
host's symbolic links as links and takes their targets, the archive's index, manifest and config agree with
the layers' digests, and the entrypoint turns the environment Spark's executor pods get into the executor's
command, as Spark's own entrypoint.sh does. No container runs here (the slow test runs the image)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tarfile
from pathlib import Path

import pytest

from pytest_streamchaos.assets import fixture_path
from pytest_streamchaos.stack.k8s import images, spark_image


def _members(path: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_a_layer_keeps_links_as_links_and_takes_their_targets(tmp_path: Path) -> None:
    real = tmp_path / "etc" / "java"
    real.mkdir(parents=True)
    (real / "net.properties").write_text("x=1\n")
    jdk = tmp_path / "jdk"
    (jdk / "conf").mkdir(parents=True)
    os.symlink(real / "net.properties", jdk / "conf" / "net.properties")  # absolute, out of the tree
    os.symlink(tmp_path / "nowhere", jdk / "conf" / "dangling")
    (jdk / "bin").mkdir()
    (jdk / "bin" / "java").write_bytes(b"\x7fELF" + b"\0" * 12)
    (jdk / "bin" / "java").chmod(0o755)
    os.symlink("bin", jdk / "linked")  # a linked folder
    lay = spark_image._Layer(tmp_path / "layer.tar")
    elves = lay.tree(jdk)
    lay.close()
    m = _members(tmp_path / "layer.tar")
    rel = str(jdk).lstrip("/")
    assert m[f"{rel}/conf/net.properties"].issym() and m[f"{rel}/conf/net.properties"].linkname == str(
        real / "net.properties")
    assert m[f"{str(real).lstrip('/')}/net.properties"].isfile(), "the link's target is in the layer too"
    assert f"{rel}/conf/dangling" not in m, "a dangling link is left out"
    assert m[f"{rel}/linked"].issym() and m[f"{rel}/bin/java"].mode == 0o755
    assert elves == [str(jdk / "bin" / "java")]
    assert all(i.mtime == 0 and i.uid == 0 for i in m.values()), "reproducible: no times, no owners"


def test_the_archive_names_its_layers_by_their_digests(tmp_path: Path) -> None:
    layers = []
    for name in ("a", "b"):
        lay = spark_image._Layer(tmp_path / f"{name}.tar")
        lay.data(f"/opt/{name}", name.encode())
        digest, size = lay.close()
        assert digest == "sha256:" + hashlib.sha256((tmp_path / f"{name}.tar").read_bytes()).hexdigest()
        layers.append((tmp_path / f"{name}.tar", digest, size))
    config = {"architecture": "amd64", "os": "linux",
              "rootfs": {"type": "layers", "diff_ids": [d for _, d, _ in layers]}}
    out = tmp_path / "image.tar"
    images.write_layered_archive(out, "streamchaos.local/spark:t", layers, config)
    with tarfile.open(out) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
        entry = index["manifests"][0]
        assert entry["annotations"]["io.containerd.image.name"] == "streamchaos.local/spark:t"
        manifest = json.load(tar.extractfile(f"blobs/sha256/{entry['digest'].split(':')[1]}"))  # type: ignore[arg-type]
        assert [x["digest"] for x in manifest["layers"]] == config["rootfs"]["diff_ids"]
        for x in manifest["layers"]:
            blob = tar.extractfile(f"blobs/sha256/{x['digest'].split(':')[1]}").read()  # type: ignore[union-attr]
            assert len(blob) == x["size"] and "sha256:" + hashlib.sha256(blob).hexdigest() == x["digest"]


def test_the_image_is_keyed_by_the_versions(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    src = spark_image.Sources(tmp_path, "17.0.15", tmp_path, tmp_path / "python3.11", tmp_path, "4.2.0")
    assert src.image.startswith("streamchaos.local/spark:4.2.0-java17.0.15-py3.")
    assert src.tag.endswith(f"-{spark_image.recipe()}") and len(spark_image.recipe()) == 8
    assert src.archive.name == f"spark-{src.tag}.tar"
    monkeypatch.setattr(images, "folder", lambda: tmp_path / "images")
    with pytest.raises(Exception, match=r"python -m pytest_streamchaos\.prepare --k8s"):
        spark_image.archive(src)


def test_an_older_recipes_image_of_the_same_versions_is_superseded(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(images, "folder", lambda: tmp_path)
    src = spark_image.Sources(tmp_path, "17.0.15", tmp_path, tmp_path / "python3.11", tmp_path, "4.2.0")
    stem = src.archive.name[: -len(f"{spark_image.recipe()}.tar")]
    older, other_java = tmp_path / f"{stem}00000000.tar", tmp_path / "spark-4.2.0-java21.0.1-py3.11.7-00000000.tar"
    for p in (src.archive, older, other_java, tmp_path / "pause.tar"):
        p.write_bytes(b"")
    assert spark_image.superseded(src) == [older]


def _entrypoint(monkeypatch: pytest.MonkeyPatch):
    """The entrypoint as the image runs it: ``relay.py`` beside it (here the package's own, as the image copies)."""
    from pytest_streamchaos.stack.k8s import relay

    monkeypatch.setitem(sys.modules, "relay", relay)
    spec = importlib.util.spec_from_file_location("spark_entrypoint", fixture_path("k8s", "spark-entrypoint.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_entrypoint_builds_the_executors_command_as_spark_does(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"JAVA_HOME": "/jdk", "SPARK_HOME": "/spark", "SPARK_EXECUTOR_MEMORY": "512m",
           "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@10.244.0.1:4040", "SPARK_EXECUTOR_ID": "3",
           "SPARK_EXECUTOR_CORES": "1", "SPARK_APPLICATION_ID": "spark-abc", "SPARK_EXECUTOR_POD_IP": "10.244.0.7",
           "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_EXECUTOR_POD_NAME": "orders-exec-3",
           "SPARK_JAVA_OPT_10": "-Dlast", "SPARK_JAVA_OPT_2": "-Dsecond", "SPARK_JAVA_OPT_0": "-Dfirst"}
    monkeypatch.setattr(os, "environ", env)
    cmd = _entrypoint(monkeypatch).executor_command()
    assert cmd[:4] == ["/jdk/bin/java", "-Dfirst", "-Dsecond", "-Dlast"], "SPARK_JAVA_OPT_<n> in numeric order"
    assert cmd[cmd.index("-cp") + 1] == "/spark/jars/*"
    assert cmd[cmd.index("--hostname") + 1] == "10.244.0.7" and cmd[cmd.index("--executor-id") + 1] == "3"
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in cmd


def test_k8s_before_prepare_is_refused_in_one_line_naming_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from pytest_streamchaos.stack.k8s import build, cluster, preflight

    settings = SimpleNamespace(spark="k8s", java_home="")
    monkeypatch.setattr(build, "is_built", lambda: False)
    line = preflight.preflight(settings)  # type: ignore[arg-type]
    assert line == ("--chaos-spark=k8s: Kubernetes is not built; fix: run `python -m pytest_streamchaos.prepare "
                    "--k8s` once")
    monkeypatch.setattr(cluster, "missing", lambda: None)
    monkeypatch.setattr(spark_image, "is_built", lambda src=None: False)
    assert preflight.preflight(settings) == ("--chaos-spark=k8s: the Spark image for Kubernetes is not built; fix: "  # type: ignore[arg-type]
                                             "run `python -m pytest_streamchaos.prepare --k8s` once")
    assert preflight.preflight(SimpleNamespace(spark="standalone", java_home="")) is None  # type: ignore[arg-type]
