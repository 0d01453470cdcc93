"""Everything a one-node cluster leaves on the host besides its own processes, removed: what the cluster's
stop runs, and what the reaper runs (``python -I cleanup.py <run folder>``, standard library only) when
pytest dies first.

Before the cluster starts, :func:`record` writes ``<run>/host-before.json``: which of the host-wide paths
containerd, runc, CNI and the kubelet write outside the run folder existed, which ``kubepods`` cgroups,
which ``KUBE-*``/``CNI-*`` iptables chains, the ``ip_forward`` setting. :func:`clean` then removes only
what was not there before, in order: the pods' processes (every task of the cluster's cgroups, and the
runc shims serving this cluster's containerd socket), the mounts under the run folder, the cgroups, the
bridge, the chains (and the jumps into them), the host paths; it restores ``ip_forward`` and removes the
run folder. It returns what it could not remove (empty: the host is as it was).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

BEFORE = "host-before.json"
CGROUP_FS = "/sys/fs/cgroup"
#: the kubelet's pods' cgroup (``cgroupRoot`` "/", ``cgroupsPerQOS``), in every v1 hierarchy
KUBEPODS = "kubepods"
#: what the parts write outside the run folder whatever they are told: the shim's socket folder, ctr's FIFO
#: folder and runc's default root (containerd 1.6), the CNI plugins' result cache, the kubelet's links
HOST_PATHS = ("/run/containerd/s", "/run/containerd/fifo", "/run/containerd/runc", "/run/containerd",
              "/var/lib/cni", "/var/log/containers", "/var/log/pods")
FORWARD = "/proc/sys/net/ipv4/ip_forward"
_CHAINS = re.compile(r"^(KUBE-|CNI-)")
TABLES = ("filter", "nat", "mangle", "raw")
#: how long :func:`clean` may take at worst (the reaper's limit for it): 3 x 10 s for the pods' processes, 5 s
#: per cgroup folder that resists, iptables' 5 s waits for its lock, with room
WORST_CASE_S = 180.0
FAMILIES = ("iptables", "ip6tables")


def _hierarchies() -> list[str]:
    try:
        names = sorted(os.listdir(CGROUP_FS))
    except OSError:
        return []
    return [os.path.join(CGROUP_FS, n) for n in names
            if os.path.isdir(os.path.join(CGROUP_FS, n)) and not os.path.islink(os.path.join(CGROUP_FS, n))]


def _chains(family: str, table: str) -> list[str]:
    try:
        out = subprocess.run([family, "-w", "5", "-t", table, "-S"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split()[1] for line in out.splitlines() if line.startswith("-N ")]


def record(run: str, *, bridge: str, chain: str, socket: str) -> dict:
    """Note what the host has now (see the module docstring) in ``<run>/host-before.json``; the record."""
    before = {
        "bridge": bridge, "chain": chain, "socket": socket,
        "paths": [p for p in HOST_PATHS if os.path.lexists(p)],
        "cgroups": [h for h in _hierarchies() if os.path.isdir(os.path.join(h, KUBEPODS))],
        "chains": {f"{fam}/{t}": [c for c in _chains(fam, t) if _CHAINS.match(c)] for fam in FAMILIES for t in TABLES},
        "ip_forward": open(FORWARD).read().strip() if os.path.exists(FORWARD) else None,
    }
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, BEFORE), "w") as f:
        json.dump(before, f)
    return before


def _cgroup_dirs(before: dict) -> list[str]:
    """The cluster's cgroup folders, deepest first."""
    out: list[str] = []
    for h in _hierarchies():
        root = os.path.join(h, KUBEPODS)
        if h in before["cgroups"] or not os.path.isdir(root):
            continue
        for folder, _, _ in os.walk(root):
            out.append(folder)
    return sorted(out, key=lambda p: p.count("/"), reverse=True)


