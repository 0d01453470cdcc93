"""The Kubernetes family: what only pods meet, through the Kubernetes API, each confirming its effect.

- ``delete_pod``: an executor pod deleted through the API server, as ``kubectl delete pod`` (or an operator) does
  it -- its container gets SIGTERM, the pod's grace period, then SIGKILL -- and Spark's executor allocator, which
  watches its pods, asks for a new one.
- ``evict_pod``: the same pod evicted through the Eviction API (``policy/v1``), as a node-pressure eviction or
  ``kubectl drain`` does it: marked ``DisruptionTarget``, then deleted with its grace period.
- ``drain_node``: the node cordoned and the job's executor pods evicted (``kubectl drain``); uncordoned on heal.
  On the one-node cluster the replacements wait Pending until then.
- ``oom_kill_executor``: an executor's container pushed over its memory limit; the kernel OOM-kills the
  executor inside it and Kubernetes reports ``OOMKilled``.

Each acts through a capability of the cluster (:class:`~pytest_streamchaos.stack.capabilities.PodDelete`,
``PodEvict``, ``NodeDrain``, ``ExecutorOom``), which only the ``k8s`` cluster manager has: any other cluster
refuses the fault when the run is planned, naming why."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.kind import FaultKind, H
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.capabilities import ExecutorOom, NodeDrain, PodDelete, PodEvict, SqueezedContainer
from pytest_streamchaos.stack.k8s import K8sKind

#: the pod's own grace period as Spark's executor pods have it (Kubernetes' default), and a margin for the API
POD_GRACE_S = 30.0
_GONE_MARGIN_S = 15.0


def check_grace(kind: str, params: dict[str, Any]) -> None:
    """A pod deletion's ``grace``, if given: a number of seconds >= 0."""
    grace = params.get("grace")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0):
        raise FaultSpecError(f"@{kind}: grace={grace!r} must be a number of seconds >= 0 (or None)")


def await_gone(k8s: PodDelete, pod: str, grace: float | None, role: str) -> float:
    """Poll until the deleted ``pod`` is gone from the API server (its grace period and a margin at most); the
    seconds it took."""
    timeout = (POD_GRACE_S if grace is None else float(grace)) + _GONE_MARGIN_S
    t0 = time.monotonic()
    poll(lambda: k8s.pod_gone(pod), timeout, interval=0.1, on_timeout=lambda _: TimeoutError(
        f"{role} pod {pod} still in the API server {timeout:g}s after its deletion"))
    return round(time.monotonic() - t0, 2)


class ExecutorPodFault(FaultKind[H]):
    """A fault of one executor pod of the job, the oldest: what the kinds of this family share."""

    takes_down = "executor"

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.pods: dict[int, str] = {}

    def target(self, planned: PlannedFault) -> str:
        return f"executor pod {self.pods.get(id(planned), '?')}"

    def oldest(self, planned: PlannedFault, capability: type[PodDelete], verb: str) -> list[str]:
        """The job's executor pods now, oldest first, the first one this fault's target."""
        before = list(self.ctx.spark(capability).executor_pods())
        if not before:
            raise RuntimeError(f"the job has no executor pod to {verb}")
        self.pods[id(planned)] = before[0]
        return before


