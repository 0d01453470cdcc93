"""Network faults on the local stack: loss, partition, bandwidth limit and delay on a target's ports.

On the local backend every component shares 127.0.0.1, so a *target* is a set of TCP ports (see
:func:`ports_of`); rules match packets to those ports (traffic to the target) and from them (its
replies). Every fault is a context manager with idempotent ``inject()``/``heal()``::

    with NetworkDelay(ports_of(broker), ms=200):
        ...          # every reply of the broker arrives 200 ms later
    # healed here, also on an exception

Mechanisms (see :mod:`.features` for what the host offers):

- ``PacketLoss`` / ``Partition``: iptables DROP (``-m statistic`` for loss) in this process's chain.
- ``BandwidthLimit``: tc htb class with a tbf leaf on lo, selected by u32 port filters.
- ``NetworkDelay``: netem (same htb/u32 scheme) when the kernel has it, else an NFQUEUE rule plus a
  user-space delayer process (:mod:`.nfq_delayer`).

The job's Kafka links have Toxiproxy proxies of their own: faults there are toxics (:mod:`.toxics`).
Which class is which operation of a link (partition, slow, drop, throttle): :mod:`.links`.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from pytest_streamchaos.netem import iptables as ipt
from pytest_streamchaos.netem import nfq_delayer, probe, tcshaper
from pytest_streamchaos.netem.features import network_features
from pytest_streamchaos.netem.iptables import NetFaultError
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.host import current
from pytest_streamchaos.stack.process import ManagedProcess

__all__ = ["ports_of", "NetworkFault", "PacketLoss", "Partition", "BandwidthLimit", "NetworkDelay",
           "FaultGroup", "NetFaultError"]

PROTOS = {"tcp": ("tcp",), "udp": ("udp",), "all": ("tcp", "udp")}


def ports_of(*targets, names: Iterable[str] | None = None) -> frozenset[int]:
    """The port set of ``targets``: :class:`~pytest_streamchaos.stack.base.Endpoint` objects (all their
    ports, or only those called ``names``), ints, or iterables of either."""
    wanted = set(names) if names is not None else None
    out: set[int] = set()

    def add(t) -> None:
        if isinstance(t, bool):
            raise TypeError(f"ports_of: {t!r} is not an Endpoint or a port")
        if isinstance(t, int):
            out.add(t)
        elif hasattr(t, "ports") and isinstance(t.ports, dict):
            for name, port in t.ports.items():
                if wanted is None or name in wanted:
                    out.add(int(port))
        elif isinstance(t, Iterable) and not isinstance(t, (str, bytes)):
            for x in t:
                add(x)
        else:
            raise TypeError(f"ports_of: {t!r} is not an Endpoint, a port or an iterable of them")

    for t in targets:
        add(t)
    if not out:
        raise ValueError(f"ports_of{targets!r}: no ports (names={names!r}); the target exposes none")
    return frozenset(out)


#: why tc-shaped faults act on every connection of the port: the classifiers that read packet marks
#: (u32's ``match mark`` needs CONFIG_CLS_U32_MARK, else it is silently ignored; ``fw``, ``basic``)
#: are missing from kernels like this one, so tc cannot tell the job's packets from the harness's
TC_UNSCOPED = "it is shaped by tc, which cannot tell the job's packets from the harness's on this kernel"


class ProbeFrom(TypedDict, total=False):
    """Where a probe starts and aims: from a node's namespace at the peer's address, or from this host with
    the fault's connection mark (``SO_MARK``)."""

    host: str
    netns: str
    mark: int | None


def _require(need: str, what: str) -> None:
    reason = network_features().missing(need, what)
    if reason:
        raise NetFaultError(reason)


