"""fixtures/: the stack's assets, read by the package, shipped by a normal install, no package code."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos import assets

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def test_found_in_the_source_tree():
    assert assets.fixture_path("spark", "log4j2.properties") == FIXTURES / "spark" / "log4j2.properties"
    assert assets.fixture_path("kafka") == FIXTURES / "kafka"


def test_missing_fixture_names_where_it_looked_and_the_fix():
    with pytest.raises(FileNotFoundError, match=r"fixtures/nope/x.cfg .*not found.*reinstall pytest-streamchaos"):
        assets.fixture_path("nope", "x.cfg")


def test_launcher_and_zookeeper_read_their_templates():
    from pytest_streamchaos.stack.driver import command

    assert command.LOG4J2 == (FIXTURES / "spark" / "log4j2.properties").read_text()
    assert command.LOG4J2.startswith("rootLogger.level = warn\n")
    cfg = assets.read_fixture("zookeeper", "zoo.cfg.template").format(
        tick_ms=500, data_dir="/d", port=2181, host="127.0.0.1", min_session_ms=1000, max_session_ms=4000)
    assert "clientPort=2181\nclientPortAddress=127.0.0.1\n" in cfg and "maxSessionTimeout=4000\n" in cfg


def test_no_python_package_code_in_fixtures():
    """Assets only: no package (a job script run by spark-submit, like fixtures/cds/train.py, or the Spark image's
    entrypoint run inside its pods, fixtures/k8s/spark-entrypoint.py, is an asset)."""
    assert not sorted(FIXTURES.rglob("__init__.py")), "fixtures/ holds assets, not package code"
    scripts = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.py"))
    assert scripts == ["cds/train.py", "k8s/spark-entrypoint.py"], scripts


def test_every_fixture_is_installed_as_a_data_file():
    """A normal install (wheel) ships each file under share/pytest-streamchaos/fixtures/."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    data_files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    shipped = set()
    for target, patterns in data_files.items():
        assert target.startswith(str(assets.SHARE)), target
        for pattern in patterns:
            for path in ROOT.glob(pattern):
                shipped.add(path.relative_to(FIXTURES))
                assert Path(target) / path.name == assets.SHARE / path.relative_to(FIXTURES), (target, path)
    present = {p.relative_to(FIXTURES) for p in FIXTURES.rglob("*") if p.is_file()}
    assert present - shipped == set(), f"add to [tool.setuptools.data-files]: {sorted(map(str, present - shipped))}"
