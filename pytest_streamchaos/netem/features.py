"""What network faults this host can inject, probed once per process and cached.

The probe leaves nothing behind: the iptables checks use a throwaway chain that nothing jumps to
(so no packet ever sees it), the qdisc checks run on the ``lo`` of a network namespace created for
the probe and deleted afterwards, and both are registered with the session reaper while they exist
so that even a SIGKILL in the middle of the probe leaves no trace.

Use::

    caps = network_features()
    reason = caps.missing("delay", "a packet delay")
    if reason:
        pytest.skip(reason)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from pytest_streamchaos.machine import commands
from pytest_streamchaos.machine.commands import has_net_admin

#: How to get what is missing (also printed in skip reasons).
APT_PACKAGES = ("iptables", "iproute2", "libnetfilter-queue-dev")
PIP_EXTRA = "NetfilterQueue>=1.1"
NFQ_FIX = "apt-get install -y libnetfilter-queue-dev && pip install NetfilterQueue"
#: what a network fault's mechanism can need of the host (:meth:`NetworkFeatures.missing`)
NEEDS = ("drop", "loss", "delay", "nfqueue", "netem", "shaping")


def _run(argv: list[str], timeout: float = 10.0) -> tuple[bool, str]:
    """Run ``argv``; return (succeeded, stderr-or-stdout text)."""
    try:
        p = commands.completed(argv, timeout=timeout)
    except commands.CommandError as exc:
        return False, str(exc)
    return p.returncode == 0, (p.stderr or p.stdout).strip()


@dataclass
class NetworkFeatures:
    """The result of the host probe. ``reasons`` holds why each false flag is false."""

    net_admin: bool = False
    iptables: bool = False  #: can create/delete chains and DROP rules
    statistic: bool = False  #: ``-m statistic --mode random`` (packet loss)
    multiport: bool = False  #: ``-m multiport --ports`` (one rule per port set)
    nfqueue_target: bool = False  #: ``-j NFQUEUE --queue-bypass`` accepted by iptables
    netfilterqueue: bool = False  #: the NetfilterQueue package imports and can bind a queue
    tc: bool = False
    netns: bool = False  #: ``ip netns add`` works (where qdiscs are probed)
    netem: bool = False
    tbf: bool = False
    htb: bool = False
    u32: bool = False  #: u32 port filters under an htb root (per-port shaping on lo)
    reasons: dict[str, str] = field(default_factory=dict)

    # -- derived -----------------------------------------------------------------------------
    @property
    def nfqueue(self) -> bool:
        """Delay through NFQUEUE + a user-space delayer is possible."""
        return self.iptables and self.nfqueue_target and self.netfilterqueue

    @property
    def delay_backend(self) -> str | None:
        """``"netem"`` when the kernel has it, else ``"nfqueue"``, else None."""
        if self.netem and self.htb and self.u32:
            return "netem"
        if self.nfqueue:
            return "nfqueue"
        return None

    @property
    def shaping(self) -> bool:
        """Per-port bandwidth limits on lo: htb root + u32 filters + tbf leaves."""
        return self.tc and self.htb and self.u32 and self.tbf

    def _why(self, *flags: str) -> str:
        return "; ".join(self.reasons[f] for f in flags if f in self.reasons) or "unknown reason"

    def missing(self, need: str, what: str | None = None) -> str | None:
        """Why a fault that needs ``need`` of the host cannot run here (a skip reason naming the fix),
        or None. ``what`` names the fault in the message (default: the need).

        Needs (:data:`NEEDS`): ``drop`` (iptables DROP rules: a cut link, a broker cut from its
        peers), ``loss`` (DROP with the statistic match), ``delay`` (netem, else NFQUEUE), ``nfqueue``
        and ``netem`` (one delay mechanism), ``shaping`` (per-port bandwidth limits on lo). (Faults on
        the job's Kafka links go through the stack's own Toxiproxy and need none of these.)
        """
        if need not in NEEDS:
            raise ValueError(f"unknown need {need!r} for NetworkFeatures.missing(); needs: {', '.join(NEEDS)}")
        what = what or need
        if not self.net_admin:
            return (f"{what} needs root or CAP_NET_ADMIN (run pytest as root, or "
                    "`setcap cap_net_admin+ep` on the interpreter)")
        if need == "drop":
            return None if self.iptables else f"{what} needs iptables: {self._why('iptables')}"
        if need == "loss":
            if not self.iptables or not self.statistic:
                return f"{what} needs iptables with the statistic match: {self._why('iptables', 'statistic')}"
            return None
        if need == "delay":
            if self.delay_backend:
                return None
            return (f"{what} needs netem or NFQUEUE+NetfilterQueue: "
                    f"{self._why('netem', 'nfqueue_target', 'netfilterqueue')}; fix: {NFQ_FIX}")
        if need == "nfqueue":
            if self.nfqueue:
                return None
            return (f"NFQUEUE delay needs iptables' NFQUEUE target and NetfilterQueue: "
                    f"{self._why('iptables', 'nfqueue_target', 'netfilterqueue')}; fix: {NFQ_FIX}")
        if need == "netem":
            if self.netem and self.htb and self.u32:
                return None
            return f"netem delay needs the netem, htb qdiscs and u32 filter: {self._why('netem', 'htb', 'u32')}"
        if self.shaping:
            return None
        return (f"{what} needs tc with htb, u32 and tbf (per-port shaping on lo): "
                f"{self._why('tc', 'htb', 'u32', 'tbf')}")


def _probe_iptables(caps: NetworkFeatures, reaper) -> None:
    exe = shutil.which("iptables")
    if not exe:
        caps.reasons["iptables"] = "no `iptables` on PATH (apt-get install iptables)"
        return
    chain = f"SCPROBE-{os.getpid()}"
    cleanup = ["sh", "-c", f"iptables -w 5 -F {chain}; iptables -w 5 -X {chain}"]
    key = f"capprobe-iptables-{chain}"
    if reaper is not None:
        reaper.register_command(key, cleanup)
    try:
        ok, err = _run([exe, "-w", "5", "-N", chain])
        if not ok:
            caps.reasons["iptables"] = f"`iptables -N {chain}` failed: {err}"
            return
        ok, err = _run([exe, "-w", "5", "-A", chain, "-p", "tcp", "--dport", "9", "-j", "DROP"])
        caps.iptables = ok
        if not ok:
            caps.reasons["iptables"] = f"iptables cannot add a DROP rule: {err}"
            return
        ok, err = _run([exe, "-w", "5", "-A", chain, "-m", "statistic", "--mode", "random",
                        "--probability", "0.5", "-j", "DROP"])
        caps.statistic = ok
        if not ok:
            caps.reasons["statistic"] = f"iptables statistic match unavailable: {err}"
        ok, err = _run([exe, "-w", "5", "-A", chain, "-p", "tcp", "-m", "multiport", "--ports", "9,10",
                        "-m", "comment", "--comment", "probe", "-j", "DROP"])
        caps.multiport = ok
        if not ok:
            caps.reasons["multiport"] = f"iptables multiport/comment match unavailable: {err}"
        ok, err = _run([exe, "-w", "5", "-A", chain, "-p", "tcp", "--dport", "9", "-j", "NFQUEUE",
                        "--queue-num", "65000", "--queue-bypass"])
        caps.nfqueue_target = ok
        if not ok:
            caps.reasons["nfqueue_target"] = f"iptables NFQUEUE target unavailable: {err}"
    finally:
        _run(["sh", "-c", cleanup[2]])
        if reaper is not None:
            reaper.unregister_command(key)


def _probe_netfilterqueue(caps: NetworkFeatures) -> None:
    try:
        from netfilterqueue import NetfilterQueue
    except ImportError as exc:
        caps.reasons["netfilterqueue"] = f"the NetfilterQueue package is not importable ({exc})"
        return
    q = NetfilterQueue()
    try:
        q.bind(65001, lambda pkt: pkt.accept(), max_len=16)  # no rule points at it: sees no packet
    except OSError as exc:
        caps.reasons["netfilterqueue"] = f"cannot bind an NFQUEUE (nfnetlink_queue missing?): {exc}"
        return
    finally:
        q.unbind()
    caps.netfilterqueue = True


def _probe_qdiscs(caps: NetworkFeatures, reaper) -> None:
    if not shutil.which("tc") or not shutil.which("ip"):
        caps.reasons["tc"] = "no `tc`/`ip` on PATH (apt-get install iproute2)"
        return
    caps.tc = True
    ns = f"sc-probe-{os.getpid()}"
    key = f"capprobe-netns-{ns}"
    if reaper is not None:
        reaper.register_command(key, ["ip", "netns", "del", ns])
    try:
        ok, err = _run(["ip", "netns", "add", ns])
        if not ok:
            caps.reasons["netns"] = f"cannot create a network namespace to probe qdiscs: {err}"
            for f in ("netem", "tbf", "htb", "u32"):
                caps.reasons[f] = caps.reasons["netns"]
            return
        caps.netns = True
        tc = ["tc", "-n", ns]
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])

        def qdisc_ok(flag: str, spec: list[str]) -> bool:
            ok, err = _run(tc + ["qdisc", "add", "dev", "lo", "root", "handle", "1:"] + spec)
            _run(tc + ["qdisc", "del", "dev", "lo", "root"])
            if not ok:
                caps.reasons[flag] = f"`tc qdisc add ... {spec[0]}` failed: {err}"
            return ok

        caps.netem = qdisc_ok("netem", ["netem", "delay", "1ms"])
        caps.tbf = qdisc_ok("tbf", ["tbf", "rate", "1mbit", "burst", "32kbit", "latency", "50ms"])
        ok, err = _run(tc + ["qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb"])
        caps.htb = ok
        if not ok:
            caps.reasons["htb"] = f"`tc qdisc add ... htb` failed: {err}"
            caps.reasons["u32"] = "u32 not probed (needs an htb root)"
        else:
            ok, err = _run(tc + ["class", "add", "dev", "lo", "parent", "1:", "classid", "1:2", "htb",
                                 "rate", "1mbit"])
            if ok:
                ok, err = _run(tc + ["filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "prio",
                                     "1", "u32", "match", "ip", "dport", "9", "0xffff", "flowid", "1:2"])
            caps.u32 = ok
            if not ok:
                caps.reasons["u32"] = f"u32 filter under htb failed: {err}"
            _run(tc + ["qdisc", "del", "dev", "lo", "root"])
    finally:
        _run(["ip", "netns", "del", ns])
        if reaper is not None:
            reaper.unregister_command(key)



def probe() -> NetworkFeatures:
    """Probe the host now (uncached). Prefer :func:`network_features`."""
    caps = NetworkFeatures(net_admin=has_net_admin())
    if not caps.net_admin:
        caps.reasons["iptables"] = "not root / no CAP_NET_ADMIN"
        return caps
    try:
        from pytest_streamchaos.stack.host import current

        reaper = current().reaper
    except Exception:  # the probe must still work (and clean up itself) without a watchdog
        reaper = None
    _probe_iptables(caps, reaper)
    _probe_netfilterqueue(caps)
    _probe_qdiscs(caps, reaper)
    return caps


def network_features() -> NetworkFeatures:
    """What this host's network offers, probed on first call in this process and kept by the session's host."""
    from pytest_streamchaos.stack.host import current

    return current().shared(("capabilities", os.getpid()), probe)