class _Healing:
    """``with fault:`` injects, and always heals on the way out (also on an exception)."""

    def inject(self) -> None:
        raise NotImplementedError

    def heal(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.inject()
        return self

    def __exit__(self, *exc) -> None:
        self.heal()


class NetworkFault(_Healing):
    """Base: ``inject()``/``heal()`` are idempotent; ``with fault:`` injects and always heals."""

    #: the mechanism, in the tags of its rules
    kind = "network"
    #: what the mechanism needs of the host (:meth:`~.features.NetworkFeatures.missing`), and its name there
    need = ""
    what = "a network fault"

    def __init__(self, ports: Iterable[int], direction: str = "both") -> None:
        self.ports = ipt._check_ports(ports)
        if direction not in ipt.DIRECTIONS:
            raise ValueError(f"direction={direction!r} must be one of {ipt.DIRECTIONS}")
        self.direction = direction
        self._lock = threading.Lock()
        self.active = False
        self.conn_mark: tuple[int, int] | None = None
        self.netns: str | None = None  #: the network namespace the rules live in (None: this host's)
        self.peer: str | None = None  #: in a namespace: the target's address (its packets are matched)

    def scope_limit(self) -> str | None:
        """Why this fault cannot be limited to some connections (:meth:`only_marked`), or None."""
        return None

    def only_marked(self, mark: int, mask: int) -> NetworkFault:
        """Act only on connections whose conntrack mark matches (the job's connections, see
        :mod:`pytest_streamchaos.stack.jobgroup`): the harness's own clients on the same ports are
        left alone. Call before :meth:`inject`. Returns ``self``."""
        if self.active:
            raise RuntimeError(f"{self!r}: only_marked() after inject()")
        why = self.scope_limit()
        if why:
            raise NetFaultError(f"{self!r} cannot act on some connections only: {why}")
        self.conn_mark = (int(mark), int(mask))
        return self

    def in_namespace(self, netns: str, peer: str) -> NetworkFault:
        """Act in network namespace ``netns`` (the network-namespace file of a container's process) on the packets
        the target at ``peer`` sends into it: one node's side of the link, as on a real network. The
        harness, outside that namespace, is never touched. Call before :meth:`inject`; returns ``self``."""
        if self.active:
            raise RuntimeError(f"{self!r}: in_namespace() after inject()")
        self.netns, self.peer = netns, peer
        return self

    @property
    def owner_match(self) -> list[str]:
        """The iptables match limiting the fault's rules to its connections ([] = all)."""
        if self.peer is not None:
            return ["-s", self.peer]
        return [] if self.conn_mark is None else ipt.connmark_match(*self.conn_mark)

    @property
    def probe_where(self) -> ProbeFrom:
        """Where probes start and aim (keyword arguments of the :mod:`.probe` functions)."""
        if self.netns is not None and self.peer is not None:  # in_namespace() sets both
            return {"host": self.peer, "netns": self.netns}
        return {"mark": self.probe_mark}

    @property
    def probe_mark(self) -> int | None:
        """``SO_MARK`` for probes, so they cross the path the fault acts on."""
        return None if self.conn_mark is None else self.conn_mark[0]

    def inject(self) -> None:
        with self._lock:
            if not self.active:
                self._inject()
                self.active = True

    def heal(self) -> None:
        with self._lock:
            if self.active:
                self.active = False
                self._heal()

    def _inject(self) -> None:
        raise NotImplementedError

    def _heal(self) -> None:
        raise NotImplementedError

    def stopped_acting(self) -> str | None:
        """Why the injected fault no longer acts (its rule, qdisc or process gone), or None. Cheap
        enough to call every second while the fault is active."""
        return None

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        """Probe the faulted link now and return what it measured (keys ``measured_*``); raises
        :class:`NetFaultError` when the fault is not in effect, saying what was measured. A probe
        that would take longer than ``budget_s`` (the fault's duration) is skipped, saying so."""
        why = self.stopped_acting()
        if why:
            raise NetFaultError(f"{self!r} is not in effect: {why}")
        return {}

    @property
    def probe_port(self) -> int:
        """The port the probes aim at: one the fault's rules match."""
        return min(self.ports)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ports={list(self.ports)}, direction={self.direction!r})"


