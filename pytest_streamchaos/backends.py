"""Every backend entry, whatever its registry: the checkpoint storages' (:data:`pytest_streamchaos.storages.STORAGES`)
and the cluster managers' (:data:`pytest_streamchaos.managers.MANAGERS`), read when asked (a test may plug one in).
What a backend brings beyond its own registry's questions -- its timeline kinds, its fault family, its checks
(:class:`~pytest_streamchaos.entries.BackendEntry`) -- is gathered here for whoever needs them all: the plugin, the
fault registry, the checkers every run is judged with (handed to the analysis, which imports nothing of the
backends). Imports only the registries."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import cast

from pytest_streamchaos import managers, storages
from pytest_streamchaos.entries import BackendEntry, named


def entries() -> tuple[BackendEntry, ...]:
    """Every backend entry: the storages', then the managers', each in its registry's order."""
    return (*storages.STORAGES.values(), *managers.MANAGERS.values())


def timeline_kinds() -> dict[Enum, object]:
    """Every entry's own timeline kinds, each with what it says of a fault (two managers may share kinds)."""
    found: dict[Enum, object] = {}
    for entry in entries():
        for kind, reaction in entry.timeline_kinds().items():
            found.setdefault(kind, reaction)
    return found


def fault_kinds() -> tuple[type, ...]:
    """Every entry's fault family's kinds, each once (two managers may share a family)."""
    found: list[type] = []
    for entry in entries():
        found += [k for k in entry.fault_kinds() if k not in found]
    return tuple(found)


def check_makers() -> dict[str, Callable[[], object]]:
    """The makers of the checks the entries name (:attr:`~pytest_streamchaos.entries.BackendEntry.checks`),
    imported now, by that name (two entries may name one)."""
    return {path: cast("Callable[[], object]", named(path)) for entry in entries() for path in entry.checks}
