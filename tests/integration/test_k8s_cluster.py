"""The one-node Kubernetes (issue 51): brought up from what ``prepare --for k8s`` built, a pod of a locally
built image runs and is deleted with kubectl, and after the stop nothing of it is left on the host: no
process, mount, cgroup, bridge, iptables chain or folder. Nor after a SIGKILL of pytest while a user's Spark job
runs on it: the reaper's clean-up (``python -I cleanup.py <run>``) leaves the host as it was."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stack_helpers import inner_pytest

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.host import Host, activate
from pytest_streamchaos.stack.k8s import cleanup, config
from pytest_streamchaos.stack.k8s.api import ApiError
from pytest_streamchaos.stack.k8s.cluster import NODE, Cluster, missing
from pytest_streamchaos.stack.k8s.images import PAUSE_IMAGE
from pytest_streamchaos.stack.k8s.preflight import why_not

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


#: the user's job of tests/chaos/test_chaos_k8s.py, run by the inner pytest below
USER_JOB = Path(__file__).parents[1] / "chaos" / "jobs" / "orders_to_shipments.py"
#: where the built Kubernetes and Spark image are: read before pytester points HOME at its own folder
CACHE_HOME = str(cache_dir().parent)

INNER = textwrap.dedent('''
    import json, os, subprocess, threading
    from pathlib import Path

    import pytest

    from pytest_streamchaos import JobSetup, Load, Watch
    from pytest_streamchaos.poll import wait_for
    from pytest_streamchaos.stack.k8s import cleanup
    from pytest_streamchaos.stack.k8s.driver_job import DRIVERS
    from pytest_streamchaos.stack.k8s.spark import EXECUTORS

    MODE = os.environ["SC_DEPLOY_MODE"]


    def pod_tasks():
        """Every process of the pods: the tasks of the kubelet's cgroups, by pid, with their names."""
        tasks = {}
        for procs in Path(cleanup.CGROUP_FS).glob(f"*/{cleanup.KUBEPODS}/**/cgroup.procs"):
            for pid in procs.read_text().split():
                try:
                    tasks[int(pid)] = Path(f"/proc/{pid}/comm").read_text().strip()
                except OSError:
                    pass
        return tasks


    def record(cluster):
        # cluster mode: the driver a pod too (a Job's), Running with its two executor pods before the kill
        wanted = 1 if MODE == "cluster" else 0
        wait_for(lambda: len(cluster.running_pods(EXECUTORS)) >= 2 and len(cluster.running_pods(DRIVERS)) >= wanted,
                 400, f"two executor pods{' and the driver pod' if wanted else ''} Running")
        # a pod is Running once its entrypoint (Python: the relay) runs; its JVM comes a moment later
        wait_for(lambda: list(pod_tasks().values()).count("java") >= 2 + wanted, 120, "the pods' JVMs started")
        kube = cluster.kube
        groups = [j.pgid for launcher in cluster.launchers for j in launcher.jobs if j.pgid]
        links = subprocess.run(["ip", "-o", "link", "show", "master", kube.bridge], capture_output=True,
                               text=True).stdout
        target = Path(os.environ["SC_RECORD"])
        target.with_suffix(".part").write_text(json.dumps({
            "pytest": os.getpid(), "reaper": cluster.host.reaper.pid, "run": str(kube.layout.run),
            "bridge": kube.bridge, "socket": str(kube.layout.containerd_socket),
            "veths": [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()],
            "pgids": sorted({p.pgid for p in kube.procs.values()} | set(groups)), "driver_groups": groups,
            "driver_pods": cluster.running_pods(DRIVERS), "pods": pod_tasks(),
            "shims": cleanup.shims(str(kube.layout.containerd_socket)), "executors": cluster.running_pods(EXECUTORS)}))
        target.with_suffix(".part").rename(target)  # whole, for the outer test's reading


    @pytest.mark.chaos(spark="k8s")
    def test_hold_a_spark_run(chaos):
        threading.Thread(target=record, args=(chaos.cluster,), daemon=True).start()
        # the run outlasts the outer test's SIGKILL of this pytest, which comes once the record is written
        chaos.run("jobs/orders_to_shipments.py", guarantee="at-least-once",
                  setup=JobSetup(args=["{checkpoint_dir}"], kafka_port=9092, deploy_mode=MODE),
                  load=Load(rate=50, duration=900, inputs={"orders": None}), watch=Watch(outputs={"shipments": None}))
