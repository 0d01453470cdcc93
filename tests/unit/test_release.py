"""What a release promises holds together (docs/deprecations.md): CHANGELOG.md in Keep a Changelog form,
its latest release = pyproject.toml's version = ``pytest_streamchaos.__version__``, the Spark-lines table
(docs/spark-versions.md) = what ./dev and tox install = what the changelog says was tested, every deprecation with its
changelog lines, the licence and the project URLs in the metadata."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import pytest_streamchaos
from pytest_streamchaos.deprecation import MOVED, release

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()
README = (ROOT / "README.md").read_text()
SPARK_VERSIONS = (ROOT / "docs" / "spark-versions.md").read_text()
#: a release's heading: ``## [0.2.0] - 2026-11-27``
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)
KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")


def sections() -> dict[str, str]:
    """The changelog's sections by version (``Unreleased`` too), each its text up to the next one."""
    heads = list(re.finditer(r"^## \[([^\]]+)\].*$", CHANGELOG, re.M))
    ends = [h.start() for h in heads[1:]] + [CHANGELOG.find("\n[Unreleased]:")]
    return {h.group(1): CHANGELOG[h.end():end] for h, end in zip(heads, ends, strict=True)}


def subsection(text: str, kind: str) -> str:
    """One ``### kind`` of a version's section, backticks dropped and lines joined (matched as read)."""
    found = re.search(rf"^### {kind}\n(.*?)(?=^### |\Z)", text, re.M | re.S)
    return " ".join(found.group(1).replace("`", "").split()) if found else ""


def latest() -> str:
    return RELEASE.search(CHANGELOG).group(1)


def test_the_changelog_keeps_an_unreleased_section_on_top_and_releases_newest_first():
    heads = re.findall(r"^## \[([^\]]+)\]", CHANGELOG, re.M)
    assert heads[0] == "Unreleased", "a change lands under ## [Unreleased] (docs/deprecations.md)"
    versions = [(release(v), d) for v, d in RELEASE.findall(CHANGELOG)]
    assert len(versions) == len(heads) - 1, "every other heading is '## [X.Y.Z] - YYYY-MM-DD'"
    assert versions == sorted(versions, reverse=True), "newest first, dates too"
    for version, text in sections().items():
        kinds = re.findall(r"^### (.+)$", text, re.M)
        assert set(kinds) <= set(KINDS), f"[{version}]: Keep a Changelog's kinds only: {kinds}"
        assert len(kinds) == len(set(kinds)), f"[{version}]: one ### section of each kind"
    for version in heads:
        assert re.search(rf"^\[{re.escape(version)}\]: https://", CHANGELOG, re.M), f"no link for [{version}]"


def test_the_changelog_the_metadata_and_version_agree():
    assert PYPROJECT["version"] == latest(), "pyproject.toml's version is the changelog's latest release"
    installed = importlib.metadata.version("pytest-streamchaos")
    assert installed == PYPROJECT["version"], (
        f"the installed metadata says {installed}, pyproject.toml {PYPROJECT['version']}: re-install "
        "(pip install -e . ; ./dev does it when they differ)")
    assert pytest_streamchaos.__version__ == installed


def test_the_spark_lines_table_is_what_is_installed_tested_and_released():
    section = SPARK_VERSIONS[:SPARK_VERSIONS.index("\n## ")]  # the page's opening, up to its first section
    said = re.search(r"pytest-streamchaos (\d+\.\d+\.\d+) runs on", section)
    assert said and said.group(1) == pytest_streamchaos.__version__ == latest()
    rows = re.findall(r"^\| [^|]+ \| (\d+\.\d+\.\d+) \| (2\.1[23]) \| "
                      r"`org\.apache\.spark:spark-sql-kafka-0-10_(2\.1[23]):(\d+\.\d+\.\d+)` \|", section, re.M)
    assert len(rows) == 2, "one row per Spark line"
    assert all(p == c and s == cs for p, s, cs, c in rows), "each line runs on its own connector"
    lines = sorted(p for p, *_ in rows)
    dev = re.search(r"^SPARK_DEFAULT=(\S+)$", (ROOT / "dev").read_text(), re.M).group(1)
    tox = sorted(re.findall(r"spark35: pyspark==(\S+)", (ROOT / "tox.ini").read_text()))  # and !spark35
    assert dev == max(lines, key=release) and tox == lines
    tested = re.search(r"Tested on Spark (\S+) \(the default line\) and (\S+),", " ".join(sections()[latest()].split()))
    assert tested and sorted(tested.groups()) == lines, "the latest release says which Spark lines it was tested on"


def test_every_deprecation_has_its_changelog_lines():
    by_version = sections()
    for moved in MOVED.values():
        if moved.since is not None:  # a deprecation of the coming release is written under [Unreleased]
            where = moved.since if release(moved.since) <= release(latest()) else "Unreleased"
            assert where in by_version, f"{moved.old}: deprecated in {moved.since}, which has no section"
            assert moved.old in subsection(by_version[where], "Deprecated"), (
                f"[{where}] ### Deprecated must name {moved.old}")
        if release(moved.removed_in) <= release(latest()):
            assert moved.old in subsection(by_version[moved.removed_in], "Removed"), (
                f"{moved.old} goes in {moved.removed_in}: [{moved.removed_in}] ### Removed must name it")


def test_licence_classifiers_and_urls_in_the_metadata():
    assert PYPROJECT["license"] == "Apache-2.0" and PYPROJECT["license-files"] == ["LICENSE"]
    assert "Apache License\n                           Version 2.0" in (ROOT / "LICENSE").read_text()
    pythons = [c.rsplit(" :: ", 1)[1] for c in PYPROJECT["classifiers"]
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert pythons and PYPROJECT["requires-python"] == f">={pythons[0]}"
    assert f"Python {pythons[0]}-{pythons[-1]}" in README, "the README names the Python versions classified"
    urls = PYPROJECT["urls"]
    assert {"Homepage", "Repository", "Documentation", "Issues", "Changelog"} <= set(urls)
    assert all(u.startswith(urls["Repository"]) for u in urls.values()), "one home for every URL"
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    assert re.search(rf"^\[Unreleased\]: {re.escape(urls['Repository'])}/compare/", CHANGELOG, re.M)
