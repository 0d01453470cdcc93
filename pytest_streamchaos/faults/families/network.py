"""The network family: a link between components delayed, lossy, cut or throttled -- the job's
connections only (``only_marked``), so the harness's own clients keep their view.

A link is named by its ``target``: ``kafka`` (the job's links to every broker), ``broker-<i>``,
``master``, ``worker-<i>``, ``driver``, ``zookeeper``. The job's Kafka links go through the stack's
Toxiproxy proxies, where the faults are toxics; elsewhere they are iptables / NFQUEUE / tc rules on the
link's ports, and on the docker backend they act in the namespaces of the job's nodes. Each kind is one
operation of a link (:mod:`pytest_streamchaos.netem.links`: ``slow``, ``drop``, ``partition``,
``throttle``), asked of the link's proxies where they have it and of the host's rules otherwise.

The host's rules need a cluster whose job's links they see (:class:`~pytest_streamchaos.stack.capabilities.HostLinks`):
Kubernetes' pods talk over the cluster's bridge and reach Kafka through a relay that is not the job's, so there only
the Toxiproxy toxics on the job's Kafka links (``kafka``, ``broker-<i>``: delay, partition, bandwidth) are had; the
rest is refused when the run is planned, in client and cluster mode alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pytest_streamchaos.analysis.spelling import did_you_mean
from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.kind import FaultKind, LinkDelay
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError, number
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.netem import rules as net
from pytest_streamchaos.netem.features import NetworkFeatures, network_features
from pytest_streamchaos.netem.links import Drops, HostLink, Partitions, Slows, Throttles, ToxiproxyLink, able
from pytest_streamchaos.netem.toxics import ToxicFault
from pytest_streamchaos.stack.base import Endpoint, LinkProxy
from pytest_streamchaos.stack.capabilities import ActiveMaster, HostLinks, KafkaLinks, refusal

NET_TARGETS = "a component or a link: 'kafka', 'broker-<i>', 'master', 'worker-<i>', 'driver'"
#: docker backend: faults act in the job's nodes' namespaces; ``on`` picks one of them
ON_NODE = "docker backend: the one node whose side of the link is hit, e.g. 'worker-0' (default: every worker)"
#: what a link's target may start with (``broker-<i>``, ``worker-<i>``: an index after the dash)
LINK_BASES = ("kafka", "broker", "master", "worker", "driver", "zookeeper")


def job_proxies(ctx: FaultContext, target: str) -> list[LinkProxy]:
    """The Toxiproxy proxies of the job's links to ``target`` (``kafka``: every broker and the bootstrap
    port; ``broker-<id>``: that broker's), [] when the stack has none."""
    base, _, idx = target.partition("-")
    if base not in ("kafka", "broker") or ctx.kafka is None:
        return []
    if base == "broker" and int(idx or 0) not in ctx.kafka.broker_ids:
        raise ValueError(f"target {target!r}: brokers are {[f'broker-{b}' for b in ctx.kafka.broker_ids]}")
    return list(ctx.brokers(KafkaLinks).job_links(None if base == "kafka" else [int(idx)]))


def link_endpoints(ctx: FaultContext, target: str) -> list[Endpoint]:
    """The endpoints (and so the ports) a network fault on ``target`` acts on."""
    base, _, idx = target.partition("-")
    if base in ("kafka", "broker"):  # the job's client links only: replication and the quorum are not the job's
        proxies = job_proxies(ctx, target)
        if proxies:  # the job reaches the brokers through these: their listen ports are its links
            return [Endpoint(p.name, "broker", "127.0.0.1", {"kafka": p.listen_port}) for p in proxies]
        brokers = ctx.brokers(KafkaLinks).endpoints()
        eps = [Endpoint(e.name, e.role, e.host, {"kafka": e.ports["kafka"]}) for e in brokers
               if base == "kafka" or e.name == target]
        if not eps:
            raise ValueError(f"target {target!r}: brokers are {[e.name for e in brokers]}")
        return eps
    if base == "master":
        return [ctx.spark(ActiveMaster).active_master().endpoint()]
    if base == "worker":
        i = int(idx or 0)
        return [ctx.cluster.workers[i].endpoint()]
    if base == "zookeeper":
        return [e for e in ctx.cluster.endpoints() if e.role == "zookeeper"]
    if base == "driver":
        conf = ctx.job.effective_conf
        return [Endpoint("driver", "driver", host=ctx.cluster.driver_host, ports={
            "rpc": int(conf["spark.driver.port"]), "blockmanager": int(conf["spark.driver.blockManager.port"])})]
    raise ValueError(f"unknown network target {target!r}")


def _on_kafka_link(spec: FaultSpec) -> bool:
    return str(spec.target or "kafka").split("-")[0] in ("kafka", "broker")


