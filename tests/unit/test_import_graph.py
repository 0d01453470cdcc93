"""The package's import graph: no cycles (module or package level) and the layering of docs/architecture.md.

The graph is read from the source with ``ast``, so it sees every import: module-level ones, those
inside functions, those under ``if TYPE_CHECKING:``, and the lazy ones of the PEP 562 facades
(``_LAZY = {"name": "pytest_streamchaos.x.y"}`` resolved through ``importlib``). A ``from a import b``
is an edge to the module ``a.b`` when there is one, else to ``a``. Importing ``a.b`` also runs
``a/__init__.py``; that implicit edge to a parent package is left out, since a package's own
``__init__`` importing its submodules is not a cycle Python trips on.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the top-level packages of the distribution
PACKAGES = ("pytest_streamchaos",)
#: what runs inside the user's Spark job; it must import nothing of the harness
JOB_SIDE = ("pytest_streamchaos.job",)

#: package-level edges that close a cycle and are not fixed yet, with the reason. Keep it empty.
KNOWN_PACKAGE_EDGES: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, tuple[Path, bool]]:
    mods: dict[str, tuple[Path, bool]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts.pop()
            mods[".".join(parts)] = (path, is_pkg)
    return mods


def _imports(name: str, path: Path, is_pkg: bool, mods: dict) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    base = name if is_pkg else name.rpartition(".")[0]
    deps: set[str] = set()
    lazy = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                lazy = lazy or alias.name == "importlib"
                deps.update(_known(alias.name, mods))
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                pkg = base
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                target = f"{pkg}.{target}" if target else pkg
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                deps.update(_known(sub if sub in mods else target, mods))
    if lazy:  # string module names handed to importlib.import_module
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods:
                deps.add(node.value)
    deps.discard(name)
    return deps


def _known(name: str, mods: dict) -> set[str]:
    return {name} if name in mods else set()


def import_graph() -> dict[str, set[str]]:
    """Module name -> the package modules it imports (anywhere in its source)."""
    mods = _modules()
    return {name: _imports(name, path, is_pkg, mods) for name, (path, is_pkg) in mods.items()}


def package_of(module: str) -> str:
    """``pytest_streamchaos.analysis.metrics`` -> ``pytest_streamchaos.analysis``; a top-level module
    (``pytest_streamchaos.runner``) is its own node."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        src = package_of(mod)
        out.setdefault(src, set())
        for dep in deps:
            dst = package_of(dep)
            if dst != src and src not in PACKAGES and dst not in PACKAGES:  # the facades are lazy
                out[src].add(dst)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each as one cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(_cycle_path(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _cycle_path(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One concrete cycle inside a strongly connected component: a -> b -> ... -> a."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth-first back to start, inside the component
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w in comp and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def test_cycle_finder_names_the_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_function_level_and_lazy_imports():
    graph = import_graph()
    # a function-level import (the chaos fixture imports the harness lazily)
    assert "pytest_streamchaos.harness" in graph["pytest_streamchaos.plugin"]
    # a PEP 562 lazy import of the public facade
    assert "pytest_streamchaos.faults.marks" in graph["pytest_streamchaos"]


def test_no_module_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_package_import_cycle():
    pkgs = package_graph(import_graph())
    for (src, dst), _why in KNOWN_PACKAGE_EDGES.items():
        assert dst in pkgs.get(src, ()), f"{src} -> {dst} is gone: remove it from KNOWN_PACKAGE_EDGES"
        pkgs[src].discard(dst)
    found = cycles(pkgs)
    assert not found, "package import cycles: " + "; ".join(" -> ".join(c) for c in found)


def _offenders(graph: dict[str, set[str]], sources: tuple[str, ...], allowed: tuple[str, ...]) -> list[str]:
    def under(mod: str, prefixes: tuple[str, ...]) -> bool:
        return any(mod == p or mod.startswith(p + ".") for p in prefixes)

    return sorted(f"{m} imports {d}" for m, deps in graph.items() if under(m, sources)
                  for d in deps if not under(d, allowed))


#: the run's history, what the analysis is handed: the timeline's events, the records, the history of a run,
#: its facts
HISTORY = ("pytest_streamchaos.events", "pytest_streamchaos.records", "pytest_streamchaos.history",
           "pytest_streamchaos.facts")
#: the deprecation policy's helper: any layer may keep an old public form through it (docs/deprecations.md),
#: so it imports nothing of the package (checked below)
DEPRECATION = "pytest_streamchaos.deprecation"


def test_analysis_is_pure():
    """analysis/ imports only itself, the run's history types and the deprecation helper (nothing that records
    or runs)."""
    allowed = ("pytest_streamchaos.analysis", *HISTORY, DEPRECATION)
    bad = _offenders(import_graph(), ("pytest_streamchaos.analysis",), allowed)
    assert not bad, "analysis must stay pure: " + "; ".join(bad)


def test_the_schedule_search_is_pure():
    """search/ imports only itself: what runs a schedule on the stack is its caller's (docs/explore.md)."""
    bad = _offenders(import_graph(), ("pytest_streamchaos.search",), ("pytest_streamchaos.search",))
    assert not bad, "the schedule search must stay pure: " + "; ".join(bad)


def test_records_are_the_bottom():
    graph = import_graph()
    for bottom in ("pytest_streamchaos.events", "pytest_streamchaos.facts", DEPRECATION):
        assert not graph[bottom], f"{bottom} must import nothing of the package: {sorted(graph[bottom])}"
    records = graph["pytest_streamchaos.records"]
    assert records == {"pytest_streamchaos.events"}, f"records must import only the events: {sorted(records)}"
    bad = _offenders(graph, HISTORY, (*HISTORY, DEPRECATION))
    assert not bad, "the history types must import only one another: " + "; ".join(bad)


def test_job_side_imports_nothing_of_the_harness():
    graph = import_graph()
    assert all(any(m == p or m.startswith(p + ".") for m in graph) for p in JOB_SIDE), "job-side modules missing"
    bad = _offenders(graph, JOB_SIDE, JOB_SIDE)
    assert not bad, "job-side code must import nothing of the harness: " + "; ".join(bad)


def test_job_side_loads_no_harness_module():
    """What a job imports, imported in a fresh interpreter, loads only the job side (and the lazy
    facades, and the deprecation helper that reads the version): no pytest, no stack, no faults."""
    code = (
        "import sys\n"
        "from pytest_streamchaos.job import job_config, read_kafka, ExactlyOnceKafkaSink, write_kafka_batch\n"
        "import pytest_streamchaos.job.daemon\n"
        "print(' '.join(sorted(m for m in sys.modules if 'streamchaos' in m or m.split('.')[0] in "
        "('pytest', '_pytest'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    def allowed(m: str) -> bool:
        if "finder" in m or m in ("pytest_streamchaos", DEPRECATION):
            return True  # the editable install's finder; the lazy facade and the version it reads
        return any(m == p or m.startswith(p + ".") for p in JOB_SIDE)

    extra = [m for m in out.stdout.split() if not allowed(m)]
    assert not extra, f"importing the job side loaded harness modules: {extra}"
