"""The YARN family: what only a cluster manager has. ``restart_resourcemanager``: the ResourceManager killed
(SIGKILL) and started again on its state store after ``restart_after`` (default 0). With RM recovery on
(work-preserving, as the mini cluster runs it: docs/yarn.md) the running application keeps its containers,
its ApplicationMaster re-registers, and the job goes on; the run measures what it cost. The kill and the
restart go through the stack's interface (the cluster's master); a cluster that is not YARN, or one the
plugin attached to, refuses it before the job starts, naming why."""

from __future__ import annotations

from pytest_streamchaos.events import Kind
from pytest_streamchaos.faults.context import CONFIRM_KILL_S
from pytest_streamchaos.faults.kind import Kill
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.stack.base import SparkCluster

#: where the RM came back, on the timeline (the cluster's alive workers again: its NodeManagers resynced)
RM_BACK = Kind.RESOURCEMANAGER_BACK


class RestartResourceManager(Kill):
    name = "restart_resourcemanager"
    doc = "kill YARN's ResourceManager and start it again on its state store (RM recovery) after restart_after"
    default_restart_after = 0.0

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    @classmethod
    def refused_by_cluster(cls, spec: FaultSpec, cluster: SparkCluster) -> str | None:
        if cluster.master_url != "yarn":
            return ("the ResourceManager is YARN's: run the test on YARN (@pytest.mark.chaos(spark='yarn') or "
                    "--chaos-spark=yarn); on Spark standalone kill_master is the master's loss")
        if not cluster.host_access:
            return ("the ResourceManager's restart needs its process, and this YARN was attached by its conf dir (the "
                    "plugin did not start it): run the test on the mini cluster, or leave the fault out")
        return None

    def target(self, planned: PlannedFault) -> str:
        return "resourcemanager"

    def inject(self, planned: PlannedFault) -> None:
        self.ctx.cluster.kill_master(0)

    def confirm(self, planned: PlannedFault, handle: None) -> None:
        """The RM's process is gone."""
        self.ctx.cluster.wait_gone(self.ctx.cluster.masters[0], CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, handle: None) -> None:
        """Started again; back once it counts its NodeManagers RUNNING (on the timeline)."""
        self.ctx.cluster.restart_master(0)
        self.ctx.watch(RM_BACK, "resourcemanager", lambda: len(self.ctx.cluster.alive_workers()) > 0)


KINDS = (RestartResourceManager,)
