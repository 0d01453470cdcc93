"""What every backend entry brings, whatever its registry (:data:`pytest_streamchaos.storages.STORAGES`,
:data:`pytest_streamchaos.managers.MANAGERS`): its preflight, its steps of ``python -m pytest_streamchaos.prepare``,
the timeline kinds it records, its fault family and its checks. Each is named by a dotted path into the backend's
own folder and imported only when asked for, so the registries stay importable before any stack exists (the settings
read them) and a new backend is one entry and its folder: nothing else names it -- not the timeline's vocabulary
(its kinds), not the fault registry (its fault family), not the checkers every run is judged with (its checks).

This module imports nothing of the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from enum import Enum
from typing import Protocol, cast


class PrepareStep(Protocol):
    """One thing ``python -m pytest_streamchaos.prepare`` fetches or builds (``machine.steps.Step``)."""

    @property
    def what(self) -> str: ...

    def ready(self) -> bool: ...

    def run(self) -> object: ...


#: a preflight: given the session's ``settings.Settings`` (which imports the registries, so it is not named here),
#: the one line naming the fix when this session cannot run on the backend (None: it can)
Preflight = Callable[..., "str | None"]
#: a backend's steps of ``prepare``, by name, given the writer of their progress lines
Steps = Callable[[Callable[[str], None]], Mapping[str, PrepareStep]]


def named(path: str) -> object:
    """The object ``module:name`` names, imported now."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class BackendEntry:
    """The part of a registry entry every backend has: its name and help (the option's choices and help, the
    refusal lines), and, named by ``module:name`` in its own folder, what runs around it."""

    name: str
    help: str
    _: KW_ONLY
    #: ``module:function``, its preflight (:data:`Preflight`): checked when the session starts, before any test
    #: (``--chaos-yarn-conf`` naming a ResourceManager that does not answer); "" when it has none
    preflight: str = ""
    #: the names of the steps of ``python -m pytest_streamchaos.prepare`` a run on it needs (``--for <name>``)
    prepare: tuple[str, ...] = ()
    #: ``module:function`` each, the makers of its own steps of ``prepare`` (:data:`Steps`): what :attr:`prepare`
    #: names and the core does not define
    steps: tuple[str, ...] = ()
    #: ``module:name``, the timeline kinds its service and faults record, of an enum of its own (registered with the
    #: timeline when the session starts, :func:`pytest_streamchaos.events.add_kinds`): a tuple of them, or a mapping
    #: of each to what it says of a fault for the recovery metrics (a ``pytest_streamchaos.events.Reaction``, None)
    events: str = ""
    #: ``module:name`` each, its fault families: a tuple of ``FaultKind`` classes each (``pytest_streamchaos.faults.
    #: kind``), the marks a test puts on a run on it (``pytest_streamchaos.faults.registry.KINDS`` holds every entry's).
    #: The one part of a backend outside its folder: a family lives in ``faults/families/`` (``faults/families/s3.py``
    #: for ``stack/s3``), because a kind subclasses ``faults/kind.py`` and ``stack/`` must not import ``faults/``
    #: (the stack runs, ``python -m pytest_streamchaos.stack``, without the fault semantics); the family reaches
    #: its backend through the package's face and the protocol its entry names (``FaultContext.store``)
    faults: tuple[str, ...] = ()
    #: ``module:name`` each, a checker every run is judged with (a class or factory called without arguments whose
    #: result has a ``name`` and ``check(history)``: ``pytest_streamchaos.analysis.checker.Checker``)
    checks: tuple[str, ...] = ()

    def preflight_check(self) -> Preflight | None:
        """Its preflight, imported now; None when it has none."""
        return cast("Preflight", named(self.preflight)) if self.preflight else None

    def own_steps(self, line: Callable[[str], None]) -> Mapping[str, PrepareStep]:
        """Its own steps of ``prepare`` by name ({} when it has none); ``line`` writes their progress lines."""
        return {name: step for path in self.steps for name, step in cast("Steps", named(path))(line).items()}

    def timeline_kinds(self) -> dict[Enum, object]:
        """The timeline kinds it records, each with what it says of a fault (None: nothing), imported now ({} when
        it names none)."""
        if not self.events:
            return {}
        kinds = named(self.events)
        if isinstance(kinds, Mapping):
            return dict(cast("Mapping[Enum, object]", kinds))
        return dict.fromkeys(cast("Iterable[Enum]", kinds))

    def fault_kinds(self) -> tuple[type, ...]:
        """Its fault families' kinds, imported now (() when it has none)."""
        return tuple(k for path in self.faults for k in cast("Iterable[type]", named(path)))


def preflights(entries: Iterable[BackendEntry]) -> list[Preflight]:
    """The preflights of ``entries``, each once (two managers on YARN share one)."""
    found: list[Preflight] = []
    for entry in entries:
        check = entry.preflight_check()
        if check is not None and check not in found:
            found.append(check)
    return found