class _DropFault(NetworkFault):
    def __init__(self, ports, percent: float, direction: str, proto: str) -> None:
        super().__init__(ports, direction)
        if proto not in PROTOS:
            raise ValueError(f"proto={proto!r} must be one of {tuple(PROTOS)}")
        if not 0 < percent <= 100:
            raise ValueError(f"percent={percent!r} must be in (0, 100]")
        self.proto, self.percent = proto, float(percent)
        self._handle: ipt.RuleHandle | None = None

    def specs(self) -> list[list[str]]:
        tag = f"sc-{self.kind}-{id(self):x}"
        return [s for p in PROTOS[self.proto]
                for s in ipt.drop_specs(self.ports, direction=self.direction, proto=p, percent=self.percent,
                                        tag=tag, owner=self.owner_match)]

    def _inject(self) -> None:
        _require(self.need, self.what)
        # first=True: drops precede NFQUEUE rules, whose accept would skip the rest of the chain.
        self._handle = ipt.get_rule_manager(self.netns).add(self.specs(), first=True)

    def _heal(self) -> None:
        if self._handle is not None:
            ipt.get_rule_manager(self.netns).remove(self._handle)
            self._handle = None

    def stopped_acting(self) -> str | None:
        handle = self._handle
        if not self.active or handle is None:
            return None
        return ipt.get_rule_manager(self.netns).missing(handle)

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        super().measure()
        if "tcp" not in PROTOS[self.proto]:
            return {}
        # enough connects that a stated loss shows (each is 2 packets), few enough to take < 1 s
        n = 8 if self.percent >= 100 else 40
        unanswered = probe.unanswered_fraction(self.probe_port, n=n, **self.probe_where)
        loss = probe.loss_from_unanswered(unanswered)
        # judged only when no connect was lost although that was all but impossible (< 1e-4) at the
        # stated loss: a low loss can miss every probe by chance, and a false failure would be worse
        if unanswered == 0 and (1 - self.percent / 100.0) ** (2 * n) < 1e-4:
            raise NetFaultError(f"{self!r} is not in effect: {unanswered:.0%} of {n} connects to port "
                                f"{self.probe_port} went unanswered (measured loss {loss:.0%}, stated "
                                f"{self.percent:g}%)")
        return {"measured_loss": round(loss, 3), "probe_connects": n}


class PacketLoss(_DropFault):
    """Drop each of the target's packets independently with probability ``percent``/100."""

    kind, need, what = "loss", "loss", "packet loss"

    def __init__(self, ports: Iterable[int], percent: float, *, direction: str = "both",
                 proto: str = "tcp") -> None:
        super().__init__(ports, percent, direction, proto)


class Partition(_DropFault):
    """Cut the target off: drop all its packets (``direction="to"``/``"from"``: one way only)."""

    kind, need, what = "partition", "drop", "a partition"

    def __init__(self, ports: Iterable[int], *, direction: str = "both", proto: str = "all") -> None:
        super().__init__(ports, 100.0, direction, proto)


class BrokerCut(Partition):
    """A Kafka broker cut from its peers (replication, the KRaft quorum), its clients untouched: every
    packet on its own peer ports, and every packet of the connections it opened to the other brokers'
    peer ports (told apart by its connection mark, :meth:`KafkaCluster.node_mark
    <pytest_streamchaos.stack.base.KafkaCluster.node_mark>`), is dropped. Its client listeners (the
    job's, the harness's) are not peer ports, so both still reach it."""

    kind, need, what = "broker-cut", "drop", "a broker's cut"

    def __init__(self, own_ports: Iterable[int], peer_ports: Iterable[int], mark: tuple[int, int] | None, *,
                 unmarked_reason: str = "the stack does not mark them") -> None:
        """``unmarked_reason``: why the stack gives no ``mark`` (its :class:`~pytest_streamchaos.stack.base.LinkScope`'s
        ``unscoped_reason()``), for the error."""
        super().__init__(own_ports, proto="tcp")
        if mark is None:
            raise NetFaultError("a broker's cut needs the broker's connections told apart, which needs the job "
                                f"group ({unmarked_reason}): run as root on a host with cgroup v2 and iptables")
        self.peer_ports, self.mark = ipt._check_ports(peer_ports), mark

    def specs(self) -> list[list[str]]:
        tag = f"sc-{self.kind}-{id(self):x}"
        own = ipt.drop_specs(self.ports, tag=tag)
        opened = ipt.drop_specs(self.peer_ports, tag=tag, owner=ipt.connmark_match(*self.mark))
        return own + opened

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        """A connect to the broker's own peer port goes unanswered (its opened connections carry a
        mark no probe can take)."""
        unanswered = probe.unanswered_fraction(self.probe_port, n=4)
        if unanswered < 1.0:
            raise NetFaultError(f"{self!r} is not in effect: {unanswered:.0%} of connects to its peer port "
                                f"{self.probe_port} went unanswered")
        return {"measured_loss": 1.0, "probe_connects": 4}

    def __repr__(self) -> str:
        return f"BrokerCut(own={list(self.ports)}, peers={list(self.peer_ports)})"


