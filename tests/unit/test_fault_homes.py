"""A fault kind has a home: its family's module says everything about it, and nothing else in the
package matches its name. The generic code (marks, plugin, runner, scheduler, reports) asks the
registry and the kind's properties instead (issue 30)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_streamchaos.faults import registry
from pytest_streamchaos.faults.kind import FaultKind
from pytest_streamchaos.faults.moments import MOMENTS

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
FAMILIES = PKG / "faults" / "families"


def _defined_names(tree: ast.Module) -> set[str]:
    """The functions and methods a module defines: a string naming one of them (the stack's
    ``_missing(self, "kill_worker")`` of its own ``kill_worker`` operation) names that operation."""
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def fault_names_outside_their_families(names: set[str]) -> list[str]:
    """``path:line: 'name'`` of every string literal equal to one of ``names`` outside ``faults/families/``."""
    hits = []
    for path in sorted(PKG.rglob("*.py")):
        if FAMILIES in path.parents:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        own = _defined_names(tree)
        hits += [f"{path.relative_to(PKG.parent)}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and node.value in names and node.value not in own]
    return hits


def test_no_fault_name_appears_as_a_string_outside_its_family():
    hits = fault_names_outside_their_families(set(registry.KINDS))
    assert not hits, ("ask the fault registry / the kind's properties (faults/registry.py, faults/kind.py) instead "
                      "of matching a fault's name:\n" + "\n".join(hits))


def test_the_scan_finds_a_name_where_it_should_not_be(tmp_path, monkeypatch):
    """The check can fail: a planted literal is found, an operation named like a fault is not."""
    planted = tmp_path / "pkg"
    planted.mkdir()
    (planted / "mod.py").write_text('KIND = "kill_worker"\n\ndef kill_master():\n    return _missing("kill_master")\n')
    monkeypatch.setitem(globals(), "PKG", planted)
    assert fault_names_outside_their_families({"kill_worker", "kill_master"}) == ["pkg/mod.py:1: 'kill_worker'"]


def test_every_kind_lives_in_a_family_module_and_is_complete():
    for name, k in registry.KINDS.items():
        assert issubclass(k, FaultKind) and k.name == name
        assert k.__module__.startswith("pytest_streamchaos.faults.families."), f"{name} is not in a family module"
        assert k.doc and not getattr(k, "__abstractmethods__", None), f"{name}: no doc, or inject/target missing"
        assert set(k.moments) <= set(MOMENTS), f"{name} aims at an unknown moment: {k.moments}"
        assert set(k.required) <= set(k.args), f"{name} requires an argument it does not declare"


def test_a_kind_name_is_unique_across_families():
    names = [k.name for family in registry.families() for k in family]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("name", sorted(registry.KINDS))
def test_every_kind_is_importable_from_the_package(name):
    import pytest_streamchaos

    assert getattr(pytest_streamchaos, name).__name__ == name
    assert name in pytest_streamchaos.__all__


def test_importing_a_submodule_from_the_package_loads_no_fault_registry():
    """The decorators are looked up on first use: ``from pytest_streamchaos import job`` (job-side code)
    must not load them, and with them pytest and the harness."""
    code = ("import sys\nfrom pytest_streamchaos import job\n"
            "print(' '.join(m for m in sys.modules if m.startswith(('pytest', '_pytest'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PKG.parent, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.split()
    # the facade, the job side, and the deprecation helper the facade reads its version from
    facade = ("pytest_streamchaos", "pytest_streamchaos.deprecation")
    assert all(m in facade or m.startswith("pytest_streamchaos.job") for m in loaded), loaded
