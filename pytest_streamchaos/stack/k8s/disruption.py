"""What pods meet besides a ``DELETE`` (issue 51), as the ``k8s`` Spark cluster serves it
(:class:`PodDisruptions`, a mixin of :class:`~.spark.K8sSparkCluster`):

- an **eviction** through the Eviction API (``POST .../pods/<name>/eviction``, ``policy/v1``), as a node-pressure
  eviction or ``kubectl drain`` asks for one: the API server checks the pod's disruption budgets, marks the pod
  with a ``DisruptionTarget`` condition (reason ``EvictionByEvictionAPI``) and deletes it;
- a **drain**: the node cordoned (``spec.unschedulable``, as ``kubectl cordon``), then the job's executor pods
  evicted; uncordoned again on heal;
- an **OOM kill by the container's memory limit**: the executor container's memory cgroup squeezed to just above
  what it uses now, then a small allocation run inside the container (``kubectl exec``: its cgroup, its PID
  namespace) pushes it over; the kernel's OOM killer, inside that cgroup, kills the largest process there -- the
  executor's JVM -- and containerd reports the container ``OOMKilled``. Why not a plain lower limit: on cgroup
  v1 the kernel refuses a ``memory.limit_in_bytes`` below the usage it cannot reclaim (``EBUSY``, no swap here)
  instead of OOM-killing; and an in-place resize (``pods/<name>/resize``) is refused by the kubelet below the
  container's usage, by design, to avoid exactly this kill.
"""

from __future__ import annotations

import errno
import glob
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_streamchaos.errors import StackError
from pytest_streamchaos.stack.capabilities import SqueezedContainer
from pytest_streamchaos.stack.k8s import build, spark_image
from pytest_streamchaos.stack.k8s.api import Api, ApiError
from pytest_streamchaos.stack.k8s.cluster import NODE, Cluster
from pytest_streamchaos.stack.k8s.watcher import NAMESPACE, disruption, pod_ended
from pytest_streamchaos.stack.process import ManagedProcess

MEMORY_CGROUP = "/sys/fs/cgroup/memory"
#: what the squeezed container keeps above its usage: small beside the JVM (so the OOM killer picks the JVM),
#: big enough that the squeeze itself does not trigger the kill before the allocation starts
SQUEEZE_MARGIN = 32 << 20
#: the allocation run in the container: 4 MiB at a time, every byte written (so it is resident), until killed or
#: its stdin closes (``kubectl exec -i`` ended: the heal)
HOG = ("import os, sys, threading, time\n"
       "threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()\n"
       "held = []\n"
       "while True:\n"
       "    held.append(b'\\x01' * (4 << 20))\n"
       "    time.sleep(0.02)\n")


