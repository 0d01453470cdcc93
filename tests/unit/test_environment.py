"""Preflight checks: a broken environment fails with one clear line, before anything starts."""

from __future__ import annotations

import os
import socket
import stat

import psutil
import pytest

from pytest_streamchaos.machine import environment
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.local import LocalSparkCluster


def _my_children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_bad_java_home_names_problem_and_fix(tmp_path):
    before = _my_children()
    cluster = LocalSparkCluster(tmp_path, java_home=str(tmp_path / "no-jdk"))
    with pytest.raises(StackError) as info:
        cluster.start()
    msg = str(info.value)
    assert "java not found" in msg and "streamchaos_java_home" in msg
    assert "apt-get install openjdk-17-jre-headless" in msg and "\n" not in msg
    assert cluster.processes() == []
    assert _my_children() - before == set()  # nothing was started


def test_java_home_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(StackError, match="JAVA_HOME="):
        environment.find_java("")


def _fake_java(tmp_path, version_line: str):
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    return home


def test_old_java_rejected(tmp_path):
    home = _fake_java(tmp_path, 'openjdk version "11.0.2" 2019-01-15')
    with pytest.raises(StackError, match=r"Java 11, the stack needs Java 17 or 21"):
        environment.check_spark_environment(str(home))


def test_java8_version_parsed(tmp_path):
    home = _fake_java(tmp_path, 'java version "1.8.0_292"')
    assert environment.java_version(home / "bin" / "java") == 8


def test_real_java_accepted():
    env = environment.check_spark_environment()
    assert env.java_version >= 17
    assert (env.spark_home / "bin" / "spark-class").is_file()
    assert os.access(env.java, os.X_OK)


def test_port_clash_names_the_port(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cluster = LocalSparkCluster(tmp_path, fixed_ports={"master-0.webui": port})
        with pytest.raises(StackError, match=rf"port clash: master-0.webui={port} already in use"):
            cluster.start()
        assert cluster.processes() == []


def test_missing_pyarrow(monkeypatch):
    real = environment.importlib.util.find_spec
    monkeypatch.setattr(environment.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    with pytest.raises(StackError, match="pyarrow is not installed; fix: pip install"):
        environment.check_pyarrow()


def test_missing_pyspark(monkeypatch):
    real = environment.importlib.util.find_spec
    monkeypatch.setattr(environment.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyspark" else real(name, *a))
    with pytest.raises(StackError, match="pyspark is not installed"):
        environment.find_spark_home()


@pytest.mark.parametrize(("spark", "python", "have", "fails"), [
    ("3.5.7", (3, 12), False, True),   # pyspark 3.5 imports distutils; Python 3.12 has none
    ("3.5.7", (3, 12), True, False),   # setuptools provides it
    ("3.5.7", (3, 11), False, False),  # the standard library still has it
    ("4.2.0", (3, 12), False, False),  # pyspark 4 does not import it
])
def test_pyspark35_on_python312_needs_distutils(spark, python, have, fails):
    problem = environment.distutils_problem(spark, python, have)
    assert (problem is not None) == fails
    if fails:
        assert "pip install setuptools" in problem and "\n" not in problem
