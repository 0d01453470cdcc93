"""The Kubernetes family: what only pods meet. ``delete_pod``: an executor pod deleted through the API server,
as ``kubectl delete pod`` (or a node's eviction, or an operator) does it -- its container gets SIGTERM, the
pod's grace period, then SIGKILL -- and Spark's executor allocator, which watches its pods, asks for a new one.
The deletion and the watch are the cluster's :class:`~pytest_streamchaos.stack.capabilities.PodDelete`, which
only the ``k8s`` cluster manager has: any other cluster refuses it when the run is planned, naming why."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.kind import FaultKind
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.capabilities import PodDelete
from pytest_streamchaos.stack.k8s import K8sKind

#: the pod's own grace period as Spark's executor pods have it (Kubernetes' default), and a margin for the API
POD_GRACE_S = 30.0
_GONE_MARGIN_S = 15.0


class DeletePod(FaultKind[tuple[str, list[str]]]):
    name = "delete_pod"
    doc = ("delete an executor pod through the Kubernetes API (grace: its gracePeriodSeconds, default the pod's "
           "own); Spark's allocator asks for a replacement")
    args: ClassVar[dict[str, str]] = {"grace": "gracePeriodSeconds of the deletion (None: the pod's own, 30 s; 0: "
                                               "at once, SIGKILL)"}
    takes_down = "executor"
    needs = (PodDelete,)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        grace = params.get("grace")
        if grace is not None and (not isinstance(grace, (int, float)) or grace < 0):
            raise FaultSpecError(f"@{cls.name}: grace={grace!r} must be a number of seconds >= 0 (or None)")

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.pods: dict[int, str] = {}

    def target(self, planned: PlannedFault) -> str:
        return f"executor pod {self.pods.get(id(planned), '?')}"

    def inject(self, planned: PlannedFault) -> tuple[str, list[str]]:
        k8s = self.ctx.spark(PodDelete)
        before = list(k8s.executor_pods())
        if not before:
            raise RuntimeError("the job has no executor pod to delete")
        self.pods[id(planned)] = before[0]
        grace = planned.spec.params.get("grace")
        k8s.delete_pod(before[0], grace=grace)
        return before[0], before

    def confirm(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> dict[str, object]:
        """The pod is gone from the API server (its container ended, within its grace period)."""
        pod, _ = handle
        k8s = self.ctx.spark(PodDelete)
        grace = planned.spec.params.get("grace")
        timeout = (POD_GRACE_S if grace is None else float(grace)) + _GONE_MARGIN_S
        t0 = time.monotonic()
        poll(lambda: k8s.pod_gone(pod), timeout, interval=0.1, on_timeout=lambda _: TimeoutError(
            f"executor pod {pod} still in the API server {timeout:g}s after its deletion"))
        # watched from now, not from the heal (the load's end): the timeline says when the replacement ran
        before = handle[1]
        self.ctx.watch(K8sKind.EXECUTOR_POD_REPLACED, f"executor pod {pod}", lambda: k8s.replacement_pod(before))
        return {"pod": pod, "grace": grace, "gone_after": round(time.monotonic() - t0, 2)}

    def heal(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> None:
        """Nothing to undo: Spark replaces the pod (its replacement Running is on the timeline from confirm)."""


KINDS = (DeletePod,)
