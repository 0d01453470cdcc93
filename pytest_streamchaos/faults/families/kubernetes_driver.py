"""The Kubernetes family's driver fault (issue 51): ``delete_driver_pod``, the driver pod of a cluster-mode job
(``JobSetup(deploy_mode="cluster")`` on the ``k8s`` manager) deleted through the API server as ``kubectl delete
pod`` does it (SIGTERM, the pod's grace period, then SIGKILL). The driver's Job recreates it (``backoffLimit``),
and the new driver resumes the query from its checkpoint: the restart is Kubernetes', not the plugin's. Its own
module beside ``kubernetes.py``'s executor faults; the deletion is the cluster's
:class:`~pytest_streamchaos.stack.capabilities.PodDelete`, the driver pods the job's
(:class:`~pytest_streamchaos.stack.capabilities.DriverPods`, ``stack/k8s/driver_job.py``)."""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.families.kubernetes import DeletePod, await_gone, check_grace
from pytest_streamchaos.faults.kind import FaultKind
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.stack.capabilities import DriverPods, PodDelete
from pytest_streamchaos.stack.k8s import K8sKind


class DeleteDriverPod(FaultKind[tuple[str, list[str]]]):
    name = "delete_driver_pod"
    doc = ("delete the driver pod of a cluster-mode job through the Kubernetes API (grace: its gracePeriodSeconds, "
           "default the pod's own); the driver's Job recreates it and the query resumes from its checkpoint")
    args: ClassVar[dict[str, str]] = DeletePod.args
    takes_down = "driver"
    needs = (PodDelete,)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_grace(cls.name, params)

    @classmethod
    def stops_driver(cls, spec: FaultSpec) -> bool:
        return True  # its Job restarts it: no supervisor may

    @classmethod
    def refused_by_deploy_mode(cls, spec: FaultSpec, deploy_mode: str) -> str | None:
        if deploy_mode == "cluster":
            return None
        return (f"the driver of a {deploy_mode}-mode job runs on this host, not in a pod; fix: "
                "JobSetup(deploy_mode='cluster'), or @kill_driver for a driver here")

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.pods: dict[int, str] = {}

    def _job(self) -> DriverPods:
        job = self.ctx.job
        if not isinstance(job, DriverPods):
            raise RuntimeError(f"@{self.name}: the job's driver is no pod (client mode runs it on this host); fix: "
                               "JobSetup(deploy_mode='cluster'), or @kill_driver for a driver here")
        return job

    def target(self, planned: PlannedFault) -> str:
        return f"driver pod {self.pods.get(id(planned), '?')}"

    def inject(self, planned: PlannedFault) -> tuple[str, list[str]]:
        job = self._job()
        before = job.driver_pods()
        pod, _ = job.delete_driver_pod(grace=planned.spec.params.get("grace"))
        self.pods[id(planned)] = pod
        return pod, before

    def confirm(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> dict[str, object]:
        """The pod is gone from the API server (its driver ended, within its grace period)."""
        pod, before = handle
        job = self._job()
        grace = planned.spec.params.get("grace")
        gone_after = await_gone(self.ctx.spark(PodDelete), pod, grace, "driver")
        # watched from now: the timeline says when the Job's new driver pod ran
        self.ctx.watch(K8sKind.DRIVER_POD_REPLACED, f"driver pod {pod}", lambda: job.running_driver(before))
        return {"pod": pod, "grace": grace, "gone_after": gone_after, "job": job.job_name}

    def heal(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> None:
        """Nothing to undo: the Job recreates the pod (its Running replacement is on the timeline from confirm)."""


KINDS = (DeleteDriverPod,)
