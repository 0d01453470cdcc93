"""A proof run only by hand is not protected: a comment or docstring of the test suite that says a test is in the
default run (``./dev test``, CI) must name a test that is -- not one marked ``slow``. Checked statically: a test is
in the default run when it, its module and at least one of its parametrized cases carry no ``slow`` mark."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
#: what a claim that some test runs by default says
CLAIM = re.compile(r"representative|default run|\./dev test keeps|run by default|runs by default|already runs in CI"
                   r"|in CI's run")
NAMED = re.compile(r"\b(test_\w+)")


def _is_slow(node: ast.expr) -> bool:
    return "slow" in ast.unparse(node)


def _case_marks_slow(call: ast.Call) -> bool:
    """A ``pytest.param(..., marks=...)`` whose marks include ``slow``."""
    return any(k.arg == "marks" and _is_slow(k.value) for k in call.keywords)


def _param_cases_all_slow(deco: ast.expr) -> bool:
    """A ``parametrize`` whose every case is a ``pytest.param`` marked slow (a list comprehension of such)."""
    if not (isinstance(deco, ast.Call) and "parametrize" in ast.unparse(deco.func) and len(deco.args) >= 2):
        return False
    cases = deco.args[1]
    if isinstance(cases, ast.ListComp):
        return isinstance(cases.elt, ast.Call) and _case_marks_slow(cases.elt)
    if isinstance(cases, (ast.List, ast.Tuple)) and cases.elts:
        return all(isinstance(c, ast.Call) and _case_marks_slow(c) for c in cases.elts)
    return False


@functools.cache
def default_run_tests() -> dict[str, bool]:
    """Every test function of the suite -> whether some case of it is in the default run."""
    found: dict[str, bool] = {}
    for path in TESTS.rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        module_slow = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                          and _is_slow(n.value) for n in tree.body)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                slow = module_slow or any(
                    (not isinstance(d, ast.Call) or "parametrize" not in ast.unparse(d.func)) and _is_slow(d)
                    and "mark" in ast.unparse(d) for d in node.decorator_list)
                slow = slow or any(_param_cases_all_slow(d) for d in node.decorator_list)
                found[node.name] = found.get(node.name, False) or not slow
    return found


def resolve(name: str, tests: dict[str, bool]) -> list[str]:
    """The tests a claim's name means: itself, or those it abbreviates (a comment cuts a long name short)."""
    return [name] if name in tests else [t for t in tests if t.startswith(name)]


def claims() -> list[tuple[str, int, str, list[str]]]:
    """(file, line, text, the tests it names) of every claim, a comment's continuation lines included."""
    out = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if not CLAIM.search(line):
                continue
            text = [line]
            j = i + 1
            while j < len(lines) and lines[j].lstrip().startswith("#") and line.lstrip().startswith("#"):
                text.append(lines[j])
                j += 1
            joined = " ".join(t.strip() for t in text)
            named = NAMED.findall(joined[CLAIM.search(joined).start():])  # type: ignore[union-attr]
            out.append((str(path.relative_to(TESTS.parent)), i + 1, joined, named))
    return out


def test_the_claims_are_found_and_name_real_tests() -> None:
    found = claims()
    assert found, "no claim found: the pattern no longer matches the suite's wording"
    tests = default_run_tests()
    modules = {p.stem for p in TESTS.rglob("test_*.py")}
    unknown = [(f, n, name) for f, n, _, names in found for name in names
               if not resolve(name, tests) and name not in modules]
    assert not unknown, f"claims naming tests that do not exist: {unknown}"


@pytest.mark.parametrize("where,line,text,named",
                         [pytest.param(*c, id=f"{Path(c[0]).name}:{c[1]}") for c in claims()])
def test_a_test_said_to_run_by_default_is_not_slow(where: str, line: int, text: str, named: list[str]) -> None:
    tests = default_run_tests()
    slow = [t for n in named for t in resolve(n, tests) if not tests[t]]
    assert not slow, f"{where}:{line} says {slow} run(s) by default, but it is marked slow: {text}"
