"""What the plugin and the runner ask a fault kind instead of matching its name: whether it needs the
host's network machinery, reaches the cluster's JVMs, stops the driver, delays a link, spares the
observer; and the scheduler's driver hold and clock."""

from __future__ import annotations

import time

import pytest

from pytest_streamchaos.faults.kind import FaultAction, LinkDelay
from pytest_streamchaos.faults.registry import kind_of, parse
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.testing import wait_for


@pytest.mark.parametrize(("name", "kwargs", "host_network"), [
    ("network_partition", {}, False),  # the job's Kafka links: the stack's Toxiproxy
    ("network_delay", {"ms": 50, "target": "broker-1"}, False),
    ("bandwidth_limit", {"kbit": 100, "target": "kafka"}, False),
    ("packet_loss", {"percent": 5}, True),  # Toxiproxy has no loss toxic: iptables on the proxies' ports
    ("network_partition", {"target": "worker-0"}, True),
    ("network_delay", {"ms": 50, "target": "driver"}, True),
    ("isolate_broker", {}, True),
    ("kill_broker", {}, False),
    ("kill_worker", {}, False),
    ("pause", {"target": "driver"}, False),
])
def test_which_faults_need_the_hosts_network_machinery(name, kwargs, host_network):
    spec = parse(name, kwargs=kwargs)
    assert kind_of(spec).needs_host_network(spec) is host_network


@pytest.mark.parametrize(("name", "kwargs", "cluster"), [
    ("kill_worker", {}, True), ("kill_executor", {}, True), ("kill_master", {}, True),
    ("pause", {"target": "worker"}, True), ("pause", {"target": "executor"}, True),
    ("pause", {"target": "master"}, True), ("pause", {"target": "driver"}, False),
    ("pause", {"target": "broker"}, False), ("kill_driver", {}, False), ("kill_broker", {}, False),
    ("network_partition", {"target": "worker-1"}, True), ("network_delay", {"ms": 9, "target": "master"}, True),
    ("network_partition", {"target": "driver"}, False), ("network_partition", {}, False),
    ("poison_records", {}, False), ("kill_namenode", {}, False),
])
def test_which_faults_cannot_reach_a_job_in_local_mode(name, kwargs, cluster):
    spec = parse(name, kwargs=kwargs)
    assert kind_of(spec).reaches_cluster(spec) is cluster


@pytest.mark.parametrize(("name", "kwargs", "stops"), [
    ("kill_driver", {}, True), ("pause", {"target": "driver"}, True), ("pause", {"target": "worker"}, False),
    ("kill_worker", {}, False), ("network_partition", {"target": "driver"}, False),
])
def test_which_faults_stop_the_driver(name, kwargs, stops):
    spec = parse(name, kwargs=kwargs)
    assert kind_of(spec).stops_driver(spec) is stops


def test_link_delays():
    spec = parse("network_delay", kwargs={"ms": 300, "target": "worker-0", "above_timeout": True})
    assert kind_of(spec).link_delay(spec) == LinkDelay("worker-0", 300.0, True)
    assert kind_of(parse("network_delay", kwargs={"ms": 3})).link_delay(parse("network_delay", kwargs={"ms": 3})) \
        == LinkDelay("kafka", 3.0, None)
    loss = parse("packet_loss", kwargs={"percent": 5})
    assert kind_of(loss).link_delay(loss) is None


class Held(FaultAction):
    """Takes effect at once (what it hits does not matter here)."""

    def target(self, planned) -> str:
        return planned.spec.kind

    def inject(self, planned) -> None:
        return None


def test_the_supervisor_is_held_while_a_fault_that_stops_the_driver_acts():
    rec = Recorder()
    sched = FaultScheduler(plan([parse("pause", kwargs={"target": "driver", "duration": 0.4}),
                                 parse("kill_worker", kwargs={"after": 0.6})]),
                           {"pause": Held(), "kill_worker": Held()}, rec)
    assert not sched.acting_on_driver()
    sched.start(time.time())
    wait_for(lambda: any(e.kind == "fault_injected" for e in rec.events()), 5, "the driver's pause")
    assert sched.acting_on_driver()
    wait_for(lambda: any(e.kind == "fault_healed" for e in rec.events()), 5, "the pause's heal")
    wait_for(lambda: len([e for e in rec.events() if e.kind == "fault_injected"]) == 2, 5, "the worker kill")
    assert not sched.acting_on_driver(), "a worker kill leaves the driver to its supervisor"
    sched.stop()


def test_the_scheduler_stamps_on_the_clock_it_is_given():
    offset = 1000.0

    def clock() -> float:
        return time.time() + offset

    rec = Recorder(clock)
    sched = FaultScheduler(plan([parse("kill_worker", kwargs={"after": 0.1, "restart_after": 0.1})]),
                           {"kill_worker": Held()}, rec, clock=clock)
    steady = clock()
    sched.start(steady)
    wait_for(lambda: any(e.kind == "fault_healed" for e in rec.events()), 5, "the heal")
    sched.stop()
    injected = next(e.t for e in rec.events() if e.kind == "fault_injected")
    assert steady + 0.1 <= injected < steady + 1.0, "fired 'after' seconds from steady state, on the given clock"
    assert sched.last_heal_due() == pytest.approx(injected + 0.1)
