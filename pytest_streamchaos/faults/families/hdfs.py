"""The HDFS family: the run's HDFS (``chaos.run(..., checkpoint="hdfs")``) losing its NameNode (killed
or frozen) or a DataNode. Each records what HDFS did in reaction: safe mode left, DataNodes
registered again or declared dead."""

from __future__ import annotations

import functools
from typing import Any

from pytest_streamchaos import storages
from pytest_streamchaos.faults.context import CONFIRM_KILL_S, CONFIRM_PAUSE_S, signal_of
from pytest_streamchaos.faults.kind import FaultKind, H, Kill
from pytest_streamchaos.faults.moments import OUTPUT_VISIBLE_UNCOMMITTED, TASKS_RUNNING
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.stack.capabilities import HdfsCluster
from pytest_streamchaos.stack.hdfs import HdfsKind


class _OnHdfs(FaultKind[H]):
    """Base of the HDFS faults: the run's HDFS, or a failure saying how to get one."""

    store = HdfsCluster

    @classmethod
    def refused_by_run(cls, spec: FaultSpec, *, checkpoint: str) -> str | None:
        storage = storages.with_protocol(HdfsCluster)  # the storage whose service these faults act on
        if storage is None:
            return "no storage's service is an HDFS (pytest_streamchaos.storages.STORAGES)"
        if checkpoint != storage.name:
            return (f"an HDFS fault needs the run's checkpoint on {storage.service()}: chaos.run(..., "
                    f"setup=JobSetup(checkpoint=\"{storage.name}\")) or --chaos-checkpoint={storage.name}")
        return None

    def _hdfs(self) -> HdfsCluster[Any]:
        return self.ctx.store(HdfsCluster)

    def _watch_registered(self, hdfs: HdfsCluster[Any], datanodes: list[int]) -> None:
        """Record when each of ``datanodes`` has registered with the NameNode (polled in the
        background by ``ctx.watch``, from the heal on)."""
        for i in datanodes:
            self.ctx.watch(HdfsKind.DATANODE_REGISTERED, f"datanode-{i}",
                           functools.partial(hdfs.datanode_registered, i))


class KillNamenode(_OnHdfs[None], Kill[None]):
    """Signal the NameNode; heal restarts it on the same ports and name dir."""

    name = "kill_namenode"
    doc = ("kill the HDFS NameNode; restart it (same ports, same name dir) after "
           "restart_after (default 0: at once)")
    default_restart_after = 0.0  # a NameNode comes back, as a killed driver does
    # the job's recovery is the NameNode's restart, its safe mode (the DataNodes re-register), the supervised
    # driver's restart and query, then the backlog's catch-up and the 5 s hold: on a busy 2-core CI machine the
    # first output came 37 s after the kill and the recovery had not settled 51 s after it (RECOVERY_WINDOW_S, 60 s,
    # was too short for it), so a run without a duration keeps its load up to 90 s after the heal
    least_recovery_window = 90.0
    # polled on an HDFS checkpoint (the checkpoint gate cannot act there): what @explore may aim it at
    moments = (OUTPUT_VISIBLE_UNCOMMITTED, TASKS_RUNNING)

    def target(self, planned: PlannedFault) -> str:
        return "namenode"

    def inject(self, planned: PlannedFault) -> None:
        self._hdfs().kill_namenode(signal_of(planned), wait=False)

    def confirm(self, planned: PlannedFault, handle: None) -> None:
        hdfs = self._hdfs()
        hdfs.wait_gone(hdfs.namenode, CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, handle: None) -> None:
        hdfs = self._hdfs()
        hdfs.restart_namenode(wait=False)
        # a new NameNode starts in safe mode and knows no DataNode: each registers again and reports
        # its blocks, then the NameNode leaves safe mode
        self.ctx.watch(HdfsKind.NAMENODE_SAFEMODE_EXIT, "namenode", hdfs.out_of_safemode)
        self._watch_registered(hdfs, list(range(len(hdfs.datanodes))))


class PauseNamenode(_OnHdfs[None]):
    """SIGSTOP the NameNode (clients hang, DataNodes miss heartbeat replies)."""

    name = "pause_namenode"
    doc = "SIGSTOP the HDFS NameNode for duration seconds (SIGCONT on heal)"

    def target(self, planned: PlannedFault) -> str:
        return "namenode"

    def inject(self, planned: PlannedFault) -> None:
        self._hdfs().pause_namenode(wait=False)

    def confirm(self, planned: PlannedFault, handle: None) -> None:
        hdfs = self._hdfs()
        hdfs.wait_paused(hdfs.namenode, CONFIRM_PAUSE_S)

    def heal(self, planned: PlannedFault, handle: None) -> None:
        self._hdfs().resume_namenode()


class KillDatanode(_OnHdfs[int], Kill[int]):
    """Signal DataNode ``index`` (default 0); record when the NameNode declares it dead; heal (with
    restart_after) starts it again on its ports and data dir."""

    name = "kill_datanode"
    doc = ("kill HDFS DataNode index= (an int, default 0); restart it after restart_after, "
           "or leave it dead")

    def _index(self, planned: PlannedFault) -> int:
        i = planned.spec.index if isinstance(planned.spec.index, int) else 0
        n = len(self._hdfs().datanodes)
        if i >= n:
            raise IndexError(f"index={i}: the HDFS cluster has {n} DataNodes")
        return i

    def target(self, planned: PlannedFault) -> str:
        return f"datanode-{self._index(planned)}"

    def inject(self, planned: PlannedFault) -> int:
        hdfs, i = self._hdfs(), self._index(planned)
        hdfs.kill_datanode(i, signal_of(planned), wait=False)
        self.ctx.watch(HdfsKind.DATANODE_DEAD, f"datanode-{i}", lambda: f"datanode-{i}" in hdfs.state().dead,
                       timeout=hdfs.dead_after_s + 30)
        return i

    def confirm(self, planned: PlannedFault, i: int) -> None:
        hdfs = self._hdfs()
        hdfs.wait_gone(hdfs.datanodes[i], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, i: int) -> None:
        hdfs = self._hdfs()
        hdfs.restart_datanode(i, wait=False)
        self._watch_registered(hdfs, [i])


KINDS = (KillNamenode, PauseNamenode, KillDatanode)
