"""A backend that is not there, in a folder of its own: a checkpoint storage (``fakefs``, its service a
:class:`FakeStore`) and a cluster manager (``fake``, its cluster a :class:`FakeCluster`), each with everything an
entry names -- its factory, the protocol its service is held as, its preflight, its steps of ``prepare`` and its
timeline kinds. :data:`STORAGE` and :data:`MANAGER` are the entries; test_registry_plugins.py plugs them into the
registries and nothing else. Nothing here starts a process."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pytest_streamchaos.events import StrEnum
from pytest_streamchaos.machine.steps import Step
from pytest_streamchaos.managers import ClusterManager
from pytest_streamchaos.settings import Settings
from pytest_streamchaos.stack.base import SparkCluster
from pytest_streamchaos.stack.fixtures import Stacks
from pytest_streamchaos.storages import CheckpointStorage

#: the environment variable that makes the preflights refuse the session (the line they refuse it with)
REFUSE = "FAKE_BACKEND_REFUSE"
#: who the preflights were asked by: (backend, the session's --chaos-spark), in order
PREFLIGHTS: list[tuple[str, str]] = []


class FakeKind(StrEnum):
    """The fake backend's own timeline kinds (no entry in ``events.Kind``)."""

    STORE_READY = "fakefs_ready"
    CLUSTER_READY = "fake_cluster_ready"


#: what both entries name as their timeline kinds
KINDS = tuple(FakeKind)


@runtime_checkable
class Wobbly(Protocol):
    """What the fake storage's faults would reach its service as."""

    def wobble(self) -> None: ...


class FakeStore:
    """The fake storage's service: a :class:`~pytest_streamchaos.protocols.StorageService` and a :class:`Wobbly`."""

    default_fs = "fakefs://store"

    def __init__(self) -> None:
        self.started = self.healed = self.wobbled = 0

    def filesystem(self) -> str:
        return "the fake store's filesystem"

    def client_conf(self) -> dict[str, str]:
        return {"fs.fakefs.impl": "org.example.FakeFileSystem"}

    def heal(self, timeout: float = 60.0) -> None:
        self.healed += 1

    def start(self) -> None:
        self.started += 1

    def stop(self) -> None:
        pass

    def wobble(self) -> None:
        self.wobbled += 1


def _stub(name: str) -> Callable[..., object]:
    def method(self: object, *args: object, **kwargs: object) -> object:
        raise NotImplementedError(f"the fake cluster has no {name}")
    return method


#: a SparkCluster with every abstract method a stub: what the fake manager's factory makes
FakeCluster = type("FakeCluster", (SparkCluster,), {
    **{name: _stub(name) for name in SparkCluster.__abstractmethods__},
    "manager": property(lambda self: MANAGER.name),
    "start": lambda self: None, "stop": lambda self: None, "heal": lambda self, timeout=60.0: None,
})


def store_factory(stacks: Stacks, backend: str) -> FakeStore:
    """The fake storage's factory: the service, started and kept by the session's stacks."""
    store = FakeStore()
    store.start()
    return store


def cluster_factory(stacks: Stacks, backend: str, ha: bool) -> SparkCluster:
    """The fake manager's factory."""
    return stacks.start(FakeCluster())


def preflight(settings: Settings) -> str | None:
    """Both entries' preflight: noted, and the session refused when :data:`REFUSE` is set."""
    PREFLIGHTS.append(("fake", settings.spark))
    return os.environ.get(REFUSE) or None


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The fake backend's own steps of ``prepare`` (up to date: nothing runs)."""
    return {"fake-jars": Step("the fake backend's jars", lambda: True, lambda: None)}


HERE = __name__
STORAGE = CheckpointStorage(
    "fakefs", "a fake store, for the registries' test", "FakeFS", fixture="fake_store", schemes=("file", "fakefs"),
    gate="", renames="a rename is a fake", make=f"{HERE}:store_factory", protocol=f"{HERE}:Wobbly",
    preflight=f"{HERE}:preflight", prepare=("fake-jars",), steps=(f"{HERE}:prepare_steps",), events=f"{HERE}:KINDS")
MANAGER = ClusterManager(
    "fake", "a fake cluster manager, for the registries' test", f"{HERE}:cluster_factory", prepare=("fake-jars",),
    preflight=f"{HERE}:preflight", steps=(f"{HERE}:prepare_steps",), events=f"{HERE}:KINDS")
