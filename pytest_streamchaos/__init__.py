"""pytest-streamchaos: chaos testing for PySpark Structured Streaming jobs.

A test marks the faults it wants and asks the ``chaos`` fixture to run a job::

    from pytest_streamchaos import kill_worker

    @pytest.mark.chaos
    @kill_worker(after=30, restart_after=10)
    def test_survives_worker_loss(chaos):
        run = chaos.run("pipelines/enrich_exactly_once.py", rate=500, duration=60,
                        guarantee="exactly-once")
        assert run.lost == 0 and run.duplicates == 0

or lets the plugin search the fault schedules that break the test's assertions (docs/explore.md)::

    from pytest_streamchaos import explore

    @pytest.mark.chaos
    @explore(faults=["kill_driver", "kill_executor"], budget=10)
    def test_orders_job_is_exactly_once(chaos):
        run = chaos.run("jobs/orders.py", rate=100, duration=30, guarantee="exactly-once")
        assert run.duplicates == 0
"""

from typing import TYPE_CHECKING, Any

from pytest_streamchaos.deprecation import installed_version as _installed_version

# Imported on first use (PEP 562), not here: job-side code (a Spark driver or executor, or the
# pyspark_streamchaos data source that PySpark imports in every session's lookup worker) imports
# pytest_streamchaos.job (also as pytest_streamchaos.spark), which must not drag in pytest and the harness.
_LAZY = {
    "AggregateOracle": "pytest_streamchaos.analysis.aggregate",
    "CheckResult": "pytest_streamchaos.analysis.checker",
    "CheckFailed": "pytest_streamchaos.analysis.checker",
    "Checker": "pytest_streamchaos.analysis.checker",
    "compose": "pytest_streamchaos.analysis.checker",
    "History": "pytest_streamchaos.history",
    "RecordSpec": "pytest_streamchaos.workload.records",
    "UserCodeError": "pytest_streamchaos.usercode",
    "NOT_RECOVERED": "pytest_streamchaos.analysis.metrics",
    "NotMeasured": "pytest_streamchaos.analysis.metrics",
    "NotMeasurable": "pytest_streamchaos.analysis.metrics",
    "MetricParams": "pytest_streamchaos.analysis.metrics",
    "CustomOracle": "pytest_streamchaos.analysis.oracle",
    "IdentityOracle": "pytest_streamchaos.analysis.oracle",
    "TumblingWindowOracle": "pytest_streamchaos.analysis.oracle",
    "FaultSpec": "pytest_streamchaos.faults.spec",
    "FaultSpecError": "pytest_streamchaos.faults.spec",
    "Load": "pytest_streamchaos.runner.groups",
    "Watch": "pytest_streamchaos.runner.groups",
    "JobSetup": "pytest_streamchaos.runner.groups",
    "Timing": "pytest_streamchaos.runner.groups",
    "Reference": "pytest_streamchaos.analysis.reference",
    "explore": "pytest_streamchaos.exploration.mark",
    "ChaosFixture": "pytest_streamchaos.harness",
    "ChaosRun": "pytest_streamchaos.analysis.result",
    "RepeatedRun": "pytest_streamchaos.analysis.repeat",
}
if TYPE_CHECKING:  # what a type checker and an editor see of the lazy names above: their own types, not Any
    from pytest_streamchaos.analysis.aggregate import AggregateOracle as AggregateOracle
    from pytest_streamchaos.analysis.checker import Checker as Checker
    from pytest_streamchaos.analysis.checker import CheckFailed as CheckFailed
    from pytest_streamchaos.analysis.checker import CheckResult as CheckResult
    from pytest_streamchaos.analysis.checker import compose as compose
    from pytest_streamchaos.analysis.metrics import NOT_RECOVERED as NOT_RECOVERED
    from pytest_streamchaos.analysis.metrics import MetricParams as MetricParams
    from pytest_streamchaos.analysis.metrics import NotMeasurable as NotMeasurable
    from pytest_streamchaos.analysis.metrics import NotMeasured as NotMeasured
    from pytest_streamchaos.analysis.oracle import CustomOracle as CustomOracle
    from pytest_streamchaos.analysis.oracle import IdentityOracle as IdentityOracle
    from pytest_streamchaos.analysis.oracle import TumblingWindowOracle as TumblingWindowOracle
    from pytest_streamchaos.analysis.reference import Reference as Reference
    from pytest_streamchaos.analysis.repeat import RepeatedRun as RepeatedRun
    from pytest_streamchaos.analysis.result import ChaosRun as ChaosRun
    from pytest_streamchaos.exploration.mark import explore as explore
    from pytest_streamchaos.faults.spec import FaultSpec as FaultSpec
    from pytest_streamchaos.faults.spec import FaultSpecError as FaultSpecError
    from pytest_streamchaos.harness import ChaosFixture as ChaosFixture
    from pytest_streamchaos.history import History as History
    from pytest_streamchaos.runner.groups import JobSetup as JobSetup
    from pytest_streamchaos.runner.groups import Load as Load
    from pytest_streamchaos.runner.groups import Timing as Timing
    from pytest_streamchaos.runner.groups import Watch as Watch
    from pytest_streamchaos.usercode import UserCodeError as UserCodeError
    from pytest_streamchaos.workload.records import RecordSpec as RecordSpec
#: where every fault kind's decorator is (``kill_worker`` ...): made from the fault registry, so a new
#: kind is importable from here without a line in this file
_FAULT_MARKS = "pytest_streamchaos.faults.marks"


def _fault_marks() -> dict[str, object]:
    import importlib

    return dict(importlib.import_module(_FAULT_MARKS).DECORATORS)


def _submodule(name: str) -> bool:
    """Whether ``name`` is a module of this package (``from pytest_streamchaos import job`` asks for it
    before importing it: that must not load the fault registry, and with it pytest)."""
    import os

    here = os.path.dirname(__file__)
    return os.path.isdir(os.path.join(here, name)) or os.path.isfile(os.path.join(here, f"{name}.py"))


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__all__":  # the fault decorators are the registry's: listed on first use
        return [*_LAZY, *_fault_marks()]
    if not name.startswith("_") and not _submodule(name):
        marks = _fault_marks()
        if name in marks:
            return marks[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_fault_marks()])


#: the installed distribution's version: pyproject.toml's, as the install wrote it into the metadata
__version__ = _installed_version()
