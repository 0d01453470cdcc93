"""A step of ``python -m pytest_streamchaos.prepare``: one thing fetched or built onto this machine once. The core's
steps are ``prepare``'s own; a backend's are its registry entry's (``steps``: a function in its folder that makes
them, :class:`~pytest_streamchaos.entries.BackendEntry`), built on :class:`Step` and :func:`jar_step` here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.environment import find_spark_home


@dataclass(frozen=True)
class Step:
    """One thing to prepare: ``ready()`` is true when it is in the cache (checked without the network),
    ``run()`` fetches or builds it."""

    what: str
    ready: Callable[[], bool]
    run: Callable[[], object]


def jar_step(make: Callable[[], artifacts.JarSet], line: Callable[[str], None]) -> Step:
    """The step that resolves the jar set ``make()`` from Maven Central into the cache (``line``: its progress)."""
    return Step(make().what, lambda: artifacts.is_resolved(make()), lambda: artifacts.resolve(make(), line,
                                                                                              announce=False))


def spark_home_step(what: str, ready: Callable[[Path], bool], run: Callable[[Path], object]) -> Step:
    """A step on the installed pyspark's Spark home (its line decides which jars): ``ready(home)``, ``run(home)``.
    The folder alone, not the whole preflight: its ``java -version`` is a JVM start every check paid."""
    return Step(what, lambda: ready(find_spark_home()), lambda: run(find_spark_home()))
