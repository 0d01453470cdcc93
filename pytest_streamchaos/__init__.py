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

from pytest_streamchaos.analysis.aggregate import AggregateOracle
from pytest_streamchaos.analysis.metrics import NOT_RECOVERED, MetricParams
from pytest_streamchaos.analysis.oracle import CustomOracle, IdentityOracle, TumblingWindowOracle
from pytest_streamchaos.faults.marks import (
    bandwidth_limit,
    kill_broker,
    kill_driver,
    kill_executor,
    kill_master,
    kill_worker,
    network_delay,
    network_partition,
    packet_loss,
    pause,
    poison_records,
)
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError
from pytest_streamchaos.workload.records import RecordSpec

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
    "RecordSpec",
]
__version__ = "0.1.0"
