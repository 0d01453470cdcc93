"""What a session asks of every explored test -- the explore profile (Hypothesis' settings profiles,
as ini lines), the time bound of ``--chaos-explore-seconds``, ``--chaos-explore=N``, the replay token --
and the search each test gets from it and its own mark (:func:`spec_for_item`).

A profile is one line of the ini key ``streamchaos_explore_profiles``::

    [pytest]
    streamchaos_explore_profiles =
        ci: budget=4 max_seconds=300
        nightly: budget=40 max_seconds=3600 order=random

and ``--chaos-explore-profile=ci`` (or ini ``streamchaos_explore_profile``) chooses one. Its knobs fill
what a test's ``@explore`` leaves out (an argument the test gives wins, as an explicit ``@settings`` wins
over Hypothesis' profile); ``--chaos-explore-seconds`` bounds every explored test whatever it says (the
stop a CI job sets).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from pytest_streamchaos import settings as _settings
from pytest_streamchaos.exploration.catalogue import catalogue
from pytest_streamchaos.exploration.mark import (
    DEFAULTS,
    MARK,
    ExploreError,
    ExploreSpec,
    check_faults,
    check_knobs,
    parse,
)
from pytest_streamchaos.faults.registry import KINDS
from pytest_streamchaos.search.token import ReplayTokenError, Setting, decode, plugin_version


@dataclass(frozen=True)
class ExploreSession:
    """The session's side of every explored test: ``profile`` the chosen profile's knobs (its ``name``),
    ``max_seconds`` the ``--chaos-explore-seconds`` bound (None: none), ``explore_all`` the
    ``--chaos-explore`` budget (0: only ``@explore`` tests), ``replay`` the token ("" none)."""

    profile: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    max_seconds: float | None = None
    explore_all: int = 0
    replay: str = ""

    @classmethod
    def from_config(cls, config: pytest.Config, settings: _settings.Settings) -> ExploreSession:
        """The session's choices; a ``pytest.UsageError`` naming the fix for an unknown profile or a bad line."""
        try:
            profiles = parse_profiles(config.getini(_settings.EXPLORE_PROFILES_INI))
        except ExploreError as exc:
            raise pytest.UsageError(str(exc)) from None
        name = settings.explore_profile
        if name and name not in profiles:
            known = ", ".join(profiles) or f"none: define them in ini {_settings.EXPLORE_PROFILES_INI}"
            raise pytest.UsageError(f"--chaos-explore-profile={name}: no such explore profile (defined: {known})")
        return cls(profiles.get(name, {}), name, settings.explore_seconds or None, settings.explore, settings.replay)


def parse_profiles(lines: list[str]) -> dict[str, dict[str, Any]]:
    """``name: knob=value ...`` lines as name -> knobs (values as Python would read them: ``4``, ``300.0``,
    ``random``); :class:`ExploreError` naming the line and the fix."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        where = f"ini {_settings.EXPLORE_PROFILES_INI}: {line.strip()!r}"
        name, sep, rest = line.partition(":")
        if not sep or not name.strip():
            raise ExploreError(f"{where}: write a profile as `name: budget=4 max_seconds=300`")
        knobs: dict[str, Any] = {}
        for word in rest.split():
            key, eq, value = word.partition("=")
            if not eq or key not in DEFAULTS:
                raise ExploreError(f"{where}: {word!r} is not knob=value with a knob of @explore "
                                   f"({', '.join(DEFAULTS)})")
            knobs[key] = _value(value)
        out[name.strip()] = check_knobs(knobs, where)
    return out


def _value(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return None if text == "None" else text


def spec_for_item(item: pytest.Item, session: ExploreSession, here: Setting) -> ExploreSpec | None:
    """The search this test asks for (None: an ordinary test): its ``explore`` mark over the session's
    profile, else with ``--chaos-explore=N`` its own fault marks' kinds; the session's replay token, when it
    was made for this test, replaces the search with exactly its schedule (refused when it ran under
    another ``here`` setting: seed, checkpoint). :class:`ExploreError` prefixed with the test id."""
    where = f"{item.nodeid}: @explore"
    mark = item.get_closest_marker(MARK)
    spec = None
    if mark is not None:
        if mark.args:
            raise ExploreError(f"{where} takes keyword arguments only: @explore(faults=[...], budget=10)")
        spec = parse(dict(mark.kwargs), where, session.profile)
    elif session.explore_all and item.get_closest_marker("chaos") is not None:
        own = [m.name for m in item.iter_markers() if m.name in KINDS]
        known = catalogue()
        aimable = [k for k in dict.fromkeys(own) if k in known]
        if aimable:
            spec = parse({"faults": aimable, "budget": session.explore_all}, f"{item.nodeid}: --chaos-explore",
                         session.profile)
            spec = replace(spec, source="--chaos-explore")
    if session.replay and token_for(session.replay, item.nodeid):
        return replay_spec(item.nodeid, session.replay, here)
    if spec is not None and item.get_closest_marker("chaos") is None:
        raise ExploreError(f"{where} needs @pytest.mark.chaos on the test (the chaos fixture's stack runs it)")
    if spec is not None and session.max_seconds is not None:
        spec = replace(spec, max_seconds=session.max_seconds)
    return spec


def replay_spec(nodeid: str, token: str, here: Setting) -> ExploreSpec:
    """The spec that replays ``token`` for test ``nodeid``; refused when its seed or checkpoint is not
    ``here``'s (the trigger is the job's: a run tells)."""
    replayed = decode(token, nodeid, plugin_version())
    differs = replayed.setting.differs(here, fields=("seed", "checkpoint"))
    if differs:
        raise ExploreError(f"{nodeid}: {differs}")
    faults = tuple(dict.fromkeys(s.kind for s in replayed.schedule.steps))
    check_faults(faults, f"{nodeid}: --chaos-replay")
    return ExploreSpec(faults, 1, len(replayed.schedule), replay=replayed, source="--chaos-replay", min_verdicts=1)


def token_for(token: str, nodeid: str) -> bool:
    """Whether replay ``token`` was made for test ``nodeid`` (a damaged token: for every test, so that
    decoding it names the fix)."""
    try:
        decode(token, nodeid, "")
    except ReplayTokenError as exc:
        return "this token replays test" not in str(exc)
    return True
