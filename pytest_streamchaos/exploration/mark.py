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
from pytest_streamchaos.search.kinds import KindInfo
from pytest_streamchaos.search.schedule import Schedule, Step
from pytest_streamchaos.search.token import decode, plugin_version

MARK = "explore"
MARKER_LINE = ("explore(faults=[...], budget=10, max_faults=3): search fault schedules (fault kind x target x "
               "micro-batch phase, then pairs and triples) for one that breaks the test's own assertions; the "
               "test fails with the minimal schedule and a replay line (docs/explore.md)")
#: where a test's :class:`ExploreSpec` is kept from collection on (``item.stash``)
EXPLORE_KEY: pytest.StashKey[ExploreSpec] = pytest.StashKey()
#: the knobs the mark takes besides ``faults``, with their defaults
DEFAULTS: dict[str, int] = {"budget": 10, "max_faults": 3}


class ExploreError(ValueError):
    """A wrong ``@explore`` / ``--chaos-explore`` / ``--chaos-replay``: the message names the fix."""


@dataclass(frozen=True)
class ExploreSpec:
    """What one test asks of the search: the fault kinds, the budget of exploring runs, the largest
    schedule; ``replay``: exactly this schedule instead (``--chaos-replay``); ``source``: where it came
    from (``@explore`` or ``--chaos-explore``), for messages."""

    faults: tuple[str, ...]
    budget: int
    max_faults: int = 3
    replay: Schedule | None = None
    source: str = "@explore"

    def kinds(self) -> list[KindInfo]:
        known = catalogue()
        return [known[f] for f in self.faults]


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
        raise ExploreError(f"{where}: {name}={value!r} must be an int >= 1 (the number of "
                           f"{'schedules to run' if name == 'budget' else 'faults in a schedule'})")
    return value


def parse(kwargs: dict[str, Any], where: str = "@explore") -> ExploreSpec:
    """The mark's keyword arguments, checked (:class:`ExploreError` names the argument and the fix)."""
    unknown = [k for k in kwargs if k not in ("faults", *DEFAULTS)]
    if unknown:
        close = difflib.get_close_matches(unknown[0], ["faults", *DEFAULTS], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ExploreError(f"{where}: unknown argument {unknown[0]!r}{hint}; it takes faults, budget, max_faults")
    if "faults" not in kwargs:
        raise ExploreError(f"{where}: give the faults to search, e.g. @explore(faults=['kill_driver'], budget=10)")
    knobs = {k: check_int(k, kwargs.get(k, v), where) for k, v in DEFAULTS.items()}
    return ExploreSpec(check_faults(kwargs["faults"], where), knobs["budget"], min(knobs["max_faults"], 3))


def explore(faults: Sequence[str], budget: int = DEFAULTS["budget"],
            max_faults: int = DEFAULTS["max_faults"]) -> Callable[[Any], Any]:
    """Decorator: search fault schedules of ``faults`` for one that breaks the test's own assertions, in at
    most ``budget`` exploring runs on one warm stack; a schedule has at most ``max_faults`` faults (<= 3).
    The test needs ``@pytest.mark.chaos`` and the ``chaos`` fixture; its body is the property::

        @pytest.mark.chaos
        @explore(faults=["kill_driver", "kill_executor"], budget=10)
        def test_orders_job_is_exactly_once(chaos):
            run = chaos.run("jobs/orders.py", rate=100, duration=30, guarantee="exactly-once")
            assert run.duplicates == 0
    """
    parse({"faults": faults, "budget": budget, "max_faults": max_faults})
    return pytest.mark.explore(faults=list(faults), budget=budget, max_faults=max_faults)


def spec_for_item(item: pytest.Item, explore_all: int, replay: str) -> ExploreSpec | None:
    """The search this test asks for (None: an ordinary test): its ``explore`` mark, else with
    ``--chaos-explore=N`` its own fault marks' kinds; ``replay`` (a token for this test) replaces the
    search with exactly its schedule. :class:`ExploreError` prefixed with the test id."""
    where = f"{item.nodeid}: @explore"
    mark = item.get_closest_marker(MARK)
    spec = None
    if mark is not None:
        if mark.args:
            raise ExploreError(f"{where} takes keyword arguments only: @explore(faults=[...], budget=10)")
        spec = parse(dict(mark.kwargs), where)
    elif explore_all and item.get_closest_marker("chaos") is not None:
        own = [m.name for m in item.iter_markers() if m.name in KINDS]
        known = catalogue()
        aimable = [k for k in dict.fromkeys(own) if k in known]
        if aimable:
            spec = ExploreSpec(tuple(aimable), explore_all, source="--chaos-explore")
    if replay:
        schedule = decode(replay, item.nodeid, plugin_version())
        faults = tuple(dict.fromkeys(s.kind for s in schedule.steps))
        check_faults(faults, f"{item.nodeid}: --chaos-replay")
        return ExploreSpec(faults, 1, len(schedule), replay=schedule, source="--chaos-replay")
    if spec is not None and item.get_closest_marker("chaos") is None:
        raise ExploreError(f"{where} needs @pytest.mark.chaos on the test (the chaos fixture's stack runs it)")
    return spec


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
