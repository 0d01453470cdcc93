"""How a refusal names what exists: the did-you-mean of every check of a name a test gives (docs/names.md).

Pure and small, so that every layer checks names the same way: the analysis (``MetricParams``, metric
names), the runner (``chaos.run``'s groups and arguments), the plugin (marks, options) and the observers'
checks of what a running job shows (:mod:`pytest_streamchaos.observe.seen_names`).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any, TypeVar


def close_to(name: str, choices: Iterable[str]) -> str | None:
    """The choice ``name`` most likely misspells (None: none is close)."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, choices: Iterable[str], fmt: str = "{!r}") -> str:
    """`` (did you mean 'x'?)`` for the choice ``name`` most likely misspells, else ""."""
    close = close_to(name, choices)
    return f" (did you mean {fmt.format(close)}?)" if close is not None else ""


def listed(names: Iterable[Any], limit: int = 12) -> str:
    """``a, b, c`` (the first ``limit``, then ``... (N in all)``); ``none`` for no names."""
    items = [str(n) for n in names]
    if not items:
        return "none"
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


C = TypeVar("C", bound=type)


def spelled(cls: C) -> C:
    """Class decorator of a dataclass: a keyword its ``__init__`` does not take is a TypeError in one line
    naming it, the did-you-mean and every field (``Load(patitions=4)``), where Python's own says only
    "unexpected keyword argument"."""
    init: Callable[..., None] = cls.__init__  # type: ignore[misc]
    names = [f.name for f in fields(cls)]

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: object) -> None:
        for key in kwargs:
            if key not in names:
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}"
                                f"{did_you_mean(key, names, '{}=')}; it takes {listed(names, 30)}")
        init(self, *args, **kwargs)

    cls.__init__ = checked  # type: ignore[misc]
    return cls
