"""Whether this host can start the cluster's containers (issue 51's "a host where containers cannot start"), checked
before anything starts, from files and one ~10 ms command: root, the runtime's binaries (Debian's containerd, its
runc shim and runc, the CNI plugins the network config names), the cgroup v1 controllers the kubelet (cgroupfs
driver) and runc put each pod in, mounted where the clean-up looks for them, the ``overlay`` filesystem of
containerd's ``overlayfs`` snapshotter, and network namespaces (each pod's sandbox gets one, made by containerd,
wired by the CNI bridge plugin). Each probe takes its paths and commands as parameters, so a fake host can be fed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.k8s import cleanup, config

#: the programs the node runs (containerd execs the shim, the shim execs runc), and where each comes from
RUNTIME = {"containerd": "apt-get install containerd", "containerd-shim-runc-v2": "apt-get install containerd",
           "runc": "apt-get install runc", "ctr": "apt-get install containerd"}
#: the CNI plugins: the network config's ``bridge`` and its ``host-local`` addresses, the CRI's ``loopback``
CNI_PLUGINS = ("bridge", "host-local", "loopback")
#: the cgroup v1 controllers a pod's cgroups are made in: the kubelet's required four, ``pids`` (its pods' and
#: its own pid limits) and ``devices`` (runc's device rules)
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "devices")


@dataclass(frozen=True)
class HostFiles:
    """Where the probes read the host (the real one by default; a unit test's fake folder)."""

    filesystems: str = "/proc/filesystems"
    mounts: str = "/proc/self/mounts"
    cgroup: str = "/proc/self/cgroup"
    status: str = "/proc/self/status"
    cgroup_fs: str = cleanup.CGROUP_FS
    cni_bin: str = config.CNI_BIN
    netns_probe: Sequence[str] = field(default=("unshare", "--net", "true"))


def not_root(euid: int) -> str | None:
    return None if euid == 0 else "a Kubernetes node runs containers, which needs root; fix: run pytest as root"


def missing_program(which: Callable[[str], str | None] = shutil.which, programs: Mapping[str, str] = RUNTIME,
                    role: str = " (the node's container runtime)") -> str | None:
    """The first of ``programs`` (name -> how to install it) not on PATH, as a line naming ``role`` and the fix."""
    for program, fix in programs.items():
        if which(program) is None:
            return f"no `{program}` on PATH{role}; fix: {fix}"
    return None


def missing_cni(files: HostFiles) -> str | None:
    for plugin in CNI_PLUGINS:
        if not os.path.isfile(os.path.join(files.cni_bin, plugin)):
            return (f"no CNI `{plugin}` plugin in {files.cni_bin} (the pods' network); "
                    "fix: apt-get install containernetworking-plugins")
    return None


def no_overlay(files: HostFiles) -> str | None:
    """containerd's ``overlayfs`` snapshotter mounts each container's root as ``overlay``."""
    with open(files.filesystems) as f:
        names = {line.split()[-1] for line in f if line.strip()}
    if "overlay" in names:
        return None
    return (f"the kernel has no overlay filesystem (not in {files.filesystems}), which containerd's overlayfs "
            "snapshotter mounts each container's root with; fix: modprobe overlay")


def _mounted_controllers(files: HostFiles) -> set[str]:
    found: set[str] = set()
    with open(files.mounts) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[2] == "cgroup" and parts[1].startswith(files.cgroup_fs.rstrip("/") + "/"):
                found |= set(parts[3].split(","))
    return found


def no_cgroup_v1(files: HostFiles) -> str | None:
    """The kubelet runs with the cgroupfs driver on cgroup v1 (``failCgroupV1: false``) and the clean-up removes its
    ``kubepods`` in each v1 hierarchy under ``cgroup_fs``: each controller must be a mounted v1 hierarchy there."""
    with open(files.cgroup) as f:
        v1 = [line for line in f if line.strip() and not line.startswith("0::")]
    if not v1:
        return (f"this host has cgroup v2 only ({files.cgroup}), and the cluster's kubelet runs on cgroup v1 "
                "(cgroupfs); fix: boot with systemd.unified_cgroup_hierarchy=0, or run on a cgroup v1 host")
    lacking = [c for c in CONTROLLERS if c not in _mounted_controllers(files)]
    if not lacking:
        return None
    first = lacking[0]
    return (f"the kubelet needs the cgroup v1 controllers {', '.join(CONTROLLERS)} mounted under {files.cgroup_fs}; "
            f"not mounted: {', '.join(lacking)}; fix: mkdir -p {files.cgroup_fs}/{first} && "
            f"mount -t cgroup -o {first} cgroup {files.cgroup_fs}/{first} (and so for each)")


def no_netns(files: HostFiles) -> str | None:
    """Each pod's sandbox is a network namespace: the capabilities to make one, then one made (``unshare``)."""
    with open(files.status) as f:
        status = f.read()
    caps = (("CAP_SYS_ADMIN", commands.CAP_SYS_ADMIN), ("CAP_NET_ADMIN", commands.CAP_NET_ADMIN))
    lacking = [name for name, bit in caps if not commands.has_capability(bit, status)]
    fix = "fix: run on a host, or in a privileged container, that lets root make network namespaces"
    if lacking:
        return f"the pods' network namespaces need {' and '.join(lacking)}, which this process lacks; {fix}"
    probe = commands.shown(files.netns_probe)
    try:
        done = commands.completed(files.netns_probe, timeout=10)
    except commands.CommandError as exc:
        return f"a network namespace could not be made here ({exc}); {fix}"
    if done.returncode != 0:
        err = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"a network namespace could not be made here (`{probe}`: {err}); {fix}"
    return None


def why_not(files: HostFiles = HostFiles(), *, euid: int | None = None,
            which: Callable[[str], str | None] = shutil.which) -> str | None:
    """Why the cluster's containers cannot start on this host (one line naming the fix), or None."""
    return (not_root(os.geteuid() if euid is None else euid) or missing_program(which) or missing_cni(files)
            or no_overlay(files) or no_cgroup_v1(files) or no_netns(files))
