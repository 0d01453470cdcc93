"""The one iptables wrapper of the package: the command line (in a network namespace when given), a chain
hooked into a built-in chain, and the shell script that removes both.

Two users keep a chain of their own: the job group's marking rules (``mangle OUTPUT``, :mod:`.jobgroup`)
and the network faults' rules (``filter INPUT``, ``pytest_streamchaos.netem.iptables``).
"""

from __future__ import annotations

import subprocess

from pytest_streamchaos.errors import NetFaultError
from pytest_streamchaos.machine import commands

IPT = ["iptables", "-w", "5"]  # -w: wait for the xtables lock instead of failing under concurrency
IPT_FIX = "network faults need root/CAP_NET_ADMIN and a working iptables"
#: the built-in chains a packet enters through an input interface (``-i``); the others take ``-o``
_INPUT_HOOKS = ("INPUT", "PREROUTING", "FORWARD")


def nsenter(netns: str | None) -> list[str]:
    """The prefix that runs a command in network namespace ``netns`` (a process's network-namespace file);
    nothing for this host's own namespace."""
    return ["nsenter", f"--net={netns}"] if netns else []


def ipt_argv(args: list[str], *, table: str | None = None, netns: str | None = None) -> list[str]:
    """``iptables -w 5 [-t table] <args>``, in ``netns`` when given (see :func:`nsenter`)."""
    return nsenter(netns) + IPT + (["-t", table] if table else []) + list(args)


def run_ipt(args: list[str], *, check: bool = True, table: str | None = None,
            netns: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``iptables -w 5 <args>`` (in ``table``, in ``netns``); raise :class:`NetFaultError` naming the
    command when it cannot run, or when it fails and ``check``."""
    commands.need(IPT[0], "apt-get install iptables", NetFaultError)
    p = commands.completed(ipt_argv(args, table=table, netns=netns), fix=IPT_FIX, error=NetFaultError)
    return commands.check(p, fix=IPT_FIX, error=NetFaultError) if check else p


def jump_spec(chain: str, iface: str | None = "lo", hook: str = "INPUT") -> list[str]:
    """The rule in ``hook`` that sends packets of ``iface`` (every packet when None: in a container's
    namespace) through ``chain``."""
    flag = "-i" if hook in _INPUT_HOOKS else "-o"
    return ([flag, iface] if iface else []) + ["-j", chain]


def chain_cleanup_script(chain: str, netns: str | None = None, iface: str | None = "lo", *, hook: str = "INPUT",
                         table: str | None = None) -> str:
    """Shell commands removing the jump from ``hook``, the rules and the chain (each step tolerates absence)."""
    ipt = " ".join(ipt_argv([], table=table, netns=netns))
    jump = " ".join(jump_spec(chain, iface, hook))
    return (f"while {ipt} -D {hook} {jump} 2>/dev/null; do :; done; "
            f"{ipt} -F {chain} 2>/dev/null; {ipt} -X {chain} 2>/dev/null; true")
