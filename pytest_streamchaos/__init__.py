"""pytest-streamchaos: chaos testing for PySpark Structured Streaming jobs.

A test marks the faults it wants and asks the ``chaos`` fixture to run a job::

    from pytest_streamchaos import kill_worker

    @pytest.mark.chaos
    @kill_worker(after=30, restart_after=10)
    def test_survives_worker_loss(chaos):
        run = chaos.run("pipelines/enrich_exactly_once.py", rate=500, duration=60,
                        guarantee="exactly-once")
        assert run.lost == 0 and run.duplicates == 0
"""

from typing import Any

# Imported on first use (PEP 562), not here: job-side code (a Spark driver or executor, or the
# pyspark_streamchaos data source that PySpark imports in every session's lookup worker) imports
# pytest_streamchaos.job (also as pytest_streamchaos.spark), which must not drag in pytest and the harness.
_LAZY = {
    "AggregateOracle": "pytest_streamchaos.analysis.aggregate",
    "RecordSpec": "pytest_streamchaos.workload.records",
    "UserCodeError": "pytest_streamchaos.usercode",
    "NOT_RECOVERED": "pytest_streamchaos.analysis.metrics",
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
    **dict.fromkeys(
        ["bandwidth_limit", "isolate_broker", "kill_broker", "kill_datanode", "kill_driver", "kill_executor",
         "kill_master", "kill_namenode", "kill_worker", "network_delay", "network_partition", "packet_loss", "pause",
         "pause_namenode", "poison_records"],
        "pytest_streamchaos.faults.marks"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "NOT_RECOVERED",
    "AggregateOracle",
    "CustomOracle",
    "IdentityOracle",
    "MetricParams",
    "TumblingWindowOracle",
    "FaultSpec",
    "FaultSpecError",
    "bandwidth_limit",
    "isolate_broker",
    "kill_broker",
    "kill_driver",
    "kill_executor",
    "kill_master",
    "kill_worker",
    "network_delay",
    "network_partition",
    "packet_loss",
    "pause",
    "poison_records",
    "kill_namenode",
    "pause_namenode",
    "kill_datanode",
    "RecordSpec",
    "UserCodeError",
    "Load",
    "Watch",
    "JobSetup",
    "Timing",
]
__version__ = "0.1.0"