def pod(api: Api, name: str) -> dict[str, Any] | None:
    """The pod ``name`` as the API server has it now, or None when it is gone."""
    try:
        return dict(api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"))
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def evict(api: Api, name: str, grace: float | None = None) -> float:
    """``POST`` an Eviction of the pod (``grace``: its ``deleteOptions.gracePeriodSeconds``; None: the pod's own);
    when it was asked. A refusal (a disruption budget's 429) raises :class:`ApiError`."""
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": NAMESPACE}}
    if grace is not None:
        body["deleteOptions"] = {"gracePeriodSeconds": int(grace)}
    at = time.time()
    api.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/eviction", body)
    return at


def set_unschedulable(api: Api, on: bool, node: str = NODE) -> None:
    """Cordon (``on``) or uncordon the node, as ``kubectl cordon`` / ``uncordon`` do."""
    api.call("PATCH", f"/api/v1/nodes/{node}", {"spec": {"unschedulable": on}},
             content_type="application/merge-patch+json")


def unschedulable(api: Api, node: str = NODE) -> bool:
    """Whether the node is cordoned now."""
    return bool(api.get(f"/api/v1/nodes/{node}").get("spec", {}).get("unschedulable"))


# -- the memory squeeze ------------------------------------------------------------------------------------

def container_cgroup(found: dict[str, Any], root: str = MEMORY_CGROUP) -> Path:
    """The memory cgroup of the pod's first container on this host (the kubelet's cgroupfs layout:
    ``kubepods[/<qos>]/pod<uid>/<container id>``)."""
    uid = found["metadata"]["uid"]
    statuses = found.get("status", {}).get("containerStatuses") or [{}]
    cid = str(statuses[0].get("containerID", "")).split("://")[-1]
    if not cid:
        raise StackError(f"pod {found['metadata']['name']} has no running container yet")
    hits = glob.glob(os.path.join(root, "kubepods", "**", f"pod{uid}", cid), recursive=True)
    if not hits:
        raise StackError(f"no memory cgroup of container {cid[:12]} of pod {found['metadata']['name']} under "
                         f"{root}/kubepods (a cgroup v1 host with the kubelet's cgroupfs driver is needed)")
    return Path(hits[0])


def read_int(path: Path) -> int:
    return int(path.read_text().split()[0])


def oom_kills(cgroup: Path) -> int | None:
    """The kernel's count of OOM kills in ``cgroup`` (``memory.oom_control``'s ``oom_kill``), None once gone."""
    try:
        lines = (cgroup / "memory.oom_control").read_text().splitlines()
    except OSError:
        return None
    return next((int(v) for k, v in (line.split() for line in lines) if k == "oom_kill"), 0)


@dataclass
class Squeeze:
    """One container squeezed: its cgroup, its limit before and now, its usage then, the allocation in it."""

    pod: str
    cgroup: Path
    limit_before: int
    limit: int
    usage: int
    oom_kills_before: int
    hog: ManagedProcess | None = None
    released: bool = field(default=False)

    def detail(self) -> dict[str, object]:
        mib = 1 << 20
        return {"pod": self.pod, "limit_mib": round(self.limit_before / mib),
                "squeezed_to_mib": round(self.limit / mib), "usage_mib": round(self.usage / mib)}


def memory_stat(cgroup: Path) -> dict[str, int]:
    """``cgroup``'s ``memory.stat`` (bytes and counts by name)."""
    return {k: int(v) for k, v in (line.split() for line in (cgroup / "memory.stat").read_text().splitlines())}


def squeeze(cgroup: Path, margin: int = SQUEEZE_MARGIN) -> tuple[int, int, int]:
    """Lower ``cgroup``'s memory limit to what its processes hold and map (``rss`` + ``mapped_file``: the page
    cache beyond that, the jars read once, is reclaimed by the write) plus ``margin``, page-aligned; (limit before,
    limit now, usage before). Where the kernel cannot reclaim down to it (``EBUSY``), the usage now plus
    ``margin``. A limit is only ever lowered."""
    before, usage = read_int(cgroup / "memory.limit_in_bytes"), read_int(cgroup / "memory.usage_in_bytes")
    stat = memory_stat(cgroup)
    for held in (stat.get("rss", 0) + stat.get("mapped_file", 0), read_int(cgroup / "memory.usage_in_bytes")):
        limit = min(before, (held + margin + 4095) // 4096 * 4096)
        try:
            (cgroup / "memory.limit_in_bytes").write_text(str(limit))
            return before, limit, usage
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
    raise StackError(f"the kernel would not lower {cgroup}'s memory limit to {limit} bytes (EBUSY)")


class _K8sCluster(Protocol):
    """What :class:`PodDisruptions` uses of the cluster it is mixed into (:class:`~.spark.K8sSparkCluster`)."""

    kube: Cluster

    @property
    def api(self) -> Api: ...

    @property
    def image(self) -> spark_image.Sources: ...

    def executor_pods(self) -> Sequence[str]: ...


class PodDisruptions:
    """The eviction, the drain and the memory squeeze (:mod:`.disruption`), mixed into the ``k8s`` Spark cluster:
    :class:`~..capabilities.PodEvict`, :class:`~..capabilities.NodeDrain`, :class:`~..capabilities.ExecutorOom`."""

    def evict_pod(self: _K8sCluster, name: str, grace: float | None = None) -> float:
        """An Eviction of the pod (through the Eviction API); when it was asked."""
        return evict(self.api, name, grace)

    def pod_disruption(self: _K8sCluster, name: str) -> str | None:
        """The reason the API server marked the pod for disruption (``EvictionByEvictionAPI``), or None."""
        return disruption(pod(self.api, name))

    def cordon(self: _K8sCluster, on: bool = True) -> None:
        """The node cordoned (``on``) or uncordoned."""
        set_unschedulable(self.api, on)

    def cordoned(self: _K8sCluster) -> bool:
        return unschedulable(self.api)

    def pending_executor_pods(self: _K8sCluster) -> list[str]:
        """The executor pods that exist, not deleted, not scheduled (phase Pending, no node)."""
        return [n for n in self.executor_pods()
                if (p := pod(self.api, n)) is not None and p.get("status", {}).get("phase") == "Pending"
                and not p.get("spec", {}).get("nodeName")]

    def squeeze_executor(self: _K8sCluster, name: str) -> Squeeze:
        """Squeeze the executor pod's container to just above its usage and start an allocation in it
        (:data:`HOG`, ``kubectl exec -i`` in the image's Python): the container crosses its limit within a
        second or two."""
        found = pod(self.api, name)
        if found is None:
            raise StackError(f"executor pod {name} is gone")
        cgroup = container_cgroup(found)
        kills = oom_kills(cgroup) or 0
        before, limit, usage = squeeze(cgroup)
        sq = Squeeze(name, cgroup, before, limit, usage, kills)
        lay = self.kube.layout
        argv = [str(build.binary("kubectl")), f"--kubeconfig={lay.kubeconfig('admin')}", "exec", "-i", name, "--",
                str(self.image.python), "-c", HOG]
        sq.hog = ManagedProcess(argv, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(lay.run)},
                                log_path=lay.logs / f"oom-{name}.log", name="oom-hog", pipe=True, host=self.kube.host)
        return sq

    def oom_state(self: _K8sCluster, sq: SqueezedContainer) -> tuple[int | None, dict[str, Any] | None]:
        """(the cgroup's OOM kills since the squeeze, None once the cgroup is gone; the container's ``terminated``
        state as the API server has it, None while it runs or once the pod is gone)."""
        assert isinstance(sq, Squeeze)
        kills = oom_kills(sq.cgroup)
        return (None if kills is None else kills - sq.oom_kills_before), _ended_or_none(pod(self.api, sq.pod))

    def release(self, sq: SqueezedContainer) -> None:
        """End the allocation (its stdin closed, then its process group) and give a container that survived its
        limit back."""
        assert isinstance(sq, Squeeze)
        if sq.released:
            return
        sq.released = True
        if sq.hog is not None:
            try:
                sq.hog.stdin.close()
            except OSError:
                pass
            sq.hog.terminate(timeout=5)
        try:
            if oom_kills(sq.cgroup) is not None:
                (sq.cgroup / "memory.limit_in_bytes").write_text(str(sq.limit_before))
        except OSError:
            pass  # the container (and its cgroup) went meanwhile



def _ended_or_none(found: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if found is None else pod_ended(found)
