"""The ``k8s`` manager's preflight and its step of ``prepare`` (its registry entry names them). The preflight
runs when every session starts: it speaks only when ``--chaos-spark=k8s`` is the session's manager, and checks
files and commands only (no cluster is started)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_streamchaos.errors import StackError
from pytest_streamchaos.machine.steps import Step

if TYPE_CHECKING:
    from pytest_streamchaos.settings import Settings

FIX = "run `python -m pytest_streamchaos.prepare --k8s` once"


def why_not(java_home: str | None = None) -> str | None:
    """Why Spark on Kubernetes cannot run here (one line naming the fix), or None."""
    from pytest_streamchaos.stack.k8s import cluster, spark_image

    why = cluster.missing()
    if why:
        return why.replace("run `python -m pytest_streamchaos.prepare --for k8s` once", FIX)
    try:
        if not spark_image.is_built(spark_image.sources(java_home)):
            return f"the Spark image for Kubernetes is not built; fix: {FIX}"
    except StackError as exc:
        return str(exc)
    return None


def preflight(settings: Settings) -> str | None:
    """``--chaos-spark=k8s`` before the cluster is prepared: one line naming ``prepare --k8s``."""
    if settings.spark != "k8s":
        return None
    why = why_not(settings.java_home or None)
    return f"--chaos-spark=k8s: {why}" if why else None


def prepare_steps(line: Callable[[str], None]) -> dict[str, Step]:
    """The Spark image's step (the binaries' is the core ``k8s`` step): built from this host's JDK, Python and
    pyspark, ~1 GB, ~10 s."""
    from pytest_streamchaos.stack.k8s import spark_image

    return {"k8s-image": Step("the Spark image for Kubernetes", spark_image.is_built,
                              lambda: spark_image.build(line))}
