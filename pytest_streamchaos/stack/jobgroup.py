"""The job's own network identity on the local stack, so network faults hit the job and not the observer.

On the local backend the user's job and the harness (generator, collector, progress poller) share
127.0.0.1 and the broker's ports: a rule that matches ports alone also cuts the collector's reads and
delays the generator's acknowledgements, and the harness then measures its own blindness as the job's
downtime. Here every process of the Spark cluster and of the user's job starts in one cgroup v2 group
(the kernel tags each socket with the group of the process that opened it). One iptables rule in
``mangle OUTPUT`` sets a conntrack mark on each connection a member of the group *opens*; network faults
in job scope match that mark (:func:`pytest_streamchaos.netem.iptables.connmark_match`, and the same
mark copied to the packet for tc filters). A connection the harness opens is never marked, whichever
ports it uses, and a connection the harness opens *to* a job process (the progress poller to the
driver's UI) is not marked either: only the side that opened it counts. Probes of a job-scoped fault set
``SO_MARK`` to the mark, so they cross exactly the faulted path. See docs/architecture.md ("The observer
is outside the blast radius").

Everything is registered with the session reaper (the rules, the group directory), so a SIGKILLed pytest
leaves nothing behind. The session's group is its host's (``Host.job_group``, :mod:`.host`). When cgroup
v2 or iptables is unavailable, the group is not :attr:`~JobGroup.available` and says why; faults then
match ports only, and the run says that the observer was not isolated.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack import netfilter
from pytest_streamchaos.stack.reaper import Reaper

#: The conntrack / packet mark of connections opened by the job (a byte of the mark no one else here uses).
MARK = 0x5C0000
MASK = 0xFF0000
#: bits of the conntrack mark that name the child group (a Kafka node) that opened a connection
#: (:meth:`JobGroup.mark_sub`): 1..15, so that a fault can cut one node's own connections
SUB_MASK = 0x00F000
SUB_SHIFT = 12


def cgroup2_mount(mounts: str | None = None) -> str | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or, on hybrid hosts,
    ``/sys/fs/cgroup/unified``), or None."""
    if mounts is None:
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return parts[1]
    return None


def own_cgroup(text: str | None = None) -> str:
    """This process's cgroup v2 path (``0::/<path>`` in ``/proc/self/cgroup``), "/" when unknown."""
    if text is None:
        try:
            text = Path("/proc/self/cgroup").read_text()
        except OSError:
            return "/"
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:] or "/"
    return "/"


def marking_specs(rel_path: str, mark: int = MARK, mask: int = MASK) -> list[list[str]]:
    """The rules of the marking chain: a connection opened by a group member, or by a socket carrying
    the mark (a probe), gets the conntrack mark; every packet of a marked connection carries it too
    (tc filters match packet marks)."""
    m = f"{mark:#x}/{mask:#x}"
    new = ["-m", "conntrack", "--ctstate", "NEW"]
    return [
        new + ["-m", "cgroup", "--path", rel_path, "-j", "CONNMARK", "--set-xmark", m],
        new + ["-m", "mark", "--mark", m, "-j", "CONNMARK", "--set-xmark", m],
        ["-m", "connmark", "--mark", m, "-j", "CONNMARK", "--restore-mark",
         "--nfmask", f"{mask:#x}", "--ctmask", f"{mask:#x}"],
    ]


def wrap_argv(procs_file: str, argv: list[str]) -> list[str]:
    """``argv`` run by a shell that first moves itself into the group: ``exec`` keeps the pid, so the
    process (and all it spawns: a worker's executors, their Python workers) is in the group from its
    first socket on."""
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs_file, *argv]


