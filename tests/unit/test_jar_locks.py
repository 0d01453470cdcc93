"""Pinned jar sets come from their lock: every jar of the closure downloaded in parallel and checked
against its SHA-256, instead of Ivy walking the POMs one request after another (no JVM here: a local
repository serves synthetic jars)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_streamchaos.machine import artifacts

SET = artifacts.JarSet("demo-1.0", "Demo 1.0", ("org.example:demo:1.0",), frozenset({"shipped"}))
JARS = {f"org/example/{name}/1.0/{name}-1.0.jar": f"the bytes of {name}".encode() for name in
        ("demo", "helper", "shipped")}


@pytest.fixture
def lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    locks = tmp_path / "locks"
    locks.mkdir()
    monkeypatch.setattr(artifacts, "LOCKS", locks)
    entries = [{"file": path.rsplit("/", 1)[1], "path": path, "size": len(body),
                "sha256": hashlib.sha256(body).hexdigest()} for path, body in JARS.items()]
    (locks / "demo-1.0.json").write_text(json.dumps({"coordinates": list(SET.coordinates), "jars": entries}))
    return locks / "demo-1.0.json"


def test_a_locked_set_is_downloaded_checked_and_then_offline(maven_repo, lock: Path) -> None:
    maven_repo.files.update(JARS)
    lines: list[str] = []
    jars = artifacts.resolve(SET, lines.append, java="/nonexistent/java")  # no JVM needed
    assert sorted(p.name for p in jars) == ["demo-1.0.jar", "helper-1.0.jar"]  # what pyspark ships left out
    assert all(p.read_bytes() == JARS[f"org/example/{p.name[:-8]}/1.0/{p.name}"] for p in jars)
    assert sorted(maven_repo.asked) == sorted(JARS)
    assert lines[-1].startswith("pytest-streamchaos: downloaded Demo 1.0: 3 jars, 0 MB in ")
    maven_repo.stop.set()
    assert artifacts.resolve(SET, lines.append) == jars and len(maven_repo.asked) == 3  # cached: no request
    assert artifacts.is_resolved(SET)


def test_a_jar_that_is_not_the_locked_one_fails_the_set_and_leaves_nothing(maven_repo, lock: Path) -> None:
    maven_repo.files.update(JARS)
    maven_repo.files["org/example/helper/1.0/helper-1.0.jar"] = b"something else"
    with pytest.raises(artifacts.ResolutionError) as err:
        artifacts.resolve(SET, lambda _line: None)
    assert "helper-1.0.jar: its SHA-256" in str(err.value) and "is not the locked" in str(err.value)
    assert "STREAMCHAOS_MAVEN_REPO" in str(err.value)  # the fix
    assert not SET.folder().exists() and not artifacts.is_resolved(SET)


def test_a_missing_jar_is_named(maven_repo, lock: Path) -> None:
    maven_repo.files.update({k: v for k, v in JARS.items() if "demo/" not in k})
    with pytest.raises(artifacts.ResolutionError, match=r"org/example/demo/1\.0/demo-1\.0\.jar: HTTP Error 404"):
        artifacts.resolve(SET, lambda _line: None)


def test_a_lock_of_other_coordinates_is_not_used(lock: Path) -> None:
    assert artifacts.locked(SET) is not None
    assert artifacts.locked(artifacts.JarSet("demo-1.0", "Demo 1.0", ("org.example:demo:1.1",))) is None


@pytest.mark.parametrize("jars", [artifacts.kafka_jars(), artifacts.hadoop_jars(),
                                  artifacts.spark_kafka_connector("4.2.0", "2.13"),
                                  artifacts.spark_kafka_connector("3.5.7", "2.12")], ids=lambda j: j.name)
def test_the_pinned_sets_have_their_lock(jars: artifacts.JarSet) -> None:
    assert jars.name in {j.name for j in artifacts.lockable_sets()}
    """A pinned version changed without its lock would be resolved by Ivy again (slowly): keep them together
    (``python -m pytest_streamchaos.machine.artifacts --lock``)."""
    entries = artifacts.locked(jars)
    assert entries, f"no lock for {jars.coordinates}"
    assert all(e["path"].endswith("/" + e["file"]) and len(e["sha256"]) == 64 for e in entries)
