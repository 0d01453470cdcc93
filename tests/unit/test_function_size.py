"""No function in the package is longer than ~80 lines (docstring included): a function should fit
in one's head. The allow-list names the exceptions and why; keep it short."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pytest_streamchaos",)
MAX_LINES = 80

#: qualified name -> why it may stay longer for now
ALLOWED: dict[str, str] = {}


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

    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            walk(ast.parse(path.read_text(), filename=str(path)), ".".join(parts))
    return found


def test_no_function_over_80_lines():
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
    assert "pytest_streamchaos.analysis.metrics._Measure.fault" in long
