"""Per-port traffic shaping on ``lo`` with tc: an htb root, one class per shaped direction, u32 filters.

A plain ``tbf`` root on lo would slow *all* loopback traffic (the whole stack and pytest itself), so
the root is a classful ``htb`` without a default class - unclassified packets bypass shaping - and
u32 filters send only the target's packets (by TCP source/destination port) to a class whose leaf
qdisc does the work (``tbf`` for bandwidth, ``netem`` for delay where the kernel has it).

``lo``'s original root qdisc is the default ``noqueue``; deleting our root restores exactly that. We
refuse to touch an ``lo`` whose root is something else (someone else's shaping), and the root is
registered with the reaper (``tc qdisc del dev lo root handle M:`` - only deletes *our* handle).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_streamchaos.machine import commands
from pytest_streamchaos.netem.iptables import DIRECTIONS, NetFaultError, _check_ports

DEV = "lo"
#: lo's MTU is 64 KiB: a tbf bucket smaller than one packet would drop every large segment.
MIN_BURST_BYTES = 70_000


def root_major(pid: int | None = None) -> str:
    """Our root handle's major number (hex, unique per process so the reaper deletes only ours)."""
    return format(0x1000 + ((os.getpid() if pid is None else pid) % 0xE000), "x")


def tbf_leaf_args(kbit: float) -> list[str]:
    """tbf parameters for a ``kbit`` link: burst at least one lo packet, about 1 s of queue."""
    rate_bytes = kbit * 1000 / 8
    burst = max(MIN_BURST_BYTES, int(rate_bytes / 10))
    limit = burst + int(rate_bytes)  # ~1 s of queue at the rate, beyond that packets are dropped
    return ["tbf", "rate", f"{kbit:g}kbit", "burst", str(burst), "limit", str(limit)]


def netem_leaf_args(ms: float, jitter_ms: float = 0.0) -> list[str]:
    """netem parameters (only on kernels that have netem)."""
    args = ["netem", "delay", f"{ms:g}ms"]
    if jitter_ms:
        args += [f"{jitter_ms:g}ms"]
    return args + ["limit", "100000"]


def u32_filter_args(major: str, prio: int, port: int, side: str, proto: str, classid: str) -> list[str]:
    """``tc filter add`` argv tail: packets of ``proto`` whose ``side`` (sport/dport) is ``port``."""
    pnum = {"tcp": "6", "udp": "17"}[proto]
    return ["filter", "add", "dev", DEV, "parent", f"{major}:", "protocol", "ip", "prio", str(prio), "u32",
            "match", "ip", "protocol", pnum, "0xff", "match", "ip", side, str(port), "0xffff",
            "flowid", classid]