class BandwidthLimit(NetworkFault):
    """Limit the target's traffic to ``kbit`` kbit/s per direction (htb class + tbf leaf on lo)."""

    kind, need, what = "bandwidth", "shaping", "a bandwidth limit"

    def __init__(self, ports: Iterable[int], kbit: float, *, direction: str = "both", proto: str = "tcp") -> None:
        super().__init__(ports, direction)
        if kbit <= 0:
            raise ValueError(f"kbit={kbit!r} must be > 0")
        if proto not in ipt.PROTOCOLS:
            raise ValueError(f"proto={proto!r} must be one of {ipt.PROTOCOLS}")
        self.kbit, self.proto = float(kbit), proto
        self._handle: tcshaper.ShapeHandle | None = None

    def scope_limit(self) -> str | None:
        return TC_UNSCOPED

    def _inject(self) -> None:
        _require(self.need, self.what)
        if self.netns is not None:
            raise NetFaultError(f"{self!r}: a bandwidth limit inside a container's namespace is not implemented "
                                "(the tc shaper works on this host's loopback only); run it on the local backend")
        self._handle = tcshaper.get_shaper().add(self.ports, tcshaper.tbf_leaf_args(self.kbit),
                                                 direction=self.direction, proto=self.proto,
                                                 class_rate_kbit=self.kbit)

    def _heal(self) -> None:
        if self._handle is not None:
            tcshaper.get_shaper().remove(self._handle)
            self._handle = None

    def stopped_acting(self) -> str | None:
        handle = self._handle
        if not self.active or handle is None:
            return None
        return tcshaper.get_shaper().missing(handle)


_QUEUE_NUMS = itertools.count((os.getpid() % 2000) * 32 + 1000)


