"""Fault marks as importable decorators (``from pytest_streamchaos import kill_worker``).

Every registered fault kind has one (:data:`DECORATORS`, made from the registry: a new kind needs no
line here). Each decorator validates its arguments the moment the test module is imported --
collection time -- and then applies the plain pytest mark of the same name, so ``@kill_worker(after=30)``
and ``@pytest.mark.kill_worker(after=30)`` are the same thing. Raw ``pytest.mark`` uses are validated
by the plugin's collection hook (:func:`specs_for_item`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_streamchaos.faults.kind import SomeKind
from pytest_streamchaos.faults.registry import KINDS
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError


def decorator(kind: type[SomeKind]) -> Callable[..., Any]:
    """The importable decorator of fault ``kind``: checks its arguments, then applies its mark."""
    name = kind.name

    def apply(*args: Any, **kwargs: object) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:  # bare @kill_worker
            kind.parse()
            return getattr(pytest.mark, name)(args[0])
        kind.parse(args, kwargs)
        return getattr(pytest.mark, name)(**kwargs)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Fault mark: {kind.doc}.\n\nArguments: " + "; ".join(f"{k}: {v}" for k, v in kind.args.items())
    return apply


#: the decorator of every fault kind, by its mark's name
DECORATORS: dict[str, Callable[..., Any]] = {name: decorator(k) for name, k in KINDS.items()}


def __getattr__(name: str) -> Callable[..., Any]:
    """``from pytest_streamchaos.faults.marks import kill_worker``: a kind's decorator."""
    if name in DECORATORS:
        return DECORATORS[name]
    if name in KINDS:  # a backend's kind plugged in after this module was imported
        return decorator(KINDS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def marker_lines() -> list[str]:
    """Lines for ``config.addinivalue_line("markers", ...)``, one per fault kind."""
    return [f"{k}(**kwargs): fault: {fk.doc}" for k, fk in KINDS.items()]


def specs_for_item(item: pytest.Item) -> list[FaultSpec]:
    """All fault marks of a test, validated, in declaration order (closest first: function, class,
    module). Raises :class:`FaultSpecError` prefixed with the test id."""
    specs = []
    for mark in reversed(list(item.iter_markers())):
        if mark.name in KINDS:
            try:
                specs.append(KINDS[mark.name].parse(mark.args, dict(mark.kwargs)))
            except FaultSpecError as exc:
                raise FaultSpecError(f"{item.nodeid}: {exc}") from None
    return specs