def run_tc(args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``tc <args>``; raise :class:`NetFaultError` naming the command on failure."""
    commands.need("tc", "apt-get install iproute2", NetFaultError)
    p = commands.completed(["tc", *args], error=NetFaultError)
    return commands.check(p, error=NetFaultError) if check else p


def root_qdisc_line(dev: str = DEV) -> str:
    """The ``root`` line of ``tc qdisc show dev <dev>``."""
    out = run_tc(["qdisc", "show", "dev", dev]).stdout
    for line in out.splitlines():
        if " root " in line:
            return line.strip()
    return ""


@dataclass(frozen=True)
class ShapeHandle:
    """One shaped direction set: classes + leaves + filters sharing one filter prio."""

    prio: int
    classids: tuple[str, ...]


class LoShaper:
    """Owns this process's htb root on lo; refcounted by the shaping classes it holds."""

    def __init__(self) -> None:
        self.major = root_major()
        self._lock = threading.Lock()
        self._handles: dict[int, ShapeHandle] = {}
        self._next_minor = 2
        self._root_up = False

    def _reaper(self):
        from pytest_streamchaos.stack.host import current

        return current().reaper

    @property
    def _root_key(self) -> str:
        return f"tc-root-{DEV}-{self.major}"

    def _ensure_root(self) -> None:
        if self._root_up:
            return
        line = root_qdisc_line()
        if re.match(rf"qdisc htb {self.major}: ", line):
            pass  # ours (left by a crashed earlier process with our pid): reuse
        elif not line.startswith("qdisc noqueue 0:"):
            raise NetFaultError(
                f"lo's root qdisc is `{line}`, not the default noqueue: another tool shapes loopback "
                f"traffic. Remove it (`tc qdisc del dev lo root`) before using bandwidth/delay faults.")
        else:
            self._reaper().register_command(self._root_key,
                                            ["tc", "qdisc", "del", "dev", DEV, "root", "handle", f"{self.major}:"])
            # htb without `default`: unclassified packets are sent directly, unshaped.
            run_tc(["qdisc", "add", "dev", DEV, "root", "handle", f"{self.major}:", "htb"])
        self._root_up = True

    def _drop_root(self) -> None:
        run_tc(["qdisc", "del", "dev", DEV, "root", "handle", f"{self.major}:"], check=False)
        self._reaper().unregister_command(self._root_key)
        self._root_up = False

    def add(self, ports: Iterable[int], leaf: list[str], *, direction: str = "both", proto: str = "tcp",
            class_rate_kbit: float | None = None) -> ShapeHandle:
        """Shape the target's packets: per direction an htb class (rate ``class_rate_kbit``, or
        effectively unlimited) with ``leaf`` as its qdisc, and u32 filters steering the packets there.
        ``both`` makes two classes, so each direction gets the full rate, as on a duplex link."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction={direction!r} must be one of {DIRECTIONS}")
        ports = _check_ports(ports)
        sides = {"both": ("dport", "sport"), "to": ("dport",), "from": ("sport",)}[direction]
        with self._lock:
            self._ensure_root()
            prio = self._next_minor  # one filter prio per handle: `tc filter del ... prio P` removes them
            classids = []
            for _side in sides:
                classids.append(f"{self.major}:{self._next_minor:x}")
                self._next_minor += 1
            handle = ShapeHandle(prio, tuple(classids))
            self._handles[prio] = handle
            rate = f"{class_rate_kbit:g}kbit" if class_rate_kbit else "10gbit"
            try:
                for side, cid in zip(sides, classids, strict=True):
                    run_tc(["class", "add", "dev", DEV, "parent", f"{self.major}:", "classid", cid, "htb",
                            "rate", rate, "ceil", rate])
                    leaf_major = format(int(cid.split(":")[1], 16) + 0x100, "x")
                    run_tc(["qdisc", "add", "dev", DEV, "parent", cid, "handle", f"{leaf_major}:", *leaf])
                    for port in ports:
                        run_tc(u32_filter_args(self.major, prio, port, side, proto, cid))
            except Exception:
                self._remove_locked(handle)
                raise
            return handle

    def missing(self, handle: ShapeHandle) -> str | None:
        """Why the shaping of ``handle`` is not in force (a class gone, e.g. lo's root qdisc
        replaced), or None when it is."""
        shown = run_tc(["class", "show", "dev", DEV], check=False).stdout
        for cid in handle.classids:
            if f"class htb {cid} " not in shown:
                return f"the tc class {cid} on {DEV} is gone"
        return None

    def remove(self, handle: ShapeHandle) -> None:
        """Remove the classes/filters of ``handle`` (idempotent); the root goes with the last one."""
        with self._lock:
            self._remove_locked(handle)

    def _remove_locked(self, handle: ShapeHandle) -> None:
        if self._handles.pop(handle.prio, None) is None:
            return
        if not self._handles:
            self._drop_root()  # deleting the root removes every class, leaf and filter at once
            return
        run_tc(["filter", "del", "dev", DEV, "parent", f"{self.major}:", "prio", str(handle.prio)], check=False)
        for cid in handle.classids:
            run_tc(["class", "del", "dev", DEV, "classid", cid], check=False)  # also deletes its leaf

    def remove_all(self) -> None:
        with self._lock:
            self._handles.clear()
            if self._root_up:
                self._drop_root()


def get_shaper() -> LoShaper:
    """The session's lo shaper (its host's, :mod:`pytest_streamchaos.stack.host`: lo is restored when the
    host closes)."""
    from pytest_streamchaos.stack.host import current

    return current().shared("lo-shaper", LoShaper, valid=lambda s: s.major == root_major(), close=_restore)


def _restore(shaper: LoShaper) -> None:  # the session ends with a shaping fault still on: restore lo
    if shaper.major == root_major() and shaper._root_up:
        shaper.remove_all()