def _cgroup_tasks(dirs: list[str]) -> set[int]:
    pids: set[int] = set()
    for d in dirs:
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                pids.update(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return pids


def shims(socket: str) -> list[int]:
    """The containerd shims serving the containerd at ``socket`` (they outlive it: they are their own session)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and socket.encode() in argv:
            found.append(int(entry))
    return found


def shim_sockets(before: dict, run: str) -> list[str]:
    """The sockets of this cluster's shims in /run/containerd/s: containerd 1.6 names each
    ``sha256(<its address>/<namespace>/<container id>)`` there whatever its state folder is."""
    import hashlib

    tasks = os.path.join(run, "containerd", "state", "io.containerd.runtime.v2.task")
    out = []
    for ns in os.listdir(tasks) if os.path.isdir(tasks) else []:
        for cid in os.listdir(os.path.join(tasks, ns)):
            digest = hashlib.sha256(os.path.join(before["socket"], ns, cid).encode()).hexdigest()
            out.append(os.path.join("/run/containerd/s", digest))
    return out


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _until(cond, timeout: float) -> bool:  # noqa: ANN001 (standard library only, no typing of ours)
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def mounts_under(folder: str) -> list[str]:
    """The mount points at or under ``folder``, deepest first."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == folder or point.startswith(folder.rstrip("/") + "/"):
                points.append(point)
    return sorted(points, key=lambda p: p.count("/"), reverse=True)


def _iptables(before: dict, problems: list[str]) -> None:
    for fam in FAMILIES:
        for table in TABLES:
            old = set(before["chains"].get(f"{fam}/{table}", []))
            ours = {c for c in _chains(fam, table) if (_CHAINS.match(c) and c not in old) or c == before["chain"]}
            if not ours:
                continue
            try:
                rules = subprocess.run([fam, "-w", "5", "-t", table, "-S"], capture_output=True, text=True,
                                       timeout=30).stdout.splitlines()
            except (OSError, subprocess.SubprocessError) as exc:
                problems.append(f"{fam} -t {table}: {exc}")
                continue
            for rule in rules:  # the jumps into our chains from chains that are not ours
                parts = rule.split()
                if parts[:1] == ["-A"] and parts[1] not in ours and "-j" in parts and \
                        parts[parts.index("-j") + 1] in ours:
                    subprocess.run([fam, "-w", "5", "-t", table, "-D", *parts[1:]], capture_output=True, timeout=30)
            for c in ours:
                subprocess.run([fam, "-w", "5", "-t", table, "-F", c], capture_output=True, timeout=30)
            for c in ours:
                subprocess.run([fam, "-w", "5", "-t", table, "-X", c], capture_output=True, timeout=30)
            left = sorted(set(_chains(fam, table)) & ours)
            if left:
                problems.append(f"{fam} -t {table}: chains {left} left")


def clean(run: str) -> list[str]:
    """Remove what the cluster of run folder ``run`` left (see the module docstring); what could not be."""
    try:
        with open(os.path.join(run, BEFORE)) as f:
            before = json.load(f)
    except (OSError, ValueError):
        return [] if not os.path.exists(run) else _remove_run(run, [])
    problems: list[str] = []
    dirs = _cgroup_dirs(before)
    for _ in range(3):  # a task may fork while being killed
        _kill(_cgroup_tasks(dirs))
        _kill(set(shims(before["socket"])))
        if _until(lambda: not _cgroup_tasks(dirs) and not shims(before["socket"]), 10):
            break
    else:
        problems.append(f"processes left: cgroup tasks {sorted(_cgroup_tasks(dirs))}, "
                        f"shims {shims(before['socket'])}")
    for sock in shim_sockets(before, run):  # a killed shim leaves its socket
        if os.path.lexists(sock):
            os.unlink(sock)
    for point in mounts_under(run):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=30)
    problems += [f"mount left: {p}" for p in mounts_under(run)]
    for d in dirs:
        _until(lambda d=d: _rmdir(d), 5)
    problems += [f"cgroup left: {d}" for d in dirs if os.path.isdir(d)]
    if os.path.exists(f"/sys/class/net/{before['bridge']}"):
        subprocess.run(["ip", "link", "del", before["bridge"]], capture_output=True, timeout=30)
        if os.path.exists(f"/sys/class/net/{before['bridge']}"):
            problems.append(f"bridge left: {before['bridge']}")
    _iptables(before, problems)
    if before["ip_forward"] is not None:
        with open(FORWARD, "w") as f:
            f.write(before["ip_forward"])
    for path in HOST_PATHS:  # deepest first: /run/containerd after its sub-folders
        if path not in before["paths"] and os.path.lexists(path):
            shutil.rmtree(path, ignore_errors=True)
            if os.path.lexists(path):
                problems.append(f"path left: {path}")
    return _remove_run(run, problems)


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _remove_run(run: str, problems: list[str]) -> list[str]:
    if mounts_under(run):
        return [*problems, f"run folder kept: {run} still has mounts"]
    shutil.rmtree(run, ignore_errors=True)
    return [*problems, f"path left: {run}"] if os.path.exists(run) else problems


if __name__ == "__main__":  # the reaper's way in: python -I cleanup.py <run folder>
    left = clean(sys.argv[1])
    print("\n".join(left) or "clean")
    sys.exit(1 if left else 0)