''')


def links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def in_groups(pgids: set[int]) -> list[int]:
    """The live processes of process groups ``pgids``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) in pgids and _alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def leftovers(info: dict, before_links: set[str], before_chains: set[str], before_cgroups: set[str]) -> list[str]:
    """What the killed pytest's cluster still has on the host (empty: nothing)."""
    left = [f"process {p} of a recorded group" for p in in_groups(set(info["pgids"]))]
    left += [f"pod process {p} ({name})" for p, name in info["pods"].items() if _alive(int(p))]
    left += [f"containerd shim {p}" for p in cleanup.shims(info["socket"])]
    left += [f"reaper {info['reaper']}"] if _alive(info["reaper"]) else []
    left += [f"link {name}" for name in links() - before_links if name.startswith("sck8s") or name in info["veths"]]
    left += [f"mount {p}" for p in cleanup.mounts_under(info["run"])]
    left += [f"chain {c}" for c in chains() - before_chains]
    left += [f"cgroup {c}" for c in kubepods() - before_cgroups]
    left += [f"run folder {info['run']}"] if os.path.exists(info["run"]) else []
    return left


@pytest.mark.skipif(why_not() is not None, reason=str(why_not()))
@pytest.mark.parametrize("mode", ["client", "cluster"])
def test_sigkilled_pytest_during_a_spark_run_leaves_nothing(pytester: pytest.Pytester, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """An inner pytest runs a user's job on ``@pytest.mark.chaos(spark="k8s")`` (client mode: the driver here, two
    executor pods; cluster mode: the driver a pod of a Kubernetes Job, and its two executor pods); once the pods are
    Running it is SIGKILLed, and its reaper must leave the host as it was."""
    before = links(), chains(), kubepods()
    monkeypatch.setenv("SC_DEPLOY_MODE", mode)
    (pytester.path / "jobs").mkdir()
    shutil.copy(USER_JOB, pytester.path / "jobs" / USER_JOB.name)
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setenv("XDG_CACHE_HOME", CACHE_HOME)
    inner, recorded = inner_pytest(pytester, tmp_path, monkeypatch, f"--basetemp={tmp_path / 'inner'}")
    info: dict = {}
    try:
        info = json.loads(wait_for(recorded, 600, f"the inner pytest's pods Running ({mode} mode)"))
        # what the kill must take away is there: the control plane's and the driver's groups, the executors' JVMs
        # in the pods' cgroups, their shims, the bridge with the pods' veths, the pods' mounts
        # client mode: the driver's process group here; cluster mode: the driver's pod, its JVM a pod's task
        drivers = info["driver_pods"] if mode == "cluster" else info["driver_groups"]
        assert len(drivers) == 1 and len(info["executors"]) == 2, info
        assert all(in_groups({g}) for g in info["pgids"]), info["pgids"]
        jvms = 3 if mode == "cluster" else 2
        assert list(info["pods"].values()).count("java") >= jvms and info["shims"], info["pods"]
        assert info["bridge"] in links() and len(info["veths"]) >= 2, info
        assert cleanup.mounts_under(info["run"])
        os.kill(info["pytest"], signal.SIGKILL)
        t0 = time.monotonic()
        inner.wait(10)
        wait_for(lambda: not leftovers(info, *before), 120, "the reaper to leave the host as it was",
                 last=lambda: leftovers(info, *before))
        print(f"{mode} mode: the host as it was {time.monotonic() - t0:.1f}s after the SIGKILL of pytest")
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait()
        for pgid in info.get("pgids", []):
            try:
                os.killpg(pgid, signal.SIGKILL)  # only the recorded groups; normally already gone
            except ProcessLookupError:
                pass
        if info:
            # the reaper's clean-up done before anything else starts (a next cluster's pods are not this one's);
            # then what a failed reaper left (this test's cluster's only), so that a failure leaves the host clean
            wait_for(lambda: not _alive(info["reaper"]), cleanup.WORST_CASE_S + 30, "the inner pytest's reaper done")
            if os.path.exists(info["run"]):
                print("clean-up after the reaper:", cleanup.clean(info["run"]))
