"""iptables rules for network faults, kept in one chain of this process.

All rules live in ``STREAMCHAOS-<pid>``, jumped to from ``INPUT`` for packets arriving on ``lo``.
Why INPUT only: on the local stack every packet (both directions) is delivered locally, so it passes
INPUT exactly once; a DROP in OUTPUT instead makes the *sender's* syscall fail with EPERM, which no
real network does. Cleanup is one jump delete + flush + delete of the chain, and every rule, the jump
and the chain are registered with the session reaper, so a SIGKILLed pytest leaves no rule behind.

Rule *specs* (argv fragments after ``-A CHAIN``) are built by pure functions so they can be unit-tested.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.base import NetFaultError  # noqa: F401  (re-exported: faults raise it)
from pytest_streamchaos.stack.netfilter import (  # noqa: F401  (the one iptables wrapper: re-exported)
    IPT,
    IPT_FIX,
    chain_cleanup_script,
    jump_spec,
    nsenter,
    run_ipt,
)

#: ``-m multiport`` takes at most 15 ports per rule.
MULTIPORT_MAX = 15
DIRECTIONS = ("both", "to", "from")
PROTOCOLS = ("tcp", "udp")


def _check_ports(ports: Iterable[int]) -> tuple[int, ...]:
    out = tuple(sorted({int(p) for p in ports}))
    if not out:
        raise ValueError("a network fault needs at least one port (got an empty port set)")
    bad = [p for p in out if not 0 < p < 65536]
    if bad:
        raise ValueError(f"ports {bad} are not valid TCP/UDP ports (1..65535)")
    return out


def port_matches(ports: Iterable[int], direction: str = "both", proto: str = "tcp") -> list[list[str]]:
    """The match part of the rules that select the target's packets, one per chunk of 15 ports.

    ``direction``: ``to`` = packets to the target (``--dports``), ``from`` = its replies
    (``--sports``), ``both`` = either (``--ports``: one rule, so a packet is evaluated once).
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction={direction!r} must be one of {DIRECTIONS}")
    if proto not in PROTOCOLS:
        raise ValueError(f"proto={proto!r} must be one of {PROTOCOLS}")
    ports = _check_ports(ports)
    opt = {"both": "--ports", "to": "--dports", "from": "--sports"}[direction]
    return [["-p", proto, "-m", "multiport", opt, ",".join(str(p) for p in ports[i:i + MULTIPORT_MAX])]
            for i in range(0, len(ports), MULTIPORT_MAX)]


def _comment(tag: str) -> list[str]:
    return ["-m", "comment", "--comment", tag]


def connmark_match(mark: int | None, mask: int = 0xFFFFFFFF) -> list[str]:
    """The match selecting packets of connections marked ``mark`` (the job's, see
    :mod:`pytest_streamchaos.stack.jobgroup`); nothing when ``mark`` is None (every connection)."""
    return [] if mark is None else ["-m", "connmark", "--mark", f"{mark:#x}/{mask:#x}"]


def drop_specs(ports: Iterable[int], *, direction: str = "both", proto: str = "tcp",
               percent: float = 100.0, tag: str = "streamchaos", owner: Iterable[str] = ()) -> list[list[str]]:
    """Rules dropping the target's packets; ``percent`` < 100 drops each packet independently with
    that probability (``-m statistic --mode random``). ``owner``: a further match (e.g.
    :func:`connmark_match`) limiting the rules to some connections."""
    if not 0 < percent <= 100:
        raise ValueError(f"percent={percent!r} must be in (0, 100]")
    stat = [] if percent >= 100 else ["-m", "statistic", "--mode", "random",
                                      "--probability", f"{percent / 100:.6f}"]
    return [m + list(owner) + stat + _comment(tag) + ["-j", "DROP"] for m in port_matches(ports, direction, proto)]


def nfqueue_specs(ports: Iterable[int], queue_num: int, *, direction: str = "both", proto: str = "tcp",
                  tag: str = "streamchaos", owner: Iterable[str] = ()) -> list[list[str]]:
    """Rules sending the target's packets to NFQUEUE ``queue_num``. ``--queue-bypass``: if no
    delayer listens (it died), packets pass instead of being dropped."""
    if not 0 <= queue_num < 65536:
        raise ValueError(f"queue_num={queue_num!r} must be in 0..65535")
    return [m + list(owner) + _comment(tag) + ["-j", "NFQUEUE", "--queue-num", str(queue_num), "--queue-bypass"]
            for m in port_matches(ports, direction, proto)]


def chain_name(pid: int | None = None) -> str:
    """This process's chain (iptables chain names are limited to 28 characters)."""
    return f"STREAMCHAOS-{os.getpid() if pid is None else pid}"


@dataclass(frozen=True)
class RuleHandle:
    """Rules added together by one :meth:`RuleManager.add` call."""

    id: int
    specs: tuple[tuple[str, ...], ...]