class _OnALink(FaultKind[net.LinkFault]):
    """A fault on a link's ports: what the four network kinds share. A kind says which operation of a link
    it is (:attr:`operation`, :meth:`act`) and what the host's rules need; the job's Kafka proxies carry it
    when they have the operation (Toxiproxy has no loss toxic: a loss is iptables on their ports)."""
    #: what the host's rule needs of the host (:meth:`NetworkFeatures.missing`)
    need: ClassVar[str]
    #: the operation of a link the kind is (one of :mod:`pytest_streamchaos.netem.links`' protocols)
    operation: ClassVar[type]

    @classmethod
    def check_target(cls, target: str | None) -> str | None:
        target = target or "kafka"
        base, _, idx = target.partition("-")
        if base not in LINK_BASES or (idx and not idx.isdigit()):
            raise FaultSpecError(f"@{cls.name}: target={target!r} is not a link{did_you_mean(base, LINK_BASES)}; use "
                                 f"{NET_TARGETS}")
        return target

    @classmethod
    def needs_host_network(cls, spec: FaultSpec) -> bool:
        """Every network fault but those on the job's Kafka links, which the stack's Toxiproxy carries."""
        return not _on_kafka_link(spec)

    @classmethod
    def capabilities(cls, spec: FaultSpec) -> tuple[type, ...]:
        """The job's Kafka links (their proxies or the brokers' ports), or the leading master's; and, for a fault
        that is the host's rules (:meth:`needs_host_network`), a cluster whose job's links those rules see."""
        if _on_kafka_link(spec):
            caps: tuple[type, ...] = (KafkaLinks,)
        else:
            caps = (ActiveMaster,) if str(spec.target).startswith("master") else ()
        return (HostLinks, *caps) if cls.needs_host_network(spec) else caps

    @classmethod
    def host_missing(cls, caps: NetworkFeatures) -> str | None:
        """Why a host with ``caps`` cannot run this kind's rule (the fix named), or None."""
        return caps.missing(cls.need, cls.name)

    @classmethod
    def unavailable(cls, spec: FaultSpec) -> str | None:
        return cls.host_missing(network_features()) if cls.needs_host_network(spec) else None

    @classmethod
    def reaches_cluster(cls, spec: FaultSpec) -> bool:
        return str(spec.target or "").startswith(("worker", "master"))

    @classmethod
    def act(cls, link: object, params: dict[str, Any]) -> net.NetworkFault:
        """The fault as ``link``'s :attr:`operation` (not injected yet)."""
        raise NotImplementedError

    @classmethod
    def link(cls, proxies: Sequence[LinkProxy], ports: frozenset[int]) -> object:
        """The job's proxies of the link where there are some and they can do the kind, else the host's rules
        on ``ports`` (the proxies' own ports, which only the job's clients use, when there are proxies)."""
        through = ToxiproxyLink(proxies)
        return through if proxies and isinstance(through, cls.operation) else HostLink(ports)

    def target(self, planned: PlannedFault) -> str:
        return str(planned.spec.target)

    def build(self, planned: PlannedFault) -> net.LinkFault:
        s = planned.spec
        eps = link_endpoints(self.ctx, str(s.target))
        # only the ports peers connect to (not web UIs): that is the link the fault is about
        ports = net.ports_of(*eps, names=[n for e in eps for n in e.ports if n != "webui"])
        sides = self.ctx.cluster.link_sides() if self.ctx.cluster is not None else []
        if sides:
            return self._in_namespaces(planned, sides, eps, ports)
        link = self.link(job_proxies(self.ctx, str(s.target)), ports)
        cluster = self.ctx.cluster
        if isinstance(link, HostLink) and cluster is not None and not isinstance(cluster, HostLinks):
            # a Kafka link without Toxiproxy's proxies (none could be had): planning could not tell
            raise net.NetFaultError(refusal(f"@{self.name}(target={s.target!r}) without Toxiproxy",
                                            f"the {cluster.manager} Spark cluster ({type(cluster).__name__})",
                                            HostLinks))
        fault = self.act(link, s.params)
        # the job's connections only: the generator and the collector use the same broker ports and
        # must keep seeing the broker while the job cannot (docs/architecture.md, the observer)
        mark = self.ctx.link_scope.job_mark()
        if mark is None or fault.scope_limit():
            return fault
        return fault.only_marked(*mark)

    def _in_namespaces(self, planned: PlannedFault, sides: list[tuple[str, str]], eps: list[Endpoint],
                       ports: frozenset[int]) -> net.FaultGroup:
        """The fault in the namespace of each node on the job's side of the link (``on``: one node
        only), on the packets each peer host sends into it (a link to several hosts, such as the
        brokers, is one fault per host with that host's ports): each node loses its side of the
        link, as on a network."""
        s = planned.spec
        on = s.params.get("on")
        chosen = [(n, ns) for n, ns in sides if on is None or n == on]
        if not chosen:
            raise ValueError(f"on={on!r}: the job's nodes are {[n for n, _ in sides]}")
        hosts = sorted({e.host for e in eps})
        faults, nodes, labels = [], [], []
        for node, ns in chosen:
            for host in hosts:
                host_ports = net.ports_of(*[e for e in eps if e.host == host]) & ports
                faults.append(self.act(HostLink(host_ports), s.params).in_namespace(ns, host))
                nodes.append(node)
                labels.append(node if len(hosts) == 1 else f"{node}<-{host}")
        return net.FaultGroup(faults, nodes, labels)

    def inject(self, planned: PlannedFault) -> net.LinkFault:
        fault = self.build(planned)
        fault.inject()
        return fault

    def confirm(self, planned: PlannedFault, fault: net.LinkFault) -> dict[str, object]:
        """Probe the link under the fault: what it measured (``measured_delay_ms``,
        ``measured_loss``) goes into the ``fault_injected`` event; not in effect raises. The probe
        gets half the fault's duration, so that it never holds the fault past its heal. ``scope``
        says whose connections the fault acts on: ``job`` (the harness's own clients are spared) or
        ``all`` (the observer shares the fault: no job group on this host, with the reason)."""
        measured = fault.measure(None if planned.heal_after is None else planned.heal_after / 2)
        if isinstance(fault, net.FaultGroup):
            return {**measured, "scope": "namespace", "nodes": fault.nodes}
        if isinstance(fault, ToxicFault):  # only the job's clients connect through the proxies
            return {**measured, "scope": "job", "mechanism": "toxiproxy"}
        if fault.conn_mark is not None:
            return {**measured, "scope": "job"}
        scope = self.ctx.link_scope
        why = fault.scope_limit() if scope.job_mark() is not None else scope.unscoped_reason()
        return {**measured, "scope": "all", "scope_reason": why}

    def check(self, planned: PlannedFault, fault: net.LinkFault) -> str | None:
        """While active: why the fault stopped acting (delayer died, rule gone), or None."""
        return fault.stopped_acting()

    def heal(self, planned: PlannedFault, fault: net.LinkFault) -> None:
        fault.heal()


