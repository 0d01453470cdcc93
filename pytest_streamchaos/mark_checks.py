"""The plugin's own marks checked at collection, before anything starts (docs/names.md): the arguments of
``@pytest.mark.chaos(...)`` and ``@pytest.mark.sla(...)``, and a mark that misspells one of the plugin's
(``@pytest.mark.kill_wroker``): pytest only warns of an unknown mark, and the test would run without the
fault it names. Each problem is one line naming the test, what was given and what exists."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pytest_streamchaos import managers
from pytest_streamchaos import settings as _settings
from pytest_streamchaos.analysis.spelling import did_you_mean, listed

#: what ``@pytest.mark.chaos`` takes (MARKERS' line in the plugin says what each does)
CHAOS_ARGS = ("ha", "repeat", "backend", "spark", "sequence")
#: what ``@pytest.mark.sla`` takes besides the SLA's bounds
SLA_OVER = ("worst", "median")
#: how close an unknown mark's name must be to one of the plugin's to be taken for a misspelling of it
MARK_CUTOFF = 0.75


def chaos_mark_errors(item: pytest.Item, settings: _settings.Settings) -> list[str]:
    """What is wrong with the test's ``@pytest.mark.chaos(...)`` marks, one line each."""
    errors = []
    for mark in item.iter_markers("chaos"):
        where = f"{item.nodeid}: @chaos"
        if mark.args:
            errors.append(f"{where} takes keyword arguments only ({', '.join(CHAOS_ARGS)}), got {mark.args!r}")
        errors += [f"{where}: unknown argument {k!r}{did_you_mean(k, CHAOS_ARGS)}; it takes "
                   f"{', '.join(CHAOS_ARGS)}" for k in mark.kwargs if k not in CHAOS_ARGS]
        repeat = mark.kwargs.get("repeat", 1)
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            errors.append(f"{where}: repeat={repeat!r} must be an int >= 1")
        if not isinstance(mark.kwargs.get("ha", False), bool):
            errors.append(f"{where}: ha={mark.kwargs['ha']!r} must be True or False")
        for key, valid, what in (("spark", tuple(managers.MANAGERS), "cluster managers"),
                                 ("backend", _settings.BACKENDS, "backends")):
            value = mark.kwargs.get(key, getattr(settings, key))
            if value not in valid:
                errors.append(f"{where}: {key}={value!r}{did_you_mean(str(value), valid)}: valid {what}: "
                              f"{', '.join(map(repr, valid))}")
    return errors


def sla_mark_errors(item: pytest.Item) -> list[str]:
    """What is wrong with the test's ``@pytest.mark.sla(...)`` marks (a bound's name or value, ``over=``)."""
    from pytest_streamchaos.analysis.sla import SLA

    errors = []
    for mark in item.iter_markers("sla"):
        bounds = dict(mark.kwargs)
        over = bounds.pop("over", "worst")
        try:
            if mark.args:
                raise TypeError(f"takes keyword arguments only, e.g. @pytest.mark.sla(max_downtime=15); got "
                                f"{mark.args!r}")
            SLA().merged(**bounds)
            if over not in SLA_OVER:
                raise ValueError(f"over={over!r}{did_you_mean(str(over), SLA_OVER)}: use 'worst' (the default) or "
                                 "'median'")
        except (TypeError, ValueError) as exc:
            errors.append(f"{item.nodeid}: @sla: {exc}")
    return errors


def misspelt_marks(item: pytest.Item, registered: Iterable[str], ours: Iterable[str]) -> list[str]:
    """A mark of the test that no plugin or ini registered (``registered``) and that is close to one of the
    plugin's (``ours``: ``chaos``, ``sla``, ``explore`` and every fault's): refused, since pytest would only warn
    and the test would run without it."""
    known, mine = set(registered), list(ours)
    errors = []
    for mark in item.iter_markers():
        if mark.name in known:
            continue
        meant = close_to_mark(mark.name, mine)
        if meant is not None:
            errors.append(f"{item.nodeid}: @pytest.mark.{mark.name} is not a mark pytest-streamchaos knows (did you "
                          f"mean @pytest.mark.{meant}?): the test would run without it; the plugin's marks: "
                          f"{listed(mine)}")
    return errors


def close_to_mark(name: str, ours: list[str]) -> str | None:
    """The plugin's mark ``name`` misspells, by a stricter cutoff than a did-you-mean's (an unrelated mark of the
    user's own must not be refused)."""
    import difflib

    close = difflib.get_close_matches(name, ours, n=1, cutoff=MARK_CUTOFF)
    return close[0] if close else None


def registered_marks(config: pytest.Config) -> list[str]:
    """The names of every mark registered (pytest's own, plugins', the ini's ``markers``)."""
    return [str(line).split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")]


def mark_errors(item: pytest.Item, settings: _settings.Settings, registered: list[str], ours: list[str]) -> list[str]:
    """Every problem of the plugin's marks on ``item`` (the chaos and SLA marks, a misspelt mark)."""
    return [*chaos_mark_errors(item, settings), *sla_mark_errors(item), *misspelt_marks(item, registered, ours)]
