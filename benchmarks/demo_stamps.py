"""A pytest plugin for ``bench_demo_run.py``: a stamped line on stderr (``[t] <seconds> <step>``) at each step of
the stack's start and stop (Kafka: its links, its format, its nodes up, the round trip; the Spark cluster: its
master listening, its workers registered) and at pytest's session and test phases. Seconds count from the
plugin's import (pytest's start, give or take the interpreter's own). Loaded with ``-p demo_stamps``."""

from __future__ import annotations

import functools
import sys
import time
from typing import Any

T0 = time.monotonic()


def stamp(what: str) -> None:
    sys.__stderr__.write(f"[t] {time.monotonic() - T0:7.2f} {what}\n")
    sys.__stderr__.flush()


def _wrap(cls: type, name: str, label: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def stamped(self: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.monotonic()
        stamp(f"{label} begin")
        try:
            return original(self, *args, **kwargs)
        finally:
            stamp(f"{label} end ({time.monotonic() - began:.2f}s)")

    setattr(cls, name, stamped)


def pytest_configure(config: Any) -> None:
    from pytest_streamchaos.stack.fixtures import Stacks
    from pytest_streamchaos.stack.kraft.cluster import KRaftCluster
    from pytest_streamchaos.stack.kraft.plan import KRaftPlan
    from pytest_streamchaos.stack.kraft.readiness import KafkaReadiness
    from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster
    from pytest_streamchaos.stack.standalone.readiness import Readiness

    stamp("pytest_configure")
    for cls, name, label in ((KRaftCluster, "start", "kafka.start"), (KRaftCluster, "stop", "kafka.stop"),
                             (KRaftCluster, "_start_links", "kafka.links"), (KRaftPlan, "format", "kafka.format"),
                             (KafkaReadiness, "wait_ready", "kafka.wait_ready"),
                             (KafkaReadiness, "round_trip", "kafka.round_trip"),
                             (StandaloneCluster, "start", "spark.start"), (StandaloneCluster, "stop", "spark.stop"),
                             (Readiness, "wait_listening", "spark.master_listening"),
                             (Readiness, "wait_for_workers", "spark.workers_registered"),
                             (Stacks, "close", "stacks.close")):
        _wrap(cls, name, label)


def pytest_runtest_setup(item: Any) -> None:
    stamp("runtest_setup")


def pytest_runtest_call(item: Any) -> None:
    stamp("runtest_call")


def pytest_runtest_teardown(item: Any) -> None:
    stamp("runtest_teardown")


def pytest_unconfigure(config: Any) -> None:
    stamp("unconfigure")
