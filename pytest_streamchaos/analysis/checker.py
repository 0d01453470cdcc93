"""Checkers: a verdict is a function of the run's history (Jepsen's checkers, here for streaming jobs).

A checker has a ``name`` and ``check(history) -> CheckResult``; it reads only the
:class:`~pytest_streamchaos.history.History` (records sent, outputs, micro-batches, timeline, faults
with their aims, the run's facts). Every verdict of a run is one (``analysis/checkers/``: lost,
duplicates, incorrect, the guarantee, reliability, downtime, recovery time, failure cost, the
exactly-once transactions, the delay classes, the observer, the faults as planned), and a test adds
its own::

    class NoLateOutput:
        name = "no_late_output"

        def check(self, history):
            late = ...  # from history.sent / history.outputs
            return CheckResult(self.name, ok=late == 0, lines=[f"{late} outputs more than 5 s late"],
                               numbers={"late": late})

    assert run.check(NoLateOutput()).ok       # or run.check(NoLateOutput(), must_pass=True)

:func:`compose` runs several over one history as one checker, each once. A result's ``ok`` is True
(held), False (violated) or None (could not be judged: ``reason`` says why); an unknown is not a pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable
from weakref import WeakKeyDictionary

from pytest_streamchaos.history import History

R = TypeVar("R", bound="CheckResult")


@dataclass
class CheckResult:
    """What a checker found: ``ok`` (True held, False violated, None not judged, ``reason`` says
    why), its ``numbers`` (JSON-ready), the ``lines`` that explain it and any ``warnings`` it has for
    the run's report."""

    name: str
    ok: bool | None
    lines: list[str] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def status(self) -> str:
        """``ok``, ``violated`` or ``unknown``."""
        return "unknown" if self.ok is None else "ok" if self.ok else "violated"

    def headline(self) -> str:
        """``name: status`` (with the reason when it could not judge)."""
        why = f" ({self.reason})" if self.ok is None and self.reason else ""
        return f"{self.name}: {'VIOLATED' if self.ok is False else self.status}{why}"

    def describe(self) -> str:
        """The headline, then the lines that explain it."""
        return "\n".join([self.headline(), *(f"  {line}" for line in self.lines)])

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``name``, ``ok``, ``status``, ``numbers``, ``lines`` (and ``reason``, ``warnings``)."""
        d: dict[str, Any] = {"name": self.name, "ok": self.ok, "status": self.status,
                             "numbers": {k: _json(v) for k, v in self.numbers.items()}, "lines": list(self.lines)}
        if self.reason:
            d["reason"] = self.reason
        if self.warnings:
            d["warnings"] = list(self.warnings)
        return d

    def assert_ok(self: R) -> R:
        """Raise :class:`CheckFailed` unless the check held (an unknown is not a pass); else return self."""
        if self.ok is not True:
            raise CheckFailed(self)
        return self


class CheckFailed(AssertionError):
    """A check that did not hold (``run.check(c, must_pass=True)``): its headline and lines."""

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        super().__init__(f"check {result.describe()}")


@runtime_checkable
class Checker(Protocol):
    """A verdict over a run's history: a ``name`` and :meth:`check`."""

    name: str

    def check(self, history: History) -> CheckResult: ...


def run_checker(checker: Checker, history: History) -> CheckResult:
    """``checker.check(history)`` as a :class:`CheckResult` (a checker returning a bool gets one made
    for it); a result of another type is refused naming the checker."""
    got: Any = checker.check(history)
    if isinstance(got, bool):
        return CheckResult(_name(checker), got)
    if not isinstance(got, CheckResult):
        raise TypeError(f"checker {_name(checker)!r} returned {type(got).__name__}: check(history) must return a "
                        "CheckResult (or a bool)")
    return got


def run_all(checkers: Iterable[Checker], history: History) -> dict[str, CheckResult]:
    """Each distinct checker once over ``history``, results by name in the checkers' order (a second
    checker of the same name gets ``name#2``)."""
    out: dict[str, CheckResult] = {}
    seen: set[int] = set()
    for c in checkers:
        if id(c) in seen:
            continue
        seen.add(id(c))
        result = run_checker(c, history)
        key, n = result.name, 2
        while key in out:
            key, n = f"{result.name}#{n}", n + 1
        out[key] = result
    return out


@dataclass
class Composed:
    """Several checkers as one (:func:`compose`): each runs once over the history; the result holds
    every result (``results``) and is ok when all are, violated when any is, unknown otherwise."""

    checkers: tuple[Checker, ...]
    name: str = "composed"

    def check(self, history: History) -> ComposedResult:
        results = run_all(self.checkers, history)
        oks = [r.ok for r in results.values()]
        ok = False if False in oks else None if None in oks else True
        lines = [line for r in results.values() for line in r.describe().splitlines()]
        return ComposedResult(self.name, ok, lines, numbers={k: r.status for k, r in results.items()},
                              warnings=[w for r in results.values() for w in r.warnings], results=results)


@dataclass
class ComposedResult(CheckResult):
    """The result of a :class:`Composed` checker: every part's result by name."""

    results: dict[str, CheckResult] = field(default_factory=dict)

    def __getitem__(self, name: str) -> CheckResult:
        return self.results[name]


def compose(*checkers: Checker, name: str = "composed") -> Composed:
    """One checker that runs ``checkers`` over the same history, each once."""
    return Composed(tuple(checkers), name)


class Memo:
    """What a checker computed per history, computed once: checkers that share work (every guarantee
    check reads one validation, every recovery check one computation of the metrics) ask the same
    memo. Keyed by the history object, forgotten with it."""

    def __init__(self) -> None:
        self._by_history: WeakKeyDictionary[History, Any] = WeakKeyDictionary()

    def get(self, history: History, compute: Callable[[], R]) -> R:
        if history not in self._by_history:
            self._by_history[history] = compute()
        value: R = self._by_history[history]
        return value


def _name(checker: object) -> str:
    return str(getattr(checker, "name", None) or type(checker).__name__)


def _json(v: object) -> Any:
    """A number for JSON: NaN -> None, inf -> "inf"; containers and other values unchanged."""
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if hasattr(v, "item") and callable(v.item) and not isinstance(v, (list, dict)):
        return _json(v.item())  # a NumPy scalar
    return v