class DeletePod(ExecutorPodFault[tuple[str, list[str]]]):
    name = "delete_pod"
    doc = ("delete an executor pod through the Kubernetes API (grace: its gracePeriodSeconds, default the pod's "
           "own); Spark's allocator asks for a replacement")
    args: ClassVar[dict[str, str]] = {"grace": "gracePeriodSeconds of the deletion (None: the pod's own, 30 s; 0: "
                                               "at once, SIGKILL)"}
    needs = (PodDelete,)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_grace(cls.name, params)

    def inject(self, planned: PlannedFault) -> tuple[str, list[str]]:
        before = self.oldest(planned, PodDelete, "delete")
        grace = planned.spec.params.get("grace")
        self.ctx.spark(PodDelete).delete_pod(before[0], grace=grace)
        return before[0], before

    def confirm(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> dict[str, object]:
        """The pod is gone from the API server (its container ended, within its grace period)."""
        pod, before = handle
        k8s = self.ctx.spark(PodDelete)
        grace = planned.spec.params.get("grace")
        gone_after = await_gone(k8s, pod, grace, "executor")
        # watched from now, not from the heal (the load's end): the timeline says when the replacement ran
        self.ctx.watch(K8sKind.EXECUTOR_POD_REPLACED, f"executor pod {pod}", lambda: k8s.replacement_pod(before))
        return {"pod": pod, "grace": grace, "gone_after": gone_after}

    def heal(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> None:
        """Nothing to undo: Spark replaces the pod (its replacement Running is on the timeline from confirm)."""


class EvictPod(DeletePod):
    """``delete_pod``'s target and checks, but the pod evicted through the Eviction API: the API server marks it
    ``DisruptionTarget`` (``EvictionByEvictionAPI``) and deletes it with its grace period."""

    name = "evict_pod"
    doc = ("evict an executor pod through the Kubernetes Eviction API (as a node-pressure eviction or kubectl drain "
           "does; grace: its deletion's gracePeriodSeconds); Spark's allocator asks for a replacement")
    needs = (PodEvict,)

    def __init__(self, ctx: FaultContext) -> None:
        super().__init__(ctx)
        self.disruption: dict[int, str | None] = {}

    def inject(self, planned: PlannedFault) -> tuple[str, list[str]]:
        k8s = self.ctx.spark(PodEvict)
        before = self.oldest(planned, PodEvict, "evict")
        k8s.evict_pod(before[0], grace=planned.spec.params.get("grace"))
        # the API server marks the pod before it deletes it (the eviction's own mark, not a plain DELETE's)
        self.disruption[id(planned)] = k8s.pod_disruption(before[0])
        return before[0], before

    def confirm(self, planned: PlannedFault, handle: tuple[str, list[str]]) -> dict[str, object]:
        """The pod marked by the eviction (``disruption``) and gone from the API server."""
        return {**super().confirm(planned, handle), "disruption": self.disruption.get(id(planned))}


#: how long a drain's evicted pods may take to go (their grace period), and its default length
DRAIN_S = 20.0


class DrainNode(FaultKind[list[str]]):
    name = "drain_node"
    doc = ("drain the Kubernetes node as kubectl drain does: cordon it (spec.unschedulable) and evict the job's "
           "executor pods; uncordoned on heal (after duration, default 20 s): on a one-node cluster the "
           "replacements wait Pending until then")
    args: ClassVar[dict[str, str]] = {"grace": "gracePeriodSeconds of the evictions (None: the pods' own, 30 s)"}
    takes_down = "executor"
    default_restart_after = DRAIN_S
    needs = (NodeDrain,)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        check_grace(cls.name, params)

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return True

    def target(self, planned: PlannedFault) -> str:
        return "node (cordoned, its executor pods evicted)"

    def inject(self, planned: PlannedFault) -> list[str]:
        k8s = self.ctx.spark(NodeDrain)
        before = list(k8s.executor_pods())
        k8s.cordon(True)
        for pod in before:
            k8s.evict_pod(pod, grace=planned.spec.params.get("grace"))
        return before

    def confirm(self, planned: PlannedFault, handle: list[str]) -> dict[str, object]:
        """The node reads cordoned back, and every evicted pod is gone; from then on, the timeline says when a
        replacement waits Pending (the node unschedulable)."""
        k8s = self.ctx.spark(NodeDrain)
        if not k8s.cordoned():
            raise RuntimeError("the node does not read back cordoned (spec.unschedulable)")
        grace = planned.spec.params.get("grace")
        timeout = (POD_GRACE_S if grace is None else float(grace)) + _GONE_MARGIN_S
        t0 = time.monotonic()
        poll(lambda: all(k8s.pod_gone(p) for p in handle), timeout, interval=0.1, on_timeout=lambda _: TimeoutError(
            f"evicted executor pods still in the API server {timeout:g}s after the drain: "
            f"{[p for p in handle if not k8s.pod_gone(p)]}"))
        self.ctx.watch(K8sKind.EXECUTOR_POD_PENDING, "executor pod", lambda: ",".join(k8s.pending_executor_pods()))
        return {"cordoned": True, "evicted": handle, "gone_after": round(time.monotonic() - t0, 2)}

    def check(self, planned: PlannedFault, handle: list[str]) -> str | None:
        return None if self.ctx.spark(NodeDrain).cordoned() else "the node was uncordoned"

    def heal(self, planned: PlannedFault, handle: list[str]) -> None:
        """Uncordoned (read back); the timeline says when a replacement runs."""
        k8s = self.ctx.spark(NodeDrain)
        k8s.cordon(False)
        if k8s.cordoned():
            raise RuntimeError("the node still reads cordoned after the uncordon")
        self.ctx.watch(K8sKind.EXECUTOR_POD_REPLACED, "executor pod", lambda: k8s.replacement_pod(handle))


#: how long the squeezed executor has to cross its limit and end
OOM_S = 60.0


class OomKillExecutor(ExecutorPodFault[tuple[SqueezedContainer, list[str]]]):
    name = "oom_kill_executor"
    doc = ("an executor OOM-killed by its pod's memory limit: its container's memory cgroup squeezed to just above "
           "its usage and a small allocation run in the container (kubectl exec) pushes it over; the kernel kills "
           "the executor's JVM, Kubernetes reports OOMKilled, Spark asks for a replacement")
    needs = (ExecutorOom,)

    def inject(self, planned: PlannedFault) -> tuple[SqueezedContainer, list[str]]:
        before = self.oldest(planned, ExecutorOom, "OOM-kill")
        return self.ctx.spark(ExecutorOom).squeeze_executor(before[0]), before

    def confirm(self, planned: PlannedFault, handle: tuple[SqueezedContainer, list[str]]) -> dict[str, object]:
        """The kernel OOM-killed in the container's cgroup and the container ended ``OOMKilled``, as the API
        server says (or, when Spark deleted the pod before its end was read, its cgroup counted the kill)."""
        sq, before = handle
        k8s = self.ctx.spark(ExecutorOom)
        seen: dict[str, Any] = {"kills": 0, "end": None}
        t0 = time.monotonic()

        def ended() -> bool:
            kills, end = k8s.oom_state(sq)
            seen["kills"] = max(seen["kills"], kills or 0)
            seen["end"] = end or seen["end"]
            # the cgroup goes with the container a moment before the API server has its end: wait for that
            return seen["end"] is not None or k8s.pod_gone(sq.pod)

        poll(ended, OOM_S, interval=0.1, on_timeout=lambda _: TimeoutError(
            f"executor pod {sq.pod} still running {OOM_S:g}s after its container was squeezed to "
            f"{sq.limit >> 20} MiB (OOM kills in its cgroup: {seen['kills']})"))
        k8s.release(sq)
        end = seen["end"] or {}
        if end.get("reason", "OOMKilled") != "OOMKilled" or not (seen["kills"] or end):
            raise RuntimeError(f"executor pod {sq.pod} ended, but not OOM-killed: {end or 'gone, no OOM kill seen'}")
        self.ctx.watch(K8sKind.EXECUTOR_POD_REPLACED, f"executor pod {sq.pod}", lambda: k8s.replacement_pod(before))
        return {**sq.detail(), "oom_kills": seen["kills"], "reason": end.get("reason"),
                "exit_code": end.get("exit_code"), "killed_after": round(time.monotonic() - t0, 2)}

    def heal(self, planned: PlannedFault, handle: tuple[SqueezedContainer, list[str]]) -> None:
        """The allocation ended (already, once confirmed); the replacement is on the timeline from confirm."""
        self.ctx.spark(ExecutorOom).release(handle[0])


KINDS = (DeletePod, EvictPod, DrainNode, OomKillExecutor)
