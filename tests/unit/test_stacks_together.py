"""Kafka and the Spark standalone cluster start side by side (``Stacks.kafka_and_spark``): the orchestration
only -- each start here is a function that records its thread and waits for the other, nothing is launched."""

from __future__ import annotations

import threading
import types
from collections.abc import Callable

import pytest

from pytest_streamchaos.stack.fixtures import Stacks

WAIT_S = 5.0


class Tmp:
    """pytest's temp path factory as the two starts use it: the order its base directory was made in."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def getbasetemp(self) -> None:
        self.events.append("base")


def stacks(bootstrap: str = "") -> Stacks:
    return Stacks(types.SimpleNamespace(kafka_bootstrap=bootstrap), Tmp())  # type: ignore[arg-type]


def starts(mp: pytest.MonkeyPatch, s: Stacks, spark: Callable[..., object], kafka: Callable[[str], object]) -> None:
    mp.setattr(s, "spark", spark)
    mp.setattr(s, "kafka", kafka)


def test_the_cluster_starts_while_kafka_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    s, spark_began = stacks(), threading.Event()
    seen: dict[str, tuple[object, ...]] = {}

    def spark(backend: str, *, ha: bool, manager: str) -> None:
        seen["spark"] = (threading.current_thread(), backend, ha, manager)
        spark_began.set()

    def kafka(backend: str) -> None:
        # only when the two start side by side does the cluster's start begin before Kafka's ends
        seen["kafka"] = (threading.current_thread(), spark_began.wait(WAIT_S))

    starts(monkeypatch, s, spark, kafka)
    s.kafka_and_spark("local", ha=True, manager="standalone")
    assert seen["kafka"] == (threading.current_thread(), True)
    assert seen["spark"][0] is not threading.current_thread()
    assert seen["spark"][1:] == ("local", True, "standalone")


def test_kafkas_error_is_raised_once_the_clusters_start_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    s, spark_done = stacks(), threading.Event()

    def spark(backend: str, *, ha: bool, manager: str) -> None:
        assert go.wait(WAIT_S)
        spark_done.set()

    def kafka(backend: str) -> None:
        go.set()
        raise RuntimeError("kafka did not come up")

    go = threading.Event()
    starts(monkeypatch, s, spark, kafka)
    with pytest.raises(RuntimeError, match="kafka did not come up"):
        s.kafka_and_spark("local", manager="standalone")
    assert spark_done.is_set()


def test_the_clusters_error_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    s = stacks()

    def spark(backend: str, *, ha: bool, manager: str) -> None:
        raise RuntimeError("no worker registered")

    starts(monkeypatch, s, spark, lambda backend: None)
    with pytest.raises(RuntimeError, match="no worker registered"):
        s.kafka_and_spark("local", manager="standalone")


@pytest.mark.parametrize("case", ["yarn", "attached kafka", "kafka started", "cluster started"])
def test_nothing_starts_side_by_side_otherwise(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    s = stacks("127.0.0.1:9092" if case == "attached kafka" else "")
    if case == "kafka started":
        s._kafka["local"] = object()  # type: ignore[assignment]
    if case == "cluster started":
        s._spark[("standalone", "local", False)] = object()  # type: ignore[assignment]
    started: list[str] = []
    starts(monkeypatch, s, lambda *a, **k: started.append("spark"), lambda backend: started.append("kafka"))
    s.kafka_and_spark("local", manager="yarn" if case == "yarn" else "standalone")
    assert started == []


def test_the_temp_base_is_made_before_the_two_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest makes (with --basetemp: empties, then makes) its base directory on first use, not thread-safely: made
    # first by both starts at once, one's folder was removed under it (the Spark 3.5 session's --basetemp, CI)
    s = stacks()
    tmp = s.tmp
    assert isinstance(tmp, Tmp)
    starts(monkeypatch, s, lambda backend, **_: tmp.events.append("spark"), lambda backend: tmp.events.append("kafka"))
    s.kafka_and_spark("local", manager="standalone")
    assert tmp.events[0] == "base" and sorted(tmp.events[1:]) == ["kafka", "spark"]