class JobGroup:
    """The cgroup of the job's processes and the marking rules of their connections (a session's:
    ``Host.job_group``). ``reaper``: where the rules and the group are registered while they exist."""

    def __init__(self, reaper: Reaper, name: str | None = None, chain: str | None = None) -> None:
        self.name = name or f"streamchaos-{os.getpid()}"
        self.chain = chain or f"SC-JOB-{os.getpid()}"
        self.reaper = reaper
        self.reason: str | None = None
        self.path: Path | None = None
        self.rel_path = ""
        self._lock = threading.Lock()
        self._rules_up = False

    @property
    def available(self) -> bool:
        """Whether job processes are isolated (their connections marked)."""
        return self.reason is None and self._rules_up

    def setup(self) -> JobGroup:
        """Create the group and install the marking rules; on failure :attr:`reason` says why and
        nothing is left behind."""
        mount = cgroup2_mount()
        if mount is None:
            self.reason = "no cgroup v2 hierarchy is mounted"
            return self
        if shutil.which("iptables") is None:
            self.reason = "no `iptables` on PATH"
            return self
        rel = f"{own_cgroup().strip('/')}/{self.name}".strip("/")
        path = Path(mount) / rel
        try:
            path.mkdir(exist_ok=True)
        except OSError as exc:
            self.reason = f"cannot create the cgroup {path}: {exc}"
            return self
        self.path, self.rel_path = path, rel
        self.reaper.register_command(f"jobgroup-{self.name}", ["sh", "-c", self._cleanup_script()])
        try:
            self._install_rules()
        except RuntimeError as exc:
            self.reason = str(exc)
            self.close()
        return self

    def wrap(self, argv: list[str], sub: str | None = None) -> list[str]:
        """``argv`` started inside the group, or inside its child group ``sub`` (e.g. ``broker-2``: a
        node whose own connections a fault must tell apart, see :meth:`sub_path`); unchanged when
        the group is not available."""
        if not self.available or self.path is None:
            return list(argv)
        path = self.path
        if sub is not None:
            path = self.path / sub
            path.mkdir(exist_ok=True)
        return wrap_argv(str(path / "cgroup.procs"), list(argv))

    def mark_sub(self, sub: str, n: int) -> tuple[int, int] | None:
        """Mark the connections child group ``sub`` opens with ``n`` (1..15) in :data:`SUB_MASK`, on top
        of the job's mark; the (mark, mask) a rule matches them by, None when the group is not available."""
        if not self.available or self.path is None or not 0 < n < 16:
            return None
        path, rel = self.path, self.sub_path(sub)
        value = (n << SUB_SHIFT, SUB_MASK)
        spec = ["-m", "conntrack", "--ctstate", "NEW", "-m", "cgroup", "--path", str(rel), "-j", "CONNMARK",
                "--set-xmark", f"{value[0]:#x}/{value[1]:#x}"]
        with self._lock:
            if self._ipt(["-C", self.chain, *spec]).returncode != 0:
                (path / sub).mkdir(exist_ok=True)
                p = self._ipt(["-A", self.chain, *spec])
                if p.returncode != 0:
                    return None
        return value

    def sub_path(self, sub: str) -> str | None:
        """The cgroup path of child group ``sub`` as iptables' ``-m cgroup --path`` takes it (it
        matches the sockets of that child's processes only; the group's own rules match the whole
        sub-hierarchy, children included), None when the group is not available."""
        return f"{self.rel_path}/{sub}" if self.available and self.rel_path else None

    def members(self) -> list[int]:
        """PIDs in the group now."""
        if self.path is None:
            return []
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def close(self) -> None:
        """Remove the rules and the group (the group only once its processes are gone; the reaper
        entry stays until then)."""
        with self._lock:
            commands.completed(["sh", "-c", self._rules_cleanup()])
            self._rules_up = False
            if self.path is not None:
                for child in self.path.glob("*/"):
                    try:
                        child.rmdir()  # a child group (see wrap's sub) of processes that are gone
                    except OSError:
                        pass
                try:
                    self.path.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    return  # still has processes: the reaper's entry removes it after they die
            self.reaper.unregister_command(f"jobgroup-{self.name}")

    # -- internals --------------------------------------------------------------------------------
    def _ipt(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return netfilter.run_ipt(args, table="mangle", check=False)

    def _install_rules(self) -> None:
        with self._lock:
            if self._ipt(["-N", self.chain]).returncode != 0:
                self._ipt(["-F", self.chain])
            for spec in marking_specs(self.rel_path):
                p = self._ipt(["-A", self.chain, *spec])
                if p.returncode != 0:
                    raise RuntimeError(f"the job's connections cannot be marked (`iptables -t mangle -A "
                                       f"{' '.join(spec)}` failed: {p.stderr.strip()})")
            p = self._ipt(["-I", "OUTPUT", "1", *netfilter.jump_spec(self.chain, "lo", "OUTPUT")])
            if p.returncode != 0:
                raise RuntimeError(f"cannot hook the marking chain into mangle OUTPUT: {p.stderr.strip()}")
            self._rules_up = True

    def _rules_cleanup(self) -> str:
        return netfilter.chain_cleanup_script(self.chain, None, "lo", hook="OUTPUT", table="mangle")

    def _cleanup_script(self) -> str:
        # run by the reaper after it killed the registered process groups: the group empties as the
        # killed processes are reaped, so the rmdir is retried for a while (bounded)
        rm = "" if self.path is None else (
            f"i=0; while [ -d {self.path} ] && ! {{ rmdir {self.path}/*/ 2>/dev/null; rmdir {self.path} 2>/dev/null; }}"
            " && [ $i -lt 100 ]; do i=$((i+1)); sleep 0.1; done; ")
        return self._rules_cleanup() + "; " + rm + "true"


class HostScope:
    """This host's :class:`~pytest_streamchaos.stack.base.LinkScope`: the job's connections carry the
    job group's mark once a group isolates the job. ``group``: the session's group once one was set
    up (called, not set up by asking)."""

    def __init__(self, group: Callable[[], JobGroup | None]) -> None:
        self.group = group

    def job_mark(self) -> tuple[int, int] | None:
        g = self.group()
        return (MARK, MASK) if g is not None and g.available else None

    def unscoped_reason(self) -> str:
        """Why job processes are not isolated (without setting a group up)."""
        g = self.group()
        if g is None:
            return "no process of the job was started in a job group"
        return g.reason or "the job group's marking rules are not installed"
