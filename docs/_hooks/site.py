"""MkDocs hooks of this site (``hooks:`` in mkdocs.yml): what the pages cannot hold themselves.

- The API reference (docs/api.md) is made from ``pytest_streamchaos.__all__`` when the site is built: a
  class or function exported from the package gets a mkdocstrings block (its docstring, signature and
  members), a fault mark a row of the marks' table (its docstring: a fault kind's decorator is made from
  the registry at import time, so it has no source for mkdocstrings to read). A new export appears
  without a line here; a name that cannot be placed fails the build (strict), naming it.
- docs/changelog.md shows CHANGELOG.md (the file stays at the root, where Keep a Changelog and PyPI
  look for it), its headings one level down and its links into docs/ made relative to the site.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.streamchaos")

#: what the hook replaces on the API page: the marker and the note for readers of the page's source
API_BLOCK = re.compile(r"<!-- api: pytest_streamchaos.__all__ -->.*?<!-- /api -->", re.S)
INCLUDE = re.compile(r"<!-- include: (\S+)[^>]*-->")

#: the sections of the API page, by the module an exported name is defined in (first match wins)
SECTIONS: list[tuple[str, str]] = [
    ("pytest_streamchaos.harness", "What a test receives"),
    ("pytest_streamchaos.analysis.result", "What a test receives"),
    ("pytest_streamchaos.runner", "The arguments of `chaos.run`"),
    ("pytest_streamchaos.workload", "The arguments of `chaos.run`"),
    ("pytest_streamchaos.analysis.oracle", "Oracles and the reference run"),
    ("pytest_streamchaos.analysis.aggregate", "Oracles and the reference run"),
    ("pytest_streamchaos.analysis.reference", "Oracles and the reference run"),
    ("pytest_streamchaos.analysis.checker", "Checkers and the history"),
    ("pytest_streamchaos.history", "Checkers and the history"),
    ("pytest_streamchaos.analysis.metrics", "Metrics: their parameters, and values not measured"),
    ("pytest_streamchaos.exploration", "Searching fault schedules: `@explore`"),
    ("pytest_streamchaos.faults", "Fault specs"),
    ("pytest_streamchaos.usercode", "Errors"),
    ("pytest_streamchaos", "Other"),
]
#: what a test gets back without importing it (the parts of ``chaos.run``'s result a test reads; the fixture's
#: type and the result's are exports): documented beside the exports, once (an export of the same object wins)
RECEIVED = [
    "pytest_streamchaos.analysis.metrics.FaultMetrics",
    "pytest_streamchaos.history.Aim",
    "pytest_streamchaos.facts.RunFacts",
    "pytest_streamchaos.facts.LoadFacts",
    "pytest_streamchaos.facts.StateStoreFacts",
    "pytest_streamchaos.facts.GeneratorStats",
    "pytest_streamchaos.analysis.delay_class.DelayOutcome",
    "pytest_streamchaos.analysis.versus.Versus",
    "pytest_streamchaos.analysis.versus.Overhead",
]
FAULT_MARKS = "pytest_streamchaos.faults.marks"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if API_BLOCK.search(markdown):
        markdown = API_BLOCK.sub(lambda _: api_reference(), markdown)
    root = Path(config.config_file_path).parent
    return INCLUDE.sub(lambda m: included(root / m.group(1)), markdown)


def included(path: Path) -> str:
    """A Markdown file of the repository inside a page: headings one level down, ``docs/x.md`` links as
    the site's ``x.md``."""
    text = path.read_text()
    text = re.sub(r"^(#{1,5}) ", r"#\1 ", text, flags=re.M)
    return re.sub(r"\]\(docs/", "](", text)


def api_reference() -> str:
    """The API page's body: the exported names by section, then the fault marks' table."""
    package = importlib.import_module("pytest_streamchaos")
    marks = importlib.import_module(FAULT_MARKS).DECORATORS
    sections: dict[str, list[str]] = {title: [] for _, title in SECTIONS}
    seen: set[int] = set()
    for name in package.__all__:
        obj = getattr(package, name)
        if name in marks and obj is marks[name]:
            continue
        path = identifier(name, obj, package)
        sections[section_of(path)].append(path)
        seen.add(id(obj))
    for path in RECEIVED:
        module, _, name = path.rpartition(".")
        obj = getattr(importlib.import_module(module), name, None)
        if obj is None:
            log.warning("docs/_hooks/site.py: RECEIVED names %s, which does not exist: update the list", path)
        elif id(obj) not in seen:
            sections["What a test receives"].append(path)
    out = []
    for title, paths in sections.items():
        if paths:
            out += [f"## {title}", ""] + [f"::: {p}\n" for p in paths]
    return "\n".join(out + [fault_marks_table(marks)])


def identifier(name: str, obj: Any, package: Any) -> str:
    """Where mkdocstrings finds ``name``: the module defining a class or function, else the module the
    package loads it from (a constant such as ``NOT_RECOVERED``)."""
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return f"{obj.__module__}.{obj.__qualname__}"
    module = getattr(package, "_LAZY", {}).get(name)
    if module is None:
        log.warning("docs/_hooks/site.py: cannot tell where pytest_streamchaos.%s is defined", name)
        return f"pytest_streamchaos.{name}"
    return f"{module}.{name}"


def section_of(path: str) -> str:
    return next(title for prefix, title in SECTIONS if path.startswith(prefix + "."))


def fault_marks_table(marks: dict[str, Callable[..., Any]]) -> str:
    """Every fault mark with what it does and its own arguments (the common ones: docs/faults.md)."""
    rows = ["## Fault marks", "",
            "`from pytest_streamchaos import <mark>`; the same as `@pytest.mark.<mark>(...)`. The arguments every "
            "mark takes (`after`, `duration` / `restart_after`, `every` + `times`, `index`, `when`) and what each "
            "does on each backend: [Faults](faults.md).", "",
            "| mark | what it does | its own arguments |", "|---|---|---|"]
    for name, mark in marks.items():
        doc = inspect.getdoc(mark) or ""
        what, _, args = doc.partition("\n\nArguments: ")
        what = what.removeprefix("Fault mark: ").rstrip(".")
        items = [a for a in args.split("; ") if a.strip()]
        rows.append(f"| `{name}` | {cell(what)} | {'<br>'.join(cell(a) for a in items) or '-'} |")
    return "\n".join(rows) + "\n"


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
