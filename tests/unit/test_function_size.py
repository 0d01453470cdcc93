"""No function in the package is longer than 60 lines, no class longer than 300 and no module longer
than 600 (docstrings included): a function should fit in one's head, a class on a few screens, a module
in one sitting. The allow-lists name the exceptions and why; keep them short."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pytest_streamchaos",)
MAX_LINES = 60
MAX_CLASS_LINES = 300
MAX_MODULE_LINES = 600

#: qualified name -> why it may stay longer for now
ALLOWED: dict[str, str] = {}


#: module path (relative to the repository) -> why it may stay longer for now
ALLOWED_MODULES: dict[str, str] = {}


def long_modules(limit: int = MAX_MODULE_LINES) -> dict[str, int]:
    """Path -> length in lines of every module of the package longer than ``limit``."""
    return {str(path.relative_to(ROOT)): n for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > limit}


def test_no_module_over_600_lines():
    too_long = {path: n for path, n in long_modules().items() if path not in ALLOWED_MODULES}
    listed = ", ".join(f"{path} ({n})" for path, n in sorted(too_long.items()))
    assert not too_long, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {listed}"


def test_module_allow_list_is_current():
    stale = sorted(set(ALLOWED_MODULES) - set(long_modules()))
    assert not stale, f"remove from ALLOWED_MODULES (no longer over {MAX_MODULE_LINES} lines): {stale}"


def _modules() -> list[tuple[str, ast.Module]]:
    """(dotted module name, its tree) of every module of the package."""
    found = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append((".".join(parts), ast.parse(path.read_text(), filename=str(path))))
    return found


def long_classes(limit: int = MAX_CLASS_LINES) -> dict[str, int]:
    """Qualified name -> length in lines of every class longer than ``limit``, nested ones included."""
    return {f"{mod}.{node.name}": node.end_lineno - node.lineno + 1
            for mod, tree in _modules() for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > limit}


def test_no_class_over_300_lines():
    too_long = long_classes()
    listed = ", ".join(f"{name} ({n})" for name, n in sorted(too_long.items()))
    assert not too_long, f"classes over {MAX_CLASS_LINES} lines (split them by responsibility): {listed}"


def long_functions(limit: int = MAX_LINES) -> dict[str, int]:
    """Qualified name -> length in lines (``def`` to the last line, decorators excluded) of every
    function or method longer than ``limit``, nested ones included."""
    found: dict[str, int] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}.{child.name}"
                n = child.end_lineno - child.lineno + 1
                if n > limit:
                    found[name] = n
                walk(child, name)
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}.{child.name}")

    for mod, tree in _modules():
        walk(tree, mod)
    return found


def test_no_function_over_60_lines():
    too_long = {name: n for name, n in long_functions().items() if name not in ALLOWED}
    listed = ", ".join(f"{name} ({n})" for name, n in sorted(too_long.items()))
    assert not too_long, f"functions over {MAX_LINES} lines (split them): {listed}"


def test_allow_list_is_current():
    """An allowed function that got short (or was renamed) leaves the allow-list."""
    stale = sorted(set(ALLOWED) - set(long_functions()))
    assert not stale, f"remove from ALLOWED (no longer over {MAX_LINES} lines): {stale}"


def test_checker_sees_methods_and_nested_functions():
    long = long_functions(limit=1)
    assert "pytest_streamchaos.analysis.metrics.compute_metrics" in long
    assert "pytest_streamchaos.analysis.frame.RunFrame.bands" in long
    assert "pytest_streamchaos.analysis.series._spread_cumulative.ramp_sum" in long
    assert "pytest_streamchaos.analysis.frame.RunFrame" in long_classes(limit=1)
    assert "pytest_streamchaos/analysis/metrics.py" in long_modules(limit=1)


def test_class_checker_sees_classes():
    assert "pytest_streamchaos.analysis.result.ChaosRun" in long_classes(limit=10)