class NetworkDelay(_OnALink):
    name = "network_delay"
    doc = "delay packets on a link"
    args = {"ms": "added one-way delay in ms", "jitter_ms": "uniform jitter in ms (default 0)",
            "target": NET_TARGETS, "on": ON_NODE,
            "above_timeout": "True: PD>TO (peer declared dead); False: PD<TO (only slower)"}
    required = ("ms",)
    need = "delay"
    operation = Slows

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        number(cls.name, "ms", params["ms"], strict=True)
        number(cls.name, "jitter_ms", params.setdefault("jitter_ms", 0))
        above = params.get("above_timeout")
        if above is not None and not isinstance(above, bool):
            raise FaultSpecError(f"@{cls.name}: above_timeout={above!r} must be True or False")

    @classmethod
    def link_delay(cls, spec: FaultSpec) -> LinkDelay:
        return LinkDelay(str(spec.target), float(spec.params["ms"]), spec.params.get("above_timeout"))

    @classmethod
    def act(cls, link: object, params: dict[str, Any]) -> net.NetworkFault:
        # every packet of the link, either way, is held ``ms`` (the links' direction is both): a heartbeat
        # and its reply are both late, as with netem on both hosts of a link (PGVal's packet delay)
        return able(link, Slows).slow(params["ms"], params.get("jitter_ms", 0))


class PacketLoss(_OnALink):
    name = "packet_loss"
    doc = "drop a percentage of packets on a link"
    args = {"percent": "0 < percent <= 100", "target": NET_TARGETS, "on": ON_NODE}
    required = ("percent",)
    need = "loss"
    operation = Drops

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        pct = number(cls.name, "percent", params["percent"], strict=True)
        if pct > 100:
            raise FaultSpecError(f"@{cls.name}: percent={pct!r} must be at most 100")

    @classmethod
    def needs_host_network(cls, spec: FaultSpec) -> bool:
        return True  # on the job's Kafka links too: iptables on the proxies' ports

    @classmethod
    def act(cls, link: object, params: dict[str, Any]) -> net.NetworkFault:
        return able(link, Drops).drop(params["percent"])


class NetworkPartition(_OnALink):
    name = "network_partition"
    doc = "cut a link (both directions)"
    args = {"target": NET_TARGETS, "on": ON_NODE}
    need = "drop"
    operation = Partitions

    @classmethod
    def act(cls, link: object, params: dict[str, Any]) -> net.NetworkFault:
        return able(link, Partitions).partition()  # on the proxies: the blackhole, silent as a DROP


class BandwidthLimit(_OnALink):
    name = "bandwidth_limit"
    doc = "limit a link's bandwidth"
    args = {"kbit": "kilobits per second", "target": NET_TARGETS}
    required = ("kbit",)
    need = "shaping"
    operation = Throttles

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        number(cls.name, "kbit", params["kbit"], strict=True)

    @classmethod
    def act(cls, link: object, params: dict[str, Any]) -> net.NetworkFault:
        return able(link, Throttles).throttle(params["kbit"])


KINDS = (NetworkDelay, PacketLoss, NetworkPartition, BandwidthLimit)
