"""The documentation site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``, and the build is a check:
a broken link or anchor, or a page under docs/ left out of the nav, fails it -- proven on a copy of the docs
with one of each planted. The README is not a page of the site, so its links into docs/ are checked here.
No network: MkDocs, Material and mkdocstrings build from what is installed (the ``docs`` extra)."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

for _module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
    pytest.importorskip(_module, reason="the docs extra is not installed: pip install -e '.[docs]' (./dev test does)")

import pytest_streamchaos  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_LINK = re.compile(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)")


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of ``config`` into ``site``, documenting this tree's package."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, on every build
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=600)


def page(site: Path, doc: str) -> Path:
    """The built HTML of ``docs/<doc>`` (MkDocs' directory URLs: ``x.md`` -> ``x/index.html``)."""
    stem = doc.removesuffix(".md")
    return site / ("index.html" if stem == "index" else f"{stem}/index.html")


def sources() -> list[str]:
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "_hooks" not in p.parts)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_the_site_builds_strict_with_every_page_of_docs(site: Path) -> None:
    missing = [doc for doc in sources() if not page(site, doc).is_file()]
    assert not missing, f"pages of docs/ the build did not write: {missing}"
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(re.search(rf":\s+{re.escape(doc)}\s*$", nav, re.M) for doc in sources()), "every page is in the nav"


def test_the_api_reference_documents_every_export(site: Path) -> None:
    html = page(site, "api.md").read_text()
    undocumented = [name for name in pytest_streamchaos.__all__
                    if f'id="{name}"' not in html and not re.search(rf'id="[\w.]+\.{re.escape(name)}"', html)
                    and f"<code>{name}</code>" not in html]
    assert not undocumented, f"names pytest_streamchaos exports that the API page lacks: {undocumented}"
    marks = importlib.import_module("pytest_streamchaos.faults.marks").DECORATORS
    assert all(f"<code>{name}</code>" in html for name in marks), "every fault mark has its row"
    # a class's docstring, its members and its signature are there (mkdocstrings read them)
    assert 'id="pytest_streamchaos.runner.groups.JobSetup"' in html and "stale_checkpoint" in html
    assert 'id="pytest_streamchaos.analysis.result.ChaosRun.assert_sla"' in html
    assert ":class:`" not in html, "Sphinx roles are shown as code (docs/_hooks/griffe_roles.py)"


def test_the_changelog_page_shows_the_changelog(site: Path) -> None:
    html = page(site, "changelog.md").read_text()
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert versions and all(v in html for v in versions)


def test_the_readme_is_a_front_page_whose_links_into_docs_resolve(site: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200, "the README is a front page (<= 200 lines); the manual is docs/"
    assert "./dev test" in readme and "./dev demo" in readme, "CI runs the README's test command"
    links = README_LINK.findall(readme)
    assert len(links) >= 10, "the README's 'Where to go next' links into the site"
    for target, anchor in links:
        doc = target.removeprefix("docs/")
        assert (DOCS / doc).is_file(), f"README links to {target}, which does not exist"
        if anchor:
            assert f'id="{anchor}"' in page(site, doc).read_text(), f"README links to {target}#{anchor}: no such anchor"


def test_a_broken_link_a_missing_anchor_or_a_page_left_out_of_the_nav_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    copy.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    shutil.copy(ROOT / "CHANGELOG.md", copy / "CHANGELOG.md")
    shutil.copytree(DOCS, copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "pytest_streamchaos").symlink_to(ROOT / "pytest_streamchaos")
    # the copy's API page without its generated reference (mkdocstrings reading the package: most of a build's
    # time), its one anchor kept; the validation is the real one, and the real API page is built above
    api = copy / "docs" / "api.md"
    api.write_text(re.sub(r"<!-- api: .*?<!-- /api -->", "## Fault marks", api.read_text(), flags=re.S))
    limits = copy / "docs" / "limits.md"
    limits.write_text(limits.read_text() + "\n[planted](no-such-page.md), [planted too](metrics.md#no-such-anchor)\n")
    (copy / "docs" / "planted-orphan.md").write_text("# A page nobody put in the nav\n")

    done = build(copy / "mkdocs.yml", tmp_path / "site")

    out = done.stdout + done.stderr
    assert done.returncode != 0, f"the build passed with a broken link, a missing anchor and an orphan page:\n{out}"
    assert "Aborted with 3 warnings in strict mode" in out, out
    assert "'no-such-page.md'" in out and "'#no-such-anchor'" in out and "planted-orphan.md" in out, out
