"""Fault marks as importable decorators (``from pytest_streamchaos import kill_worker``).

Each decorator validates its arguments the moment the test module is imported -- collection time --
and then applies the plain pytest mark of the same name, so ``@kill_worker(after=30)`` and
``@pytest.mark.kill_worker(after=30)`` are the same thing. Raw ``pytest.mark`` uses are validated by
the plugin's collection hook (:func:`specs_for_item`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_streamchaos.faults.spec import KINDS, FaultSpec, FaultSpecError, parse


def _decorator(kind: str) -> Callable[..., Any]:
    def decorator(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and callable(args[0]) and not kwargs:  # bare @kill_worker
            parse(kind)
            return getattr(pytest.mark, kind)(args[0])
        parse(kind, args, kwargs)
        return getattr(pytest.mark, kind)(**kwargs)

    fk = KINDS[kind]
    decorator.__name__ = decorator.__qualname__ = kind
    decorator.__doc__ = f"Fault mark: {fk.doc}.\n\nArguments: " + "; ".join(
        f"{k}: {v}" for k, v in fk.args.items()
    )
    return decorator


kill_worker = _decorator("kill_worker")
kill_executor = _decorator("kill_executor")
kill_driver = _decorator("kill_driver")
kill_master = _decorator("kill_master")
kill_broker = _decorator("kill_broker")
isolate_broker = _decorator("isolate_broker")
pause = _decorator("pause")
network_delay = _decorator("network_delay")
packet_loss = _decorator("packet_loss")
network_partition = _decorator("network_partition")
bandwidth_limit = _decorator("bandwidth_limit")
poison_records = _decorator("poison_records")
kill_namenode = _decorator("kill_namenode")
pause_namenode = _decorator("pause_namenode")
kill_datanode = _decorator("kill_datanode")


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
                specs.append(parse(mark.name, mark.args, dict(mark.kwargs)))
            except FaultSpecError as exc:
                raise FaultSpecError(f"{item.nodeid}: {exc}") from None
    return specs
