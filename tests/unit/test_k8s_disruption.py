"""The Kubernetes faults beyond a pod's delete (issue 51) without a cluster: their marks' checks, the calls they
make to the API server (a recording stand-in), the memory cgroup they squeeze (a folder of files shaped as cgroup
v1's), and the watcher's reading of an evicted or OOM-killed pod (synthetic answers of the API server's shape)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos.faults.registry import parse
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.k8s import K8sKind, disruption
from pytest_streamchaos.stack.k8s.watcher import PodWatcher


@pytest.mark.parametrize("kind", ["evict_pod", "drain_node"])
@pytest.mark.parametrize("grace", [-1, "30", True])
def test_a_bad_grace_is_refused_in_one_line_naming_the_mark(kind, grace):
    with pytest.raises(FaultSpecError, match=rf"^@{kind}: grace={grace!r} must be a number of seconds >= 0"):
        parse(kind, kwargs={"after": 5, "grace": grace})


def test_a_drain_is_healed_after_20_s_unless_its_duration_says():
    assert parse("drain_node", kwargs={"after": 5}).restart_after == 20.0
    spec = parse("drain_node", kwargs={"after": 5, "duration": 40})
    assert spec.duration == 40 and spec.restart_after is None


def test_the_oom_kill_takes_no_argument_of_its_own():
    with pytest.raises(FaultSpecError, match=r"^@oom_kill_executor: unknown argument 'grace'"):
        parse("oom_kill_executor", kwargs={"after": 5, "grace": 0})


class _Api:
    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, str, Any, str]] = []
        self.answers = answers or {}

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        self.calls.append((method, path, body, content_type))
        return {}

    def get(self, path: str) -> Any:
        return self.answers[path]


def test_an_eviction_is_a_policy_v1_eviction_posted_to_the_pods_subresource():
    api = _Api()
    disruption.evict(api, "exec-1", grace=5)  # type: ignore[arg-type]
    disruption.evict(api, "exec-2")  # type: ignore[arg-type]
    (method, path, body, _), second = api.calls
    assert (method, path) == ("POST", "/api/v1/namespaces/default/pods/exec-1/eviction")
    assert body == {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": "exec-1", "namespace": "default"}, "deleteOptions": {"gracePeriodSeconds": 5}}
    assert "deleteOptions" not in second[2]  # the pod's own grace period


def test_a_cordon_is_a_merge_patch_of_the_nodes_unschedulable():
    api = _Api({"/api/v1/nodes/streamchaos-node": {"spec": {"unschedulable": True}}})
    disruption.set_unschedulable(api, True)  # type: ignore[arg-type]
    disruption.set_unschedulable(api, False)  # type: ignore[arg-type]
    assert [(m, p, b, t) for m, p, b, t in api.calls] == [
        ("PATCH", "/api/v1/nodes/streamchaos-node", {"spec": {"unschedulable": on}}, "application/merge-patch+json")
        for on in (True, False)]
    assert disruption.unschedulable(api)  # type: ignore[arg-type]


def _executor(uid: str = "u-1", cid: str = "containerd://abc123") -> dict:
    return {"metadata": {"name": "exec-1", "uid": uid}, "status": {"containerStatuses": [{"containerID": cid}]}}


def _cgroup(root: Path, qos: str = "burstable", **files: int) -> Path:
    cg = root / "kubepods" / qos / "podu-1" / "abc123"
    cg.mkdir(parents=True)
    defaults = {"limit_in_bytes": 1408 << 20, "usage_in_bytes": 700 << 20}
    for name, value in {**defaults, **files}.items():
        (cg / f"memory.{name}").write_text(f"{value}\n")
    (cg / "memory.stat").write_text(f"cache {400 << 20}\nrss {280 << 20}\nmapped_file {20 << 20}\n")
    (cg / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    return cg


@pytest.mark.parametrize("qos", ["burstable", "besteffort"])
def test_the_containers_memory_cgroup_is_found_by_pod_uid_and_container_id(tmp_path, qos):
    cg = _cgroup(tmp_path, qos)
    assert disruption.container_cgroup(_executor(), root=str(tmp_path)) == cg
    assert disruption.oom_kills(cg) == 2 and disruption.oom_kills(tmp_path / "gone") is None


def test_a_container_without_its_cgroup_is_refused_naming_what_is_needed(tmp_path):
    with pytest.raises(StackError, match="cgroup v1 host with the kubelet's cgroupfs driver"):
        disruption.container_cgroup(_executor(), root=str(tmp_path))
    with pytest.raises(StackError, match="no running container"):
        disruption.container_cgroup(_executor(cid=""), root=str(tmp_path))


def test_the_squeeze_leaves_what_the_processes_hold_plus_the_margin(tmp_path):
    cg = _cgroup(tmp_path)
    before, limit, usage = disruption.squeeze(cg, margin=32 << 20)
    assert (before, usage) == (1408 << 20, 700 << 20)
    assert limit == (280 + 20 + 32) << 20  # rss + mapped files + margin: the page cache beyond is reclaimed
    assert disruption.read_int(cg / "memory.limit_in_bytes") == limit


def test_the_squeeze_never_raises_a_limit(tmp_path):
    cg = _cgroup(tmp_path, limit_in_bytes=100 << 20)
    assert disruption.squeeze(cg)[1] == 100 << 20


class _Pods:
    def __init__(self) -> None:
        self.pods: list[dict] = []

    def get(self, path: str) -> dict:
        return {"items": self.pods if "/pods" in path else []}


def test_an_oom_killed_pod_deleted_at_once_still_shows_its_end_and_an_eviction_its_mark():
    api, seen = _Pods(), []
    watcher = PodWatcher(api, "streamchaos-job=t", lambda kind, target, **d: seen.append((kind, target, d)))  # type: ignore[arg-type]
    running = {"status": {"phase": "Running", "containerStatuses": [{"state": {"running": {}}}]}}
    api.pods = [{"metadata": {"name": "oom"}, **running}, {"metadata": {"name": "ev"}, **running}]
    watcher.poll()
    oom = {"metadata": {"name": "oom", "deletionTimestamp": "now"},
           "status": {"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"exitCode": 137,
                                                                                         "reason": "OOMKilled"}}}]}}
    evicted = {"metadata": {"name": "ev", "deletionTimestamp": "now"},
               "status": {"phase": "Running", "conditions": [{"type": "DisruptionTarget", "status": "True",
                                                              "reason": "EvictionByEvictionAPI"}]}}
    api.pods = [oom, evicted]
    watcher.poll()
    later = [(k, t, d) for k, t, d in seen[2:]]
    assert later == [(K8sKind.K8S_POD_ENDED, "oom", {"pod": "oom", "phase": "Failed", "exit_code": 137,
                                                      "reason": "OOMKilled"}),
                     (K8sKind.K8S_POD_TERMINATING, "oom", {"pod": "oom"}),
                     (K8sKind.K8S_POD_TERMINATING, "ev", {"pod": "ev", "disruption": "EvictionByEvictionAPI"})]
