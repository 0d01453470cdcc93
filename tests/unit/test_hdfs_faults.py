"""The HDFS fault kinds without a cluster: their marks' defaults and checks, and the message of an HDFS
fault in a run that has no HDFS. (On a real cluster: tests/integration/test_hdfs.py.)"""

import time

import pytest

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.registry import actions_for, parse
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.poll import wait_for


def test_kill_namenode_restarts_at_once_by_default():
    assert parse("kill_namenode").restart_after == 0.0
    assert parse("kill_namenode", kwargs={"restart_after": 5}).restart_after == 5


def test_kill_datanode_takes_an_int_index_and_stays_dead_by_default():
    spec = parse("kill_datanode", kwargs={"index": 1})
    assert spec.index == 1 and spec.restart_after is None
    with pytest.raises(FaultSpecError, match="not a role of this fault"):
        parse("kill_datanode", kwargs={"index": "leader"})


def test_pause_namenode_takes_a_duration():
    assert parse("pause_namenode", kwargs={"duration": 3}).duration == 3
    with pytest.raises(FaultSpecError, match="did you mean 'duration'"):
        parse("pause_namenode", kwargs={"durration": 3})


def test_the_marks_are_importable():
    from pytest_streamchaos import kill_datanode, kill_namenode, pause_namenode

    assert {f.__name__ for f in (kill_namenode, pause_namenode, kill_datanode)} == {
        "kill_namenode", "pause_namenode", "kill_datanode"}


@pytest.mark.parametrize("kind", ["kill_namenode", "pause_namenode", "kill_datanode"])
def test_an_hdfs_fault_in_a_run_without_hdfs_says_what_is_needed(kind):
    rec = Recorder()
    ctx = FaultContext(cluster=None, kafka=None, job=None, input_topic="", recorder=rec)
    with FaultScheduler(plan([parse(kind)]), actions_for(ctx), rec) as sched:
        sched.start(time.time())
        wait_for(sched.done, 5, "the fault to fail")
    assert len(sched.errors) == 1
    needs = 'this run has no HDFS: an HDFS fault needs chaos.run(..., setup=JobSetup(checkpoint="hdfs"))'
    assert needs in sched.errors[0]
