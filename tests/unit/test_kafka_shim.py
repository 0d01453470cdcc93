"""The kafka.DefaultSource shim jar: built from source, cached by key, never a DataSourceRegister service."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from pytest_streamchaos.spark import kafka_shim
from pytest_streamchaos.spark.kafka_shim import KafkaShimError, cache_key, kafka_shim_jar

needs_javac = pytest.mark.skipif(shutil.which("javac") is None, reason="no javac (apt-get install "
                                 "openjdk-17-jdk-headless)")


@needs_javac
def test_jar_holds_only_the_class_and_no_service_file(tmp_path: Path):
    jar = kafka_shim_jar(tmp_path)
    names = zipfile.ZipFile(jar).namelist()
    assert "kafka/DefaultSource.class" in names
    # A DataSourceRegister service would shadow Spark's real connector wherever a user has it.
    assert not [n for n in names if n.startswith("META-INF/services")]
    assert kafka_shim_jar(tmp_path) == jar  # cached: same key, same file, no rebuild


@needs_javac
def test_changed_source_builds_a_new_jar(tmp_path: Path, monkeypatch):
    src = tmp_path / "src"
    shutil.copytree(kafka_shim.SHIM_SOURCE_DIR, src)
    monkeypatch.setattr(kafka_shim, "SHIM_SOURCE_DIR", src)
    first = kafka_shim_jar(tmp_path / "cache")
    java = src / "kafka" / "DefaultSource.java"
    java.write_text(java.read_text() + "\n// changed\n")
    second = kafka_shim_jar(tmp_path / "cache")
    assert second != first and first.is_file() and second.is_file()
    assert not list((tmp_path / "cache").glob(".build-*"))  # the build directory is gone


def test_cache_key_changes_with_source_spark_and_javac():
    base = cache_key(b"class A {}", "4.3.0", "javac 17.0.15")
    assert base == cache_key(b"class A {}", "4.3.0", "javac 17.0.15")
    assert len({base, cache_key(b"class B {}", "4.3.0", "javac 17.0.15"),
                cache_key(b"class A {}", "4.3.1", "javac 17.0.15"),
                cache_key(b"class A {}", "4.3.0", "javac 21.0.1")}) == 4


def test_missing_javac_names_the_fix(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaShimError, match="apt-get install openjdk-17-jdk-headless"):
        kafka_shim_jar(tmp_path)
