"""What a job's code is made of, read from its source: its own modules, what else it imports, and the files
it names.

A job is usually a folder (:mod:`.job_files`): the script, helper modules beside it that it imports by bare
name, data files it opens. What decides its output is all of that, and a reader of the job's code needs
each piece named -- Delta Lake's detection (:mod:`.delta`: does its code use Delta?) and the reference
run's key (``runner/reference_key.py``: did anything the job runs change since the reference was made?):

* :func:`job_sources`: the script, its ``py_files`` (a package folder's modules) and the modules beside
  them that these import, followed through their own imports (``import helpers``, ``from lake.tables
  import x``, ``from . import x`` inside a package);
* :func:`outside_imports`: the top-level modules the code imports that are not its own -- the standard
  library's, installed packages', and those found nowhere (``optional``: imported under ``try: ... except
  ImportError``, which a job runs without);
* :func:`named_paths`: the files and folders the code names by a string literal that exist beside a
  source (``"rates.csv"``, ``os.path.join(HERE, "lookup")``) or as an absolute file (``"/data/rates.csv"``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: exceptions whose handler makes an import in its ``try`` optional
_OPTIONAL = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
#: string literals never taken for a path (the folder itself, its parents)
_NOT_PATHS = {"", ".", "..", "/", "./", "../"}


@dataclass(frozen=True)
class Import:
    """A top-level module the code imports (``pandas`` of ``import pandas.api``) and where."""

    name: str
    where: str  #: ``job.py:3``
    optional: bool = False  #: under ``try: ... except ImportError`` (the code runs without it)


def job_sources(script: Path, py_files: Sequence[Path] = ()) -> list[Path]:
    """The job's own Python code: its script, its ``py_files`` (a package folder's modules) and the modules
    beside the script that these import (followed through their own imports), each once."""
    given = [m for p in py_files for m in (sorted(p.rglob("*.py")) if p.is_dir() else [p]) if m.suffix == ".py"]
    todo: list[Path] = [script, *given]
    seen: list[Path] = []
    while todo:
        path = todo.pop(0)
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        todo += [m for m in local_imports(path) if m not in seen]
    return seen


def _tree(path: Path) -> ast.AST | None:
    try:
        return ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _imported(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of ``tree`` and whether it is optional (in a ``try`` that catches its failure)."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            optional.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return [(n, id(n) in optional) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in _OPTIONAL for n in names)


def _candidates(path: Path, node: ast.Import | ast.ImportFrom) -> list[tuple[str, list[Path]]]:
    """Per module an import statement names: the name, and where beside ``path`` it would be."""
    if isinstance(node, ast.Import):
        return [(a.name, _module_files(path.parent, a.name.split("."))) for a in node.names]
    base = path.parent
    for _ in range(max(0, node.level - 1)):  # relative: inside a package of the job's own
        base = base.parent
    module = (node.module or "").split(".") if node.module else []
    # ``from lake import tables``: ``tables`` may be a module of the package too
    subs = [p for a in node.names if a.name != "*" for p in _module_files(base, [*module, a.name])[-2:]]
    if not module:
        return [("." * node.level + a.name, _module_files(base, [a.name])) for a in node.names]
    return [("." * node.level + (node.module or ""), _module_files(base, module) + subs)]


def _module_files(base: Path, parts: list[str]) -> list[Path]:
    # a package's __init__ is imported on the way to its module (``lake`` of ``lake.tables``)
    out = [base.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts))]
    mod = base.joinpath(*parts)
    return out + [mod.with_suffix(".py"), mod / "__init__.py"]


def local_imports(path: Path) -> list[Path]:
    """The modules beside ``path`` (``helper.py``, ``pkg/__init__.py``) that it imports."""
    tree = _tree(path)
    if tree is None:
        return []
    return [p for node, _ in _imported(tree) for _, files in _candidates(path, node) for p in files if p.is_file()]


def outside_imports(sources: Iterable[Path]) -> list[Import]:
    """The top-level modules ``sources`` import that are not among their own modules, once each (the first
    place it is imported; optional only when every import of it is)."""
    found: dict[str, Import] = {}
    for path in sources:
        tree = _tree(path)
        if tree is None:
            continue
        for node, optional in _imported(tree):
            for name, files in _candidates(path, node):
                if name.startswith(".") or any(p.is_file() for p in files):
                    continue
                top = name.split(".")[0]
                mine = Import(top, f"{path.name}:{node.lineno}", optional)
                seen = found.get(top)
                if seen is None or (seen.optional and not optional):
                    found[top] = mine
    return list(found.values())


def named_paths(sources: Iterable[Path]) -> list[tuple[str, Path]]:
    """The paths the code of ``sources`` names by a string literal, with where (``job.py:12``): a relative
    one that exists beside the source naming it (a file, or a folder that is not a Python package of the
    job's), an absolute one that is an existing file. Python sources are left out (they are code)."""
    out: dict[Path, str] = {}
    for path in sources:
        tree = _tree(path)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found = _existing(path.parent, node.value)
                if found is not None:
                    out.setdefault(found, f"{path.name}:{node.lineno}")
    return [(where, p) for p, where in out.items()]


def _existing(folder: Path, text: str) -> Path | None:
    """What the literal ``text`` names, if it is a path that exists as :func:`named_paths` takes them."""
    text = text.strip()
    if text in _NOT_PATHS or len(text) > 255 or "\n" in text or "\0" in text or "://" in text:
        return None
    given = Path(text)
    try:
        if given.is_absolute():
            return given.resolve() if given.is_file() and given.suffix != ".py" else None
        found = (folder / given).resolve()
        if found == folder.resolve() or folder.resolve().is_relative_to(found) or not found.exists():
            return None
    except (OSError, ValueError):
        return None
    if found.suffix == ".py" or found.name == "__pycache__" or (found / "__init__.py").is_file():
        return None
    return found
