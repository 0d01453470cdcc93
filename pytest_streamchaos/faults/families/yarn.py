"""The YARN family: what only a cluster manager has. ``restart_resourcemanager``: the ResourceManager killed
(SIGKILL) and started again on its state store after ``restart_after`` (default 0). With RM recovery on
(work-preserving, as the mini cluster runs it: docs/yarn.md) the running application keeps its containers,
its ApplicationMaster re-registers, and the job goes on; the run measures what it cost. The kill and the
restart are the cluster's :class:`~pytest_streamchaos.stack.capabilities.ResourceManagerRestart`, which only
the mini YARN cluster has: a cluster that is not YARN, or one the plugin attached to, refuses it when the run
is planned, naming why."""

from __future__ import annotations

from pytest_streamchaos.faults.context import CONFIRM_KILL_S
from pytest_streamchaos.faults.kind import Kill
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.stack.capabilities import ResourceManagerRestart
from pytest_streamchaos.stack.yarn import YarnKind

#: where the RM came back, on the timeline (the cluster's alive workers again: its NodeManagers resynced)
RM_BACK = YarnKind.RESOURCEMANAGER_BACK


class RestartResourceManager(Kill[None]):
    name = "restart_resourcemanager"
    doc = "kill YARN's ResourceManager and start it again on its state store (RM recovery) after restart_after"
    default_restart_after = 0.0
    needs = (ResourceManagerRestart,)

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    def target(self, planned: PlannedFault) -> str:
        return "resourcemanager"

    def inject(self, planned: PlannedFault) -> None:
        self.ctx.spark(ResourceManagerRestart).kill_resourcemanager()

    def confirm(self, planned: PlannedFault, handle: None) -> None:
        """The RM's process is gone."""
        self.ctx.spark(ResourceManagerRestart).wait_resourcemanager_gone(CONFIRM_KILL_S)

    def heal(self, planned: PlannedFault, handle: None) -> None:
        """Started again; back once it counts its NodeManagers RUNNING (on the timeline)."""
        self.ctx.spark(ResourceManagerRestart).restart_resourcemanager()
        self.ctx.watch(RM_BACK, "resourcemanager", lambda: len(self.ctx.cluster.alive_workers()) > 0)


KINDS = (RestartResourceManager,)
