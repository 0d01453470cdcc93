"""The timeline's kinds live in one module (:mod:`pytest_streamchaos.events`): no event kind is written as a
string literal anywhere else in the package, and the kinds stay the strings saved traces and the JSON report
carry."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pytest_streamchaos.events import Injected, Kind, Launched, QueryStarted, TimelineEvent
from pytest_streamchaos.records import FAULT_INJECTED
from pytest_streamchaos.stack.connect import ConnectKind
from pytest_streamchaos.stack.yarn import YarnKind

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_streamchaos"
#: the one module that spells the kinds
HOME = PACKAGE / "events.py"
KINDS = frozenset(k.value for k in Kind)

#: (module, literal) -> why that literal, equal to a kind, is not a kind there. Keep it short.
ALLOWED: dict[tuple[str, str], str] = {
    ("pytest_streamchaos.analysis.checkers.damage", "recovered"): "a job's reaction to damage, not an event",
    ("pytest_streamchaos.analysis.result", "recovered"): "a field name of the metrics' JSON",
    ("pytest_streamchaos.report.plots", "recovered"): "the figure's label for a recovery mark",
}


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _keys(tree: ast.AST) -> set[int]:
    """Constants that name a field, not a kind: a subscript's key, a dict display's key, the key of
    ``.get(key)`` / ``getattr(x, key)`` (``m["load_end"]``, ``d.get("recovered")``)."""
    keys: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            keys.add(id(node.slice))
        elif isinstance(node, ast.Dict):
            keys.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Call) and node.args:
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "get":
                keys.add(id(node.args[0]))
            elif isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) > 1:
                keys.add(id(node.args[1]))
    return keys


def kind_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every string literal in ``source`` that is an event kind: not a docstring, not a
    key; an f-string that builds a kind (``f"{role}_launched"``) counts, as ``{}`` in its pattern."""
    tree = ast.parse(source)
    skip = _docstrings(tree) | _keys(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if node.value in KINDS:
                found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            pattern = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            if pattern.startswith("{}_") and any(k.endswith(pattern[2:]) for k in KINDS) and len(pattern) > 4:
                found.append((node.lineno, pattern))
            elif pattern.endswith("_{}") and any(k.startswith(pattern[:-2]) for k in KINDS):
                found.append((node.lineno, pattern))
    return sorted(found)


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_event_kind_is_spelled_outside_its_module() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {value!r}"
             for path in sorted(PACKAGE.rglob("*.py")) if path != HOME
             for line, value in kind_literals(path.read_text())
             if (_module(path), value) not in ALLOWED]
    assert not found, ("event kinds written as string literals (use pytest_streamchaos.events.Kind): "
                       + "; ".join(found))


def test_allow_list_is_current() -> None:
    used = {(_module(p), v) for p in PACKAGE.rglob("*.py") if p != HOME for _, v in kind_literals(p.read_text())}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"remove from ALLOWED (no longer there): {stale}"


def test_the_rule_sees_a_kind_in_a_comparison_a_call_and_an_f_string_but_not_a_key() -> None:
    source = '''
"""A docstring may say fault_injected."""
def f(e, rec, role, m):
    """driver_launched"""
    rec.record("fault_healed", "x")
    if e.kind == "executor_removed" and m["load_end"] and m.get("recovered"):
        return {"recovered": True, "kind": "query_started"}
    return f"{role}_launched"
'''
    assert kind_literals(source) == [(5, "fault_healed"), (6, "executor_removed"), (7, "query_started"),
                                     (8, "{}_launched")]


def test_a_kind_is_the_string_the_report_and_saved_traces_carry() -> None:
    e = TimelineEvent(1.0, "executor_removed", "executor-1", {"app_id": "app-1"})
    assert e.kind is Kind.EXECUTOR_REMOVED and e.kind == "executor_removed" and FAULT_INJECTED == "fault_injected"
    assert json.dumps(e.to_dict()) == ('{"t": 1.0, "kind": "executor_removed", "target": "executor-1", '
                                       '"detail": {"app_id": "app-1"}}')
    assert f"{e.kind}" == str(e.kind) == "executor_removed"
    assert {"executor_removed": 1}[e.kind] == 1
    with pytest.raises(ValueError, match="unknown timeline kind 'executor_gone'"):
        TimelineEvent(1.0, "executor_gone")


def test_typed_details_read_what_the_writers_wrote() -> None:
    inj = Injected.of(TimelineEvent(5.0, Kind.FAULT_INJECTED, "worker-1",
                                    {"fault": "kill_worker", "label": "kill_worker#1", "confirmed": 0.2,
                                     "aim": {"moment": "tasks_running"}, "scope": "job"}))
    assert (inj.fault, inj.label, inj.confirmed, inj.measured) == ("kill_worker", "kill_worker#1", 0.2,
                                                                   {"scope": "job"})
    assert Injected.of(TimelineEvent(5.0, Kind.FAULT_INJECTED)).fault == "fault_injected"
    assert Launched.of(TimelineEvent(1.0, Kind.DRIVER_LAUNCHED, "driver", {"launch": 1})).relaunch is False
    assert Launched.of(TimelineEvent(1.0, Kind.DRIVER_LAUNCHED, "driver")).relaunch is True
    q = QueryStarted.of(TimelineEvent(1.0, Kind.QUERY_STARTED, "query", {"id": "q-1", "app_id": "app-1"}))
    assert (q.id, q.app_id) == ("q-1", "app-1")
    assert Kind.of_process("connect_server", "launched") is ConnectKind.CONNECT_SERVER_LAUNCHED  # its backend's own
    assert Kind.of_process("driver", "launched") is Kind.DRIVER_LAUNCHED
    assert YarnKind.node("LOST") is YarnKind.YARN_NODE_LOST and YarnKind.app("FINISHED") is YarnKind.YARN_APP_FINISHED
    assert TimelineEvent(1.0, "yarn_node_lost").kind is YarnKind.YARN_NODE_LOST  # its entry's, added at start
