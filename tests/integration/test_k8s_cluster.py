"""The one-node Kubernetes (issue 51): brought up from what ``prepare --for k8s`` built, a pod of a locally
built image runs and is deleted with kubectl, and after the stop nothing of it is left on the host: no
process, mount, cgroup, bridge, iptables chain or folder."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.host import Host, activate
from pytest_streamchaos.stack.k8s import cleanup, config
from pytest_streamchaos.stack.k8s.api import ApiError
from pytest_streamchaos.stack.k8s.cluster import NODE, Cluster, missing
from pytest_streamchaos.stack.k8s.images import PAUSE_IMAGE

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=str(missing()))]


def chains() -> set[str]:
    """Every iptables chain of the host that is Kubernetes', CNI's or a cluster's (``family/table/name``)."""
    found = set()
    for fam in cleanup.FAMILIES:
        for table in cleanup.TABLES:
            out = subprocess.run([fam, "-w", "5", "-t", table, "-S"], capture_output=True, text=True).stdout
            found |= {f"{fam}/{table}/{line.split()[1]}" for line in out.splitlines()
                      if line.startswith("-N ") and line.split()[1].startswith(("KUBE-", "CNI-", "SC-K8S-"))}
    return found


def kubepods() -> set[str]:
    return {str(p) for p in Path(cleanup.CGROUP_FS).glob(f"*/{cleanup.KUBEPODS}")}


@pytest.fixture
def run() -> Iterator[Path]:
    folder = Path(f"/tmp/sck8s-{os.getpid()}")  # short: containerd's sockets live in it
    yield folder
    assert not folder.exists()


def test_a_pod_runs_is_deleted_and_nothing_is_left(run: Path) -> None:
    before_chains, before_cgroups = chains(), kubepods()
    host = Host()
    with activate(host):
        cluster = Cluster(run, host=host)
        try:
            cluster.start()
            pids = {p.pid for p in cluster.procs.values()}
            assert cluster.node_ready() and set(cluster.timings) >= {"etcd", "kube-apiserver", "kubelet", "total"}
            manifest = run / "pod.json"
            manifest.write_text(json.dumps({
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sc-pod", "namespace": "default"},
                "spec": {"containers": [{"name": "pause", "image": PAUSE_IMAGE, "imagePullPolicy": "Never",
                                         "resources": {"limits": {"memory": "32Mi", "cpu": "100m"}}}],
                         "terminationGracePeriodSeconds": 2}}))
            cluster.kubectl("apply", "-f", str(manifest))
            api = cluster.api
            assert api is not None

            def running() -> dict | None:
                pod = api.get("/api/v1/namespaces/default/pods/sc-pod")
                return pod if pod["status"].get("phase") == "Running" else None

            pod = wait_for(running, 90, "the pod Running",
                           last=lambda: api.get("/api/v1/namespaces/default/pods/sc-pod")["status"])
            assert pod["spec"]["nodeName"] == NODE
            assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(cluster.subnet)
            uid = pod["metadata"]["uid"]
            # its container runs in the pod's cgroup, limited as asked (cgroup v1, cgroupfs driver)
            pod_cgroups = list(Path(cleanup.CGROUP_FS, "memory", cleanup.KUBEPODS).glob(f"**/pod{uid}"))
            assert len(pod_cgroups) == 1, pod_cgroups
            assert int((pod_cgroups[0] / "memory.limit_in_bytes").read_text()) == 32 * 1024 * 1024
            tasks = {int(t) for c in pod_cgroups[0].iterdir() if c.is_dir()
                     for t in (c / "cgroup.procs").read_text().split()}
            assert tasks  # the sandbox's and the container's pause processes
            # their OOM score adjustments: the kubelet's (sandbox -998, a Guaranteed pod's container -997), or,
            # where this host may not lower one, containerd's own (else runc's init dies writing them)
            scores = {int(Path(f"/proc/{t}/oom_score_adj").read_text()) for t in tasks}
            own = int(Path(f"/proc/{cluster.procs['containerd'].pid}/oom_score_adj").read_text())
            assert scores == ({-998, -997} if config.lowers_oom_scores() else {own}), scores
            pids |= tasks | set(cleanup.shims(str(cluster.layout.containerd_socket)))

            out = cluster.kubectl("delete", "pod", "sc-pod", "--wait=true", "--timeout=60s")
            assert 'pod "sc-pod" deleted' in out
            with pytest.raises(ApiError) as gone:
                api.get("/api/v1/namespaces/default/pods/sc-pod")
            assert gone.value.status == 404
            wait_for(lambda: not pod_cgroups[0].exists(), 30, "the deleted pod's cgroup removed by the kubelet")
            assert not any(_alive(t) for t in tasks)
        finally:
            cluster.stop()
            host.close()
    assert cluster.left == []
    assert not [p for p in pids if _alive(p)]
    assert not cleanup.mounts_under(str(run))
    assert not Path("/sys/class/net", cluster.bridge).exists()
    assert chains() == before_chains
    assert kubepods() == before_cgroups


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