class NetworkDelay(NetworkFault):
    """Delay the target's packets by ``ms`` ± ``jitter_ms`` (uniform).

    ``direction="from"`` (default) delays what the target sends, like netem on the target's own
    interface: a round trip to the target grows by ``ms``. ``"both"`` delays each way (RTT + 2·ms).
    ``backend``: ``"netem"``, ``"nfqueue"`` or None (netem if the kernel has it, else NFQUEUE).
    With NFQUEUE, packets keep their order unless ``reorder=True``; :attr:`stats` holds the
    delayer's statistics after heal.
    """

    kind, need, what = "delay", "delay", "a packet delay"
    READY_TIMEOUT = 15.0

    def __init__(self, ports: Iterable[int], ms: float, jitter_ms: float = 0.0, *, direction: str = "from",
                 proto: str = "tcp", backend: str | None = None, reorder: bool = False,
                 seed: int | None = None) -> None:
        super().__init__(ports, direction)
        if ms < 0 or jitter_ms < 0:
            raise ValueError(f"ms={ms!r} and jitter_ms={jitter_ms!r} must be >= 0")
        if backend not in (None, "netem", "nfqueue"):
            raise ValueError(f"backend={backend!r} must be 'netem', 'nfqueue' or None")
        if proto not in ipt.PROTOCOLS:
            raise ValueError(f"proto={proto!r} must be one of {ipt.PROTOCOLS}")
        self.ms, self.jitter_ms, self.proto = float(ms), float(jitter_ms), proto
        self.backend, self.reorder, self.seed = backend, reorder, seed
        self.queue_num: int | None = None
        self.stats: dict | None = None
        self._proc: ManagedProcess | None = None
        self._rules: ipt.RuleHandle | None = None
        self._shape: tcshaper.ShapeHandle | None = None
        self.base_rtt_ms = 0.0

    def scope_limit(self) -> str | None:
        return TC_UNSCOPED if (self.backend or network_features().delay_backend) == "netem" else None

    def _inject(self) -> None:
        backend = self.backend or network_features().delay_backend
        if backend == "netem":
            _require("netem", "netem delay")
        elif backend == "nfqueue":
            _require("nfqueue", "NFQUEUE delay")
        else:
            _require(self.need, self.what)
        self.stats = None
        # the link's round trip before the delay, subtracted from what the probe measures under it
        self.base_rtt_ms = probe.round_trip_ms(self.probe_port, n=3, timeout=0.5, **self.probe_where) or 0.0
        if backend == "netem":
            self._shape = tcshaper.get_shaper().add(
                self.ports, tcshaper.netem_leaf_args(self.ms, self.jitter_ms), direction=self.direction,
                proto=self.proto)
        else:
            queue_num = self._start_delayer()
            try:
                self._rules = ipt.get_rule_manager(self.netns).add(ipt.nfqueue_specs(
                    self.ports, queue_num, direction=self.direction, proto=self.proto,
                    tag=f"sc-delay-{id(self):x}", owner=self.owner_match))
            except Exception:
                self._stop_delayer()
                raise

    def _start_delayer(self) -> int:
        """Start the NFQUEUE delayer on a free queue; the queue's number."""
        last_err = ""
        for _ in range(8):  # a queue number bound by another process fails to bind: take the next
            q = next(_QUEUE_NUMS) % 65536
            # Run the file itself, not ``-m``: importing the package would cost ~0.2 s per inject.
            # in the fault's namespace: a netfilter queue belongs to the namespace whose rule feeds it
            argv = [*ipt.nsenter(self.netns), sys.executable, nfq_delayer.__file__, "--queue", str(q),
                    "--delay-ms", str(self.ms), "--jitter-ms", str(self.jitter_ms),
                    "--parent-pid", str(os.getpid())]
            if self.reorder:
                argv.append("--reorder")
            if self.seed is not None:
                argv += ["--seed", str(self.seed)]
            # its errors go to a log file of its own (the fault has no run directory), removed at heal
            log = Path(tempfile.gettempdir()) / f"streamchaos-nfq-{os.getpid()}-{q}.log"
            current().reaper.register_path(log)  # removed with pytest even if it is killed
            proc = ManagedProcess(argv, env=os.environ, log_path=log, name=f"nfq-delayer-{q}", pipe=True)
            line = self._await_ready(proc)
            if line == f"ready {q}":
                self._proc, self.queue_num = proc, q
                return q
            proc.kill()
            err = proc.log_since_start().split("\n", 1)[-1]  # after the start line
            log.unlink(missing_ok=True)
            current().reaper.unregister_path(log)
            last_err = (err.strip().splitlines() or [line or "no output"])[-1]
            if "Failed to create queue" not in err:
                break
        raise NetFaultError(f"the NFQUEUE delayer did not start: {last_err}. Check `python -m "
                            f"pytest_streamchaos.netem.nfq_delayer --queue 1 --delay-ms 1` by hand; fix: "
                            f"{network_features().missing('nfqueue', 'NFQUEUE delay') or 'see its error above'}")

    def _await_ready(self, proc: ManagedProcess) -> str:
        """The delayer's first line ('' when it exited first), or why none came in time."""
        out = proc.stdout

        def answered() -> tuple[str] | None:  # a 1-tuple: '' (it exited) is an answer too
            if select.select([out], [], [], 0.2)[0]:
                return (out.readline().strip(),)
            return ("",) if not proc.alive else None

        try:  # select itself waits between the checks
            line = poll(answered, self.READY_TIMEOUT, lambda _: TimeoutError(), interval=0)
        except TimeoutError:
            return f"timed out after {self.READY_TIMEOUT}s waiting for 'ready' (pid {proc.pid} alive)"
        assert line is not None  # poll returns only an answer
        return line[0]

    def _stop_delayer(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate(timeout=10)  # SIGTERM flushes (accepts) every held packet, then it exits
        out = proc.stdout.read()
        err = proc.log_since_start().split("\n", 1)[-1]
        proc.log_path.unlink(missing_ok=True)
        current().reaper.unregister_path(proc.log_path)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        self.stats = json.loads(lines[-1]) if lines else {"error": err.strip()[-500:], "rc": proc.returncode}

    def stopped_acting(self) -> str | None:
        if not self.active:
            return None
        proc = self._proc
        if proc is not None and not proc.alive:
            return (f"the NFQUEUE delayer (pid {proc.pid}) exited with code {proc.returncode}: its rule's "
                    "--queue-bypass lets every packet through undelayed")
        if self._rules is not None:
            return ipt.get_rule_manager(self.netns).missing(self._rules)
        return tcshaper.get_shaper().missing(self._shape) if self._shape is not None else None

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        super().measure()
        if self.proto != "tcp":
            return {}
        # a SYN and its answer: delayed once or twice; in a node's namespace only what arrives from the
        # peer passes the rules (INPUT), so once
        legs = 2 if self.direction == "both" and self.netns is None else 1
        rtt_s = legs * (self.ms + self.jitter_ms) / 1000.0
        if budget_s is not None and 1.5 * rtt_s > budget_s:
            # waiting would hold the fault past its heal; liveness and rules were checked above
            return {"probe_skipped": f"a probe round trip (~{rtt_s:g}s) does not fit in the fault's {budget_s:g}s"}
        timeout = rtt_s * 2 + 2.0
        rtt = probe.round_trip_ms(self.probe_port, n=3, timeout=timeout, **self.probe_where)
        if rtt is None:
            raise NetFaultError(f"{self!r}: no connect to port {self.probe_port} was answered within {timeout:g}s")
        added = max(0.0, rtt - self.base_rtt_ms) / legs
        # below ~5 ms the loopback's own noise is of the same size: report, do not judge
        if self.ms >= 5 and added < self.ms / 2:
            raise NetFaultError(f"{self!r} is not in effect: a connect to port {self.probe_port} took {rtt:.1f} ms "
                                f"(before the fault {self.base_rtt_ms:.1f} ms), {added:.1f} ms added per packet "
                                f"of the {self.ms:g} ms stated")
        return {"measured_delay_ms": round(added, 1), "probe_rtt_ms": round(rtt, 1)}

    def _heal(self) -> None:
        if self._rules is not None:  # no new packets to the queue first, then release the held ones
            ipt.get_rule_manager(self.netns).remove(self._rules)
            self._rules = None
        self._stop_delayer()
        if self._shape is not None:
            tcshaper.get_shaper().remove(self._shape)
            self._shape = None

    def __repr__(self) -> str:
        return (f"NetworkDelay(ports={list(self.ports)}, ms={self.ms:g}, jitter_ms={self.jitter_ms:g}, "
                f"direction={self.direction!r})")


class FaultGroup(_Healing):
    """One fault on several nodes at once: the same fault in each node's namespace (the docker
    backend's job side of a link, one container per worker). Injected and healed together."""

    conn_mark = None

    def __init__(self, faults: Sequence[NetworkFault], nodes: list[str], labels: list[str] | None = None) -> None:
        """``nodes``: the node each fault acts on (in order); ``labels``: a name per fault where a node
        holds several (one per peer host), for messages and per-fault measurements."""
        if not faults:
            raise ValueError("a fault group needs at least one fault")
        self.faults, self.labels = list(faults), labels or nodes
        self.nodes = list(dict.fromkeys(nodes))
        self.kind = faults[0].kind

    @property
    def active(self) -> bool:
        return any(f.active for f in self.faults)

    def scope_limit(self) -> str | None:
        return None

    def inject(self) -> None:
        try:
            for f in self.faults:
                f.inject()
        except BaseException:
            self.heal()
            raise

    def heal(self) -> None:
        errors = []
        for f in self.faults:
            try:
                f.heal()
            except Exception as exc:  # heal the others regardless
                errors.append(exc)
        if errors:
            raise errors[0]

    def stopped_acting(self) -> str | None:
        for label, f in zip(self.labels, self.faults, strict=True):
            why = f.stopped_acting()
            if why:
                return f"on {label}: {why}"
        return None

    def measure(self, budget_s: float | None = None) -> dict[str, object]:
        """Each fault's measurement; the first one's values at the top level (``measured_*``)."""
        per_node = {label: f.measure(budget_s) for label, f in zip(self.labels, self.faults, strict=True)}
        return {**per_node[self.labels[0]], "per_node": per_node}

    def __repr__(self) -> str:
        return f"FaultGroup({self.faults[0]!r} on {self.nodes})"


#: what a network fault action holds: one fault, or the same fault on several nodes
LinkFault = NetworkFault | FaultGroup