class RuleManager:
    """Adds/removes rules in this process's chain; creates the chain on first use and deletes it
    when its last rule goes. Thread-safe. Get the process-wide one with :func:`get_rule_manager`.

    ``netns``: the chain lives in that network namespace (a container's) and sees every packet the
    container receives; nothing is registered with the reaper, the rules die with the namespace."""

    def __init__(self, chain: str | None = None, netns: str | None = None) -> None:
        self.chain = chain or chain_name()
        self.netns = netns
        self.iface = None if netns else "lo"
        self._lock = threading.Lock()
        self._rules: dict[int, RuleHandle] = {}
        self._ids = itertools.count(1)
        self._chain_up = False

    def _reaper(self):
        from pytest_streamchaos.stack.host import current

        return current().reaper

    def _ensure_chain(self) -> None:
        if self._chain_up:
            return
        # Register first: a SIGKILL between the two steps must not leak the chain.
        self._register(f"ipt-chain-{self.chain}", ["sh", "-c", self._cleanup_script()])
        if self._ipt(["-N", self.chain], check=False).returncode != 0:
            self._ipt(["-F", self.chain])  # left from a crashed earlier process with our pid: reuse it
        if self._ipt(["-C", "INPUT", *jump_spec(self.chain, self.iface)], check=False).returncode != 0:
            self._ipt(["-I", "INPUT", "1", *jump_spec(self.chain, self.iface)])
        self._chain_up = True

    def _ipt(self, args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_ipt(args, check=check, netns=self.netns)

    def _cleanup_script(self) -> str:
        return chain_cleanup_script(self.chain, self.netns, self.iface)

    def _register(self, key: str, argv: list[str]) -> None:
        if self.netns is None:
            self._reaper().register_command(key, argv)

    def _unregister(self, key: str) -> None:
        if self.netns is None:
            self._reaper().unregister_command(key)

    def _drop_chain(self) -> None:
        commands.completed(["sh", "-c", self._cleanup_script()], error=NetFaultError)
        self._unregister(f"ipt-chain-{self.chain}")
        self._chain_up = False

    def add(self, specs: list[list[str]], *, first: bool = False) -> RuleHandle:
        """Add ``specs`` to the chain (appended, or at the top with ``first``: DROPs go first so a
        packet dropped by a loss/partition fault never reaches an NFQUEUE rule, whose accept would
        skip the rest of the chain)."""
        with self._lock:
            self._ensure_chain()
            handle = RuleHandle(next(self._ids), tuple(tuple(s) for s in specs))
            self._rules[handle.id] = handle
            try:
                for i, spec in enumerate(handle.specs):
                    self._register(f"ipt-rule-{self.chain}-{handle.id}-{i}", IPT + ["-D", self.chain, *spec])
                    self._ipt((["-I", self.chain, "1"] if first else ["-A", self.chain]) + list(spec))
            except Exception:
                self._remove_locked(handle)
                raise
            return handle

    def remove(self, handle: RuleHandle) -> None:
        """Remove the rules of ``handle`` (idempotent); the chain goes with its last rule."""
        with self._lock:
            self._remove_locked(handle)

    def _remove_locked(self, handle: RuleHandle) -> None:
        if self._rules.pop(handle.id, None) is None:
            return
        for i, spec in enumerate(handle.specs):
            self._ipt(["-D", self.chain, *spec], check=False)  # absent already: fine
            self._unregister(f"ipt-rule-{self.chain}-{handle.id}-{i}")
        if not self._rules:
            self._drop_chain()

    def remove_all(self) -> None:
        """Remove every rule and the chain (used at exit)."""
        with self._lock:
            for h in list(self._rules.values()):
                self._remove_locked(h)
            if self._chain_up:
                self._drop_chain()

    def missing(self, handle: RuleHandle) -> str | None:
        """Why the rules of ``handle`` are not all in force (the chain's jump from INPUT or a rule
        gone, e.g. flushed by another tool), or None when they are."""
        if self._ipt(["-C", "INPUT", *jump_spec(self.chain, self.iface)], check=False).returncode != 0:
            return f"the jump from INPUT to chain {self.chain} is gone"
        for spec in handle.specs:
            if self._ipt(["-C", self.chain, *spec], check=False).returncode != 0:
                return f"the iptables rule `-A {self.chain} {' '.join(spec)}` is gone"
        return None

    def listing(self) -> str:
        """``iptables -S`` of our chain ('' when it does not exist)."""
        p = self._ipt(["-S", self.chain], check=False)
        return p.stdout if p.returncode == 0 else ""


def get_rule_manager(netns: str | None = None) -> RuleManager:
    """The session's rule manager (its host's, :mod:`pytest_streamchaos.stack.host`; a forked child gets its
    own chain), or of its chain in network namespace ``netns`` (a container's)."""
    from pytest_streamchaos.stack.host import current

    return current().shared(("iptables", netns), lambda: RuleManager(netns=netns),
                            valid=lambda m: m.chain == chain_name(), close=None if netns else _remove_rules)


def _remove_rules(manager: RuleManager) -> None:  # the session ends with a fault still injected
    if manager.chain == chain_name() and manager._rules:
        manager.remove_all()
