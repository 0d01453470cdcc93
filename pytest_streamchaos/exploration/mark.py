"""``@explore(faults=[...], budget=N)``, ``--chaos-explore=N`` and ``--chaos-replay=<token>``: what a test
asks of the search, checked at collection so that bad input fails in one line before anything starts.

- ``@explore`` records the mark ``explore``; the decorator checks its arguments when the test module is
  imported (unknown fault names with a did-you-mean, a budget < 1), the plugin checks raw
  ``@pytest.mark.explore`` uses, the ``chaos`` mark it needs, and faults this session cannot inject.
- ``--chaos-explore=N`` explores every chaos test that has fault marks, with those kinds as its fault
  set and budget N (their ``after=`` / ``when=`` are the search's to choose).
- ``--chaos-replay=<token>`` runs exactly the token's schedule, for the test the token names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_streamchaos.exploration.catalogue import catalogue, step_spec
from pytest_streamchaos.faults.registry import KINDS
from pytest_streamchaos.search.engine import Limits
from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.schedule import Step
from pytest_streamchaos.search.token import Replay

MARK = "explore"
MARKER_LINE = ("explore(faults=[...], budget=10, max_faults=3, min_verdicts=None, max_seconds=None, flaky='fail', "
               "order='fixed', history='shared'): search fault schedules (fault kind x target x micro-batch phase, "
               "then pairs and triples) for one that breaks the test's own assertions, after a control run without "
               "faults, the schedules one after another on one running job (history='fresh': a job per schedule); the "
               "test fails with the minimal schedule and a replay line, and passes only when at least min_verdicts "
               "schedules (default: half the budget) gave a verdict (docs/explore.md)")
#: where a test's :class:`ExploreSpec` is kept from collection on (``item.stash``)
EXPLORE_KEY: pytest.StashKey[ExploreSpec] = pytest.StashKey()
#: the knobs the mark takes besides ``faults``, with their defaults
DEFAULTS: dict[str, Any] = {"budget": 10, "max_faults": 3, "min_verdicts": None, "max_seconds": None,
                            "flaky": "fail", "order": "fixed", "history": "shared"}
#: the values of the knobs that take words
CHOICES: dict[str, tuple[str, ...]] = {"flaky": ("fail", "warn"), "order": ("fixed", "random"),
                                       "history": ("shared", "fresh")}


class ExploreError(ValueError):
    """A wrong ``@explore`` / ``--chaos-explore`` / ``--chaos-replay``: the message names the fix."""


@dataclass(frozen=True)
class ExploreSpec:
    """What one test asks of the search: the fault kinds, the budget of exploring runs, the largest
    schedule, the evidence a pass needs (``min_verdicts``; None: half the budget), the time it may take
    (``max_seconds``; None: no limit), what a flaky violation does (``fail`` or ``warn``), the ``order``
    (``fixed``: the likeliest first; ``random``: seeded by the test's workload seed), the ``history``
    (``shared``: the schedules one after another on one running job; ``fresh``: a job per schedule);
    ``replay``: exactly a token's schedule instead (``--chaos-replay``); ``source``: where it came from
    (``@explore``, ``--chaos-explore``), for messages."""

    faults: tuple[str, ...]
    budget: int
    max_faults: int = 3
    replay: Replay | None = None
    source: str = "@explore"
    min_verdicts: int | None = None
    max_seconds: float | None = None
    flaky: str = "fail"
    order: str = "fixed"
    history: str = "shared"

    def kinds(self) -> list[KindInfo]:
        known = catalogue()
        return [known[f] for f in self.faults]

    def limits(self) -> Limits:
        """The search's :class:`~pytest_streamchaos.search.engine.Limits`."""
        return Limits(self.budget, self.min_verdicts, self.max_seconds, flaky_fails=self.flaky == "fail",
                      max_faults=self.max_faults)


def check_faults(faults: Any, where: str) -> tuple[str, ...]:
    """``faults`` as a tuple of explorable kind names; :class:`ExploreError` naming an unknown one (with
    a did-you-mean) or one the search cannot aim at a micro-batch phase."""
    if isinstance(faults, str) or not isinstance(faults, Sequence) or not faults:
        raise ExploreError(f"{where}: faults={faults!r}: give a list of fault names, e.g. "
                           "faults=['kill_driver', 'kill_executor']")
    known = catalogue()
    for name in faults:
        if name in known:
            continue
        if name in KINDS:
            raise ExploreError(f"{where}: {name!r} cannot be aimed at a micro-batch phase (its moments: "
                               f"{', '.join(KINDS[name].moments) or 'none'}); the search aims "
                               f"{', '.join(known)}")
        close = difflib.get_close_matches(str(name), [*known, *KINDS], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ExploreError(f"{where}: unknown fault {name!r}{hint}; the search aims {', '.join(known)}")
    return tuple(dict.fromkeys(faults))


def check_int(name: str, value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        what = {"budget": "schedules to run", "max_faults": "faults in a schedule",
                "min_verdicts": "schedules that must give a verdict for a pass"}[name]
        raise ExploreError(f"{where}: {name}={value!r} must be an int >= 1 (the number of {what})")
    return value


def check_knobs(knobs: dict[str, Any], where: str) -> dict[str, Any]:
    """The search's knobs (any of :data:`DEFAULTS`), checked one by one and together."""
    out = dict(knobs)
    for name in ("budget", "max_faults"):
        if name in out:
            out[name] = check_int(name, out[name], where)
    if out.get("min_verdicts") is not None:
        out["min_verdicts"] = check_int("min_verdicts", out["min_verdicts"], where)
    seconds = out.get("max_seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0):
        raise ExploreError(f"{where}: max_seconds={seconds!r} must be a number of seconds > 0 (leave it out for no "
                           "limit)")
    for name, choices in CHOICES.items():
        if name in out and out[name] not in choices:
            raise ExploreError(f"{where}: {name}={out[name]!r}: use one of {', '.join(map(repr, choices))}")
    budget, least = out.get("budget", DEFAULTS["budget"]), out.get("min_verdicts")
    if least is not None and least > budget:
        raise ExploreError(f"{where}: min_verdicts={least} > budget={budget}: no search of that budget could give "
                           f"that many verdicts; raise the budget or lower min_verdicts")
    return out


def parse(kwargs: dict[str, Any], where: str = "@explore", base: dict[str, Any] | None = None) -> ExploreSpec:
    """The mark's keyword arguments over ``base`` (a profile's knobs), checked (:class:`ExploreError` names
    the argument and the fix)."""
    unknown = [k for k in kwargs if k not in ("faults", *DEFAULTS)]
    if unknown:
        close = difflib.get_close_matches(unknown[0], ["faults", *DEFAULTS], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ExploreError(f"{where}: unknown argument {unknown[0]!r}{hint}; it takes faults, "
                           f"{', '.join(DEFAULTS)}")
    if "faults" not in kwargs:
        raise ExploreError(f"{where}: give the faults to search, e.g. @explore(faults=['kill_driver'], budget=10)")
    knobs = check_knobs({**DEFAULTS, **(base or {}), **{k: v for k, v in kwargs.items() if k != "faults"}}, where)
    return ExploreSpec(check_faults(kwargs["faults"], where), knobs["budget"], min(knobs["max_faults"], 3),
                       min_verdicts=knobs["min_verdicts"], max_seconds=knobs["max_seconds"], flaky=knobs["flaky"],
                       order=knobs["order"], history=knobs["history"])


def explore(faults: Sequence[str], budget: int = DEFAULTS["budget"], max_faults: int = DEFAULTS["max_faults"],
            **knobs: Any) -> Callable[[Any], Any]:
    """Decorator: search fault schedules of ``faults`` for one that breaks the test's own assertions, in at
    most ``budget`` exploring runs on one warm stack, after a control run without faults; a schedule has at
    most ``max_faults`` faults (<= 3). The other knobs: ``min_verdicts`` (schedules that must give a verdict
    for a pass; default half the budget), ``max_seconds`` (the whole search's time, confirming and
    shrinking included), ``flaky`` (``"fail"``, the default, or ``"warn"``), ``order`` (``"fixed"`` or
    ``"random"``), ``history`` (``"shared"``, the default: the schedules one after another on one running job,
    each judged in its own window, a violation confirmed on a job of its own; ``"fresh"``: a job per
    schedule). The test needs ``@pytest.mark.chaos`` and the ``chaos`` fixture; its body is the property::

        @pytest.mark.chaos
        @explore(faults=["kill_driver", "kill_executor"], budget=10)
        def test_orders_job_is_exactly_once(chaos):
            run = chaos.run("jobs/orders.py", rate=100, duration=30, guarantee="exactly-once")
            assert run.duplicates == 0
    """
    parse({"faults": faults, "budget": budget, "max_faults": max_faults, **knobs})
    return pytest.mark.explore(faults=list(faults), budget=budget, max_faults=max_faults, **knobs)


def cannot_inject(spec: ExploreSpec, checkpoint: str) -> list[str]:
    """Why this session cannot inject a fault of the search (the host lacks a tool, a run on
    ``checkpoint`` storage lacks the component), one line each naming the fix."""
    out = []
    known = catalogue()
    for name in spec.faults:
        info = known[name]
        probe = step_spec(Step(name, info.targets[0], info.phases[0]), 0, None)
        kind = KINDS[name]
        why = kind.unavailable(probe) or kind.refused_by_run(probe, checkpoint=checkpoint)
        if why:
            out.append(f"@explore: {name}: {why}")
    return out
