"""A backend that is not there, in a folder of its own: a checkpoint storage (``fakefs``, its service a
:class:`FakeStore`) and a cluster manager (``fake``, its cluster a :class:`FakeCluster`), each with everything an
entry names -- its factory, the protocol its service is held as, its preflight, its steps of ``prepare``, its
timeline kinds, its fault family (``wobble_store`` on the store, ``jolt_cluster`` on the cluster, through a
capability of the manager's own) and a check. :data:`STORAGE` and :data:`MANAGER` are the entries;
test_registry_plugins.py plugs them into the registries and nothing else. Nothing here starts a process."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pytest_streamchaos.analysis.checker import CheckResult
from pytest_streamchaos.events import Reaction, StrEnum
from pytest_streamchaos.faults.kind import FaultKind
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.history import History
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


class FakeStoreKind(StrEnum):
    """The fake storage's own timeline kinds (no entry in ``events.Kind``)."""

    STORE_READY = "fakefs_ready"
    STORE_WOBBLED = "fakefs_wobbled"


class FakeClusterKind(StrEnum):
    """The fake manager's own timeline kinds."""

    CLUSTER_READY = "fake_cluster_ready"
    CLUSTER_JOLTED = "fake_cluster_jolted"


#: the storage entry's kinds, each with what it says of a fault (its store answering again heals it)
STORE_KINDS = {FakeStoreKind.STORE_READY: Reaction.HEALING, FakeStoreKind.STORE_WOBBLED: None}
#: the manager entry's kinds (the cluster jolted: the system noticed a fault)
CLUSTER_KINDS = {FakeClusterKind.CLUSTER_READY: None, FakeClusterKind.CLUSTER_JOLTED: Reaction.DETECTED}


@runtime_checkable
class Wobbly(Protocol):
    """What the fake storage's faults would reach its service as."""

    def wobble(self) -> None: ...


@runtime_checkable
class Jolts(Protocol):
    """Jolt the cluster: a capability the fake manager brings of its own (not in the stack's capabilities)."""

    def jolt(self) -> None: ...


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
    "jolt": lambda self: setattr(self, "jolted", getattr(self, "jolted", 0) + 1),
})


class WobbleStore(FaultKind):
    """The fake storage's fault: its service wobbles (its entry's fault family)."""

    name = "wobble_store"
    doc = "wobble the fake store"
    store = Wobbly

    def target(self, planned: PlannedFault) -> str:
        return STORAGE.name

    def inject(self, planned: PlannedFault) -> None:
        self.ctx.store(Wobbly).wobble()

    def heal(self, planned: PlannedFault, handle: None) -> None:
        assert self.ctx.recorder is not None
        self.ctx.recorder.record(FakeStoreKind.STORE_WOBBLED, planned.label)
        self.ctx.recorder.record(FakeStoreKind.STORE_READY, STORAGE.name)


class JoltCluster(FaultKind):
    """The fake manager's fault, through its own capability (its entry's fault family)."""

    name = "jolt_cluster"
    doc = "jolt the fake cluster"
    needs = (Jolts,)

    def target(self, planned: PlannedFault) -> str:
        return MANAGER.name

    def inject(self, planned: PlannedFault) -> None:
        self.ctx.spark(Jolts).jolt()
        assert self.ctx.recorder is not None
        self.ctx.recorder.record(FakeClusterKind.CLUSTER_JOLTED, MANAGER.name)


STORE_FAULTS = (WobbleStore,)
CLUSTER_FAULTS = (JoltCluster,)


class Wobbles:
    """The fake storage's check, which every run is judged with: how many times its store wobbled."""

    name = "fake_wobbles"

    def check(self, history: History) -> CheckResult:
        wobbles = [e for e in history.trace.timeline if e.kind == FakeStoreKind.STORE_WOBBLED]
        return CheckResult(self.name, True, [f"the fake store wobbled {len(wobbles)} time(s)"],
                           {"wobbles": len(wobbles)})


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
    preflight=f"{HERE}:preflight", prepare=("fake-jars",), steps=(f"{HERE}:prepare_steps",),
    events=f"{HERE}:STORE_KINDS", faults=(f"{HERE}:STORE_FAULTS",), checks=(f"{HERE}:Wobbles",))
MANAGER = ClusterManager(
    "fake", "a fake cluster manager, for the registries' test", f"{HERE}:cluster_factory", prepare=("fake-jars",),
    preflight=f"{HERE}:preflight", steps=(f"{HERE}:prepare_steps",), events=f"{HERE}:CLUSTER_KINDS",
    faults=(f"{HERE}:CLUSTER_FAULTS",))
