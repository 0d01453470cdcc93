"""The Kubernetes preflight's host probes (issue 51: "a host where containers cannot start: one line naming the fix,
before anything is started"), on a fake host (its /proc files in tmp_path, a PATH without a program) with the
exact line each refusal gives; and on this host, where the cluster runs: no refusal from its kernel."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_streamchaos.stack.k8s import hostcheck
from pytest_streamchaos.stack.k8s.hostcheck import HostFiles

V1_MOUNTS = "".join(f"cgroup /sys/fs/cgroup/{c} cgroup rw,relatime,{c} 0 0\n"
                    for c in ("cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "pids"))
V1_CGROUP = "9:name=systemd:/\n8:pids:/\n4:memory:/\n1:cpu:/\n0::/\n"
ALL_CAPS = "Name:\tpython\nCapEff:\t000001fffeffffff\n"
OK = [sys.executable, "-c", "pass"]


def fake_host(tmp_path: Path, *, filesystems: str = "nodev\tproc\nnodev\toverlay\n", mounts: str = V1_MOUNTS,
              cgroup: str = V1_CGROUP, status: str = ALL_CAPS, cni: tuple[str, ...] = hostcheck.CNI_PLUGINS,
              probe: list[str] = OK) -> HostFiles:
    """A host whose /proc files say what the arguments say (a good cgroup v1 host by default)."""
    for name, text in (("filesystems", filesystems), ("mounts", mounts), ("cgroup", cgroup), ("status", status)):
        (tmp_path / name).write_text(text)
    (tmp_path / "cni").mkdir()
    for plugin in cni:
        (tmp_path / "cni" / plugin).write_text("")
    return HostFiles(filesystems=str(tmp_path / "filesystems"), mounts=str(tmp_path / "mounts"),
                     cgroup=str(tmp_path / "cgroup"), status=str(tmp_path / "status"), cni_bin=str(tmp_path / "cni"),
                     netns_probe=probe)


def on_path(program: str) -> str | None:
    return f"/usr/bin/{program}"


def test_a_good_fake_host_passes(tmp_path: Path) -> None:
    assert hostcheck.why_not(fake_host(tmp_path), euid=0, which=on_path) is None


def test_not_root_is_refused_first(tmp_path: Path) -> None:
    assert hostcheck.why_not(fake_host(tmp_path, filesystems=""), euid=1000, which=on_path) == \
        "a Kubernetes node runs containers, which needs root; fix: run pytest as root"


def test_a_missing_runc_names_its_package(tmp_path: Path) -> None:
    def which(program: str) -> str | None:
        return None if program == "runc" else on_path(program)

    assert hostcheck.why_not(fake_host(tmp_path), euid=0, which=which) == \
        "no `runc` on PATH (the node's container runtime); fix: apt-get install runc"


def test_a_missing_cni_plugin_names_its_package(tmp_path: Path) -> None:
    files = fake_host(tmp_path, cni=("bridge", "loopback"))
    assert hostcheck.why_not(files, euid=0, which=on_path) == (
        f"no CNI `host-local` plugin in {tmp_path / 'cni'} (the pods' network); "
        "fix: apt-get install containernetworking-plugins")


def test_no_overlay_filesystem_names_modprobe(tmp_path: Path) -> None:
    files = fake_host(tmp_path, filesystems="nodev\tproc\n\text4\n")
    assert hostcheck.why_not(files, euid=0, which=on_path) == (
        f"the kernel has no overlay filesystem (not in {tmp_path / 'filesystems'}), which containerd's overlayfs "
        "snapshotter mounts each container's root with; fix: modprobe overlay")


def test_a_cgroup_v2_only_host_is_refused(tmp_path: Path) -> None:
    files = fake_host(tmp_path, cgroup="0::/user.slice\n", mounts="cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
    assert hostcheck.why_not(files, euid=0, which=on_path) == (
        f"this host has cgroup v2 only ({tmp_path / 'cgroup'}), and the cluster's kubelet runs on cgroup v1 "
        "(cgroupfs); fix: boot with systemd.unified_cgroup_hierarchy=0, or run on a cgroup v1 host")


def test_an_unmounted_controller_names_its_mount(tmp_path: Path) -> None:
    mounts = "".join(line + "\n" for line in V1_MOUNTS.splitlines() if "memory" not in line and "pids" not in line)
    mounts += "cgroup /elsewhere/memory cgroup rw,memory 0 0\n"  # mounted, but not where the clean-up looks
    files = fake_host(tmp_path, mounts=mounts)
    assert hostcheck.why_not(files, euid=0, which=on_path) == (
        "the kubelet needs the cgroup v1 controllers cpu, cpuacct, cpuset, memory, pids, devices mounted under "
        "/sys/fs/cgroup; not mounted: memory, pids; fix: mkdir -p /sys/fs/cgroup/memory && "
        "mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory (and so for each)")


def test_co_mounted_controllers_count(tmp_path: Path) -> None:
    rest = ("cpuset", "memory", "pids", "devices")
    mounts = ("cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
              + "".join(f"cgroup /sys/fs/cgroup/{c} cgroup rw,{c} 0 0\n" for c in rest))
    assert hostcheck.why_not(fake_host(tmp_path, mounts=mounts), euid=0, which=on_path) is None


def test_without_the_namespace_capabilities_it_is_refused(tmp_path: Path) -> None:
    files = fake_host(tmp_path, status="CapEff:\t000001ffffdfefff\n")  # bits 21 and 12 cleared
    assert hostcheck.why_not(files, euid=0, which=on_path) == (
        "the pods' network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN, which this process lacks; "
        "fix: run on a host, or in a privileged container, that lets root make network namespaces")


def test_a_failing_namespace_probe_is_quoted(tmp_path: Path) -> None:
    probe = [sys.executable, "-c", "import sys; sys.exit('unshare: unshare failed: Operation not permitted')"]
    files = fake_host(tmp_path, probe=probe)
    assert hostcheck.why_not(files, euid=0, which=on_path) == (
        f"a network namespace could not be made here (`{' '.join(probe)}`: unshare: unshare failed: Operation not "
        "permitted); fix: run on a host, or in a privileged container, that lets root make network namespaces")


@pytest.mark.skipif(os.geteuid() != 0, reason="the cluster runs as root only")
def test_this_hosts_kernel_passes_the_probes() -> None:
    """The host the slow Kubernetes tests run on: its kernel and this process refuse nothing (overlayfs, cgroup
    v1 controllers, network namespaces). Its packages (the CNI plugins) are not asked for: `prepare --k8s`
    installs them, which a fresh machine running the default suite has not run."""
    host = hostcheck.HostFiles()
    assert [hostcheck.no_overlay(host), hostcheck.no_cgroup_v1(host), hostcheck.no_netns(host)] == [None] * 3
