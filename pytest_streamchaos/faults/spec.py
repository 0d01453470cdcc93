"""Fault specifications: what a fault mark says, checked when the test is collected.

A mark such as ``@kill_worker(after=30, restart_after=10)`` becomes a :class:`FaultSpec`. Every
argument is validated, so a typo fails at collection time with a message naming the mark, the
argument and the allowed values -- not half-way through a two-minute chaos run. This module holds
what every fault kind shares (the spec, the common arguments, the schedule's checks); what one kind
accepts besides is its family's (:mod:`pytest_streamchaos.faults.families`), and the kind of a name
is the registry's (:func:`pytest_streamchaos.faults.registry.parse`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: arguments every fault mark accepts.
COMMON_ARGS = {
    "after": "seconds from steady state until the fault is injected (default 0; an aimed fault, when=, "
             "arms after AIMED_ARM_AFTER = 5 s of baseline unless after= is given)",
    "duration": "seconds until the fault is healed (resume, rule removed, broker up)",
    "every": "repeat the fault every N seconds (with times)",
    "times": "how many occurrences (default 1; with every)",
    "index": "which instance: an int position, or a role (see each fault)",
    "when": "fire at a moment instead of a clock time (see each fault)",
    "timeout": "seconds to wait for an aimed moment before giving up (default 60)",
}

#: Default ``after`` of an aimed fault (``when=`` without ``after=``): it arms only once the load
#: phase has run this long, so the metrics have a baseline to measure recovery against (their
#: minimum is ``max(bucket_seconds, hold_seconds)`` = 5 s with the default MetricParams). An aimed
#: fault that fired right after warm-up would leave recovery time and failure cost unmeasurable.
AIMED_ARM_AFTER = 5.0


class FaultSpecError(ValueError):
    """A fault mark has a wrong argument. The message names the mark, the argument and the fix."""


@dataclass(frozen=True)
class FaultSpec:
    """One fault mark, validated. ``params`` holds the kind-specific arguments."""

    kind: str
    after: float = 0.0
    duration: float | None = None
    every: float | None = None
    times: int = 1
    index: int | str | None = None
    when: str | None = None
    timeout: float = 60.0
    restart_after: float | None = None
    target: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: a step of an explored schedule (``@explore``): it arms once the schedule's step before it has
    #: fired, for the first batch at least ``anchor`` batches after the one planned then (None: a mark's
    #: fault, which arms on its own clock)
    anchor: int | None = None

    @property
    def label(self) -> str:
        """Short human label for tables and timelines, e.g. ``kill_worker[0]@30s``."""
        where = self.target or ("" if self.index is None else str(self.index))
        at = f" when={self.when}" if self.when else f"@{self.after:g}s"
        if self.anchor:
            at += f"+{self.anchor}"
        rep = f" x{self.times}/{self.every:g}s" if self.every else ""
        extra = "".join(f" {k}={v}" for k, v in self.params.items() if k != "signal")
        return f"{self.kind}{f'[{where}]' if where else ''}{at}{rep}{extra}"

    def to_dict(self) -> dict[str, object]:
        d = {k: v for k, v in self.__dict__.items() if v not in (None, {}) and k != "params"}
        d.update(self.params)
        return d


def number(kind: str, name: str, value: Any, *, minimum: float = 0.0, strict: bool = False,
           integer: bool = False) -> float:
    """``value`` of argument ``name`` of mark ``kind``, checked to be a number (``integer``: an int) at
    least (``strict``: above) ``minimum``; :class:`FaultSpecError` naming both otherwise."""
    ok_type = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok_type:
        what = "an int" if integer else "a number"
        raise FaultSpecError(f"@{kind}: {name}={value!r} must be {what} ({COMMON_ARGS.get(name, '')})".rstrip(" ()"))
    if value < minimum or (strict and value == minimum):
        cmp = ">" if strict else ">="
        raise FaultSpecError(f"@{kind}: {name}={value!r} must be {cmp} {minimum:g}")
    return value


def check_names(kind: str, args: Mapping[str, str], required: tuple[str, ...],
                kwargs: dict[str, Any]) -> dict[str, str]:
    """Every argument known (did-you-mean otherwise), every required one given; the allowed ones
    (the common ones and the kind's ``args``)."""
    allowed = {**COMMON_ARGS, **args}
    for name in kwargs:
        if name not in allowed:
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise FaultSpecError(f"@{kind}: unknown argument {name!r}{hint}; allowed: {', '.join(sorted(allowed))}")
    for name in required:
        if name not in kwargs:
            raise FaultSpecError(f"@{kind}: missing required argument {name!r} ({allowed[name]})")
    return allowed


def schedule(kind: str, kwargs: dict[str, Any]) -> tuple[float, float | None, float | None, int]:
    """Pops and checks ``after``, ``duration``, ``every``, ``times``."""
    after = number(kind, "after", kwargs.pop("after", 0.0))
    duration = kwargs.pop("duration", None)
    if duration is not None:
        duration = number(kind, "duration", duration, strict=True)
    every = kwargs.pop("every", None)
    times = kwargs.pop("times", None)
    if every is not None:
        every = number(kind, "every", every, strict=True)
        times = 2 if times is None else int(number(kind, "times", times, minimum=1, integer=True))
    elif times is not None and times != 1:
        raise FaultSpecError(f"@{kind}: times={times!r} needs every=<seconds between occurrences>")
    else:
        times = 1
    if every is not None and duration is not None and duration >= every:
        raise FaultSpecError(f"@{kind}: duration={duration:g} must be shorter than every={every:g}")
    return after, duration, every, times


def check_index(kind: str, roles: tuple[str, ...], index: object) -> int | str | None:
    """``index``: an int position >= 0, or one of the kind's ``roles``."""
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, (int, str)):
            raise FaultSpecError(f"@{kind}: index={index!r} must be an int position or a role")
        if isinstance(index, int) and index < 0:
            raise FaultSpecError(f"@{kind}: index={index!r} must be >= 0")
        if isinstance(index, str) and index not in roles:
            names = ", ".join(repr(r) for r in roles) or "none (use an int position)"
            raise FaultSpecError(f"@{kind}: index={index!r} is not a role of this fault{_meant(index, roles)}; roles: "
                                 f"{names}")
    return index


def check_when(kind: str, moments: tuple[str, ...], when: Any, every: float | None) -> None:
    """``when``: one of the moments the kind can aim at, and not with ``every``."""
    if when not in moments:
        names = ", ".join(repr(m) for m in moments) or "none"
        raise FaultSpecError(f"@{kind}: when={when!r} is not a moment this fault can aim at{_meant(when, moments)}; "
                             f"moments: {names}")
    if every is not None:
        raise FaultSpecError(f"@{kind}: when= and every= cannot be combined")


def _meant(value: Any, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(value), choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def pop_target(kind: str, kwargs: dict[str, Any], allowed: dict[str, str]) -> str | None:
    """Pops ``target`` and checks it is a string (what it may name is the kind's)."""
    target = kwargs.pop("target", None)
    if target is not None and not isinstance(target, str):
        raise FaultSpecError(f"@{kind}: target={target!r} must be a string ({allowed['target']})")
    return target
