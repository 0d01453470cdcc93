"""The ``chaos`` fixture's object: :class:`~pytest_streamchaos.runner.Chaos` plus repeats, runs
without the test's faults, and A/B comparisons in one test.

Kept apart from the runner on purpose: the runner owns one run's life cycle, this wraps whole runs.

- ``chaos.run(job, ...)`` runs the scenario once and returns a ``ChaosRun`` -- or, under
  ``@pytest.mark.chaos(repeat=N)`` / ``--chaos-repeat=N`` / ``chaos.run(..., repeat=N)``, N times
  with the same seed (the same records: what varies is the system, not the workload) and returns a
  :class:`~pytest_streamchaos.analysis.repeat.RepeatedRun` (medians, spread, worst).
- ``chaos.run(job, ..., faults=False)``: the same scenario without the test's fault marks.
- ``chaos.compare(job, a={...}, b={...}, **common)``: runs A then B (each ``common`` updated with its
  own arguments; a group given in both is merged, its ``conf`` and ``env`` dicts key by key) and returns
  B ``.versus(A)``: per-metric deltas and a masking verdict per fault of B.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.versus import Versus, versus
from pytest_streamchaos.runner import Chaos
from pytest_streamchaos.runner.groups import GROUPS

#: the fields of a group that two runs' groups merge key by key
_MERGED = ("conf", "env")


def merged_args(common: Mapping[str, Any], own: Mapping[str, Any] | None) -> dict[str, Any]:
    """``common`` updated by ``own``; a group in both (``setup=JobSetup(...)``) is merged: ``own``'s fields
    that differ from the group's defaults win, and its ``conf`` / ``env`` dicts are merged key by key,
    so that ``a={"setup": JobSetup(conf={"spark.sql.shuffle.partitions": 4})}`` keeps the common Spark conf."""
    out = {**common, **(own or {})}
    for key in GROUPS:
        mine, theirs = (own or {}).get(key), common.get(key)
        if mine is not None and theirs is not None and type(mine) is type(theirs):
            out[key] = _merged_group(theirs, mine)
    return out


def _merged_group(common: Any, own: Any) -> Any:
    changes: dict[str, Any] = {}
    for f in fields(own):
        value = getattr(own, f.name)
        if f.name in _MERGED and isinstance(value, Mapping):
            changes[f.name] = {**(getattr(common, f.name) or {}), **value}
        elif value != f.default:
            changes[f.name] = value
    return replace(common, **changes)


class ChaosHarness(Chaos):
    """What the ``chaos`` fixture hands a test (see the module docstring).

    :attr:`results` holds what each ``run`` returned (a ``ChaosRun`` or a ``RepeatedRun``): the
    plugin checks SLAs, saves baselines and draws pictures from it. :attr:`runs` (from ``Chaos``)
    holds every single run.
    """

    def __init__(self, *, repeat: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if repeat < 1:
            raise ValueError(f"repeat={repeat!r} must be >= 1")
        self.repeat = repeat
        self.results: list[ChaosRun | RepeatedRun] = []
        self.comparisons: list[Versus] = []

    def run(self, job: str | Path, *args: Any, repeat: int | None = None, faults: bool = True,
            **kwargs: Any) -> Any:
        """``Chaos.run`` (same arguments) ``repeat`` times (default: the test's mark, else
        ``--chaos-repeat``); ``faults=False`` leaves the test's fault marks out of this run."""
        n = self.repeat if repeat is None else int(repeat)
        if n < 1:
            raise ValueError(f"repeat={n!r} must be >= 1")
        planned = self.faults
        if not faults:
            self.faults = []
        runs = []
        try:
            for _ in range(n):
                try:
                    runs.append(self._run_once(job, *args, **kwargs))
                finally:
                    finish = getattr(self.status, "finish", None)
                    if finish is not None:
                        finish()
        finally:
            self.faults = planned
        result: ChaosRun | RepeatedRun = runs[0] if n == 1 else RepeatedRun(runs)
        self.results.append(result)
        return result

    def _run_once(self, job: str | Path, *args: Any, **kwargs: Any) -> ChaosRun:
        """One run on the stack (``Chaos.run``). Test seam: a subclass that returns synthetic runs
        (``analysis.synthetic``) exercises repeats, comparisons and the plugin's reports without Spark."""
        return Chaos.run(self, job, *args, **kwargs)

    def compare(self, job: str | Path, a: Mapping[str, Any] | None = None, b: Mapping[str, Any] | None = None,
                *, labels: tuple[str, str] = ("A", "B"), slo_latency: float | None = None,
                **common: Any) -> Versus:
        """Run ``job`` under A, then under B, and return B versus A (``Versus``: ``.deltas``,
        ``.faults`` verdicts, ``.describe()``). ``slo_latency`` (s) separates degraded from outage."""
        run_a = self.run(job, **merged_args(common, a))
        run_b = self.run(job, **merged_args(common, b))
        result = versus(run_b, run_a, slo_latency=slo_latency, labels=labels)
        self.comparisons.append(result)
        return result
