"""A real Apache Kafka cluster of KRaft nodes on any placement, one JVM each.

Each node runs ``kafka.Kafka`` as broker and controller (KRaft combined mode, static quorum) from the
jars resolved once per machine (:mod:`pytest_streamchaos.machine.artifacts`: Apache Kafka and a log4j2
backend). Four listeners per node:

- ``CLIENT``: the harness (generator, collector, admin). No fault aimed at the job's links touches it.
- ``JOB``: the job's clients. Advertised at the node's proxy when the stack has one
  (:mod:`.links`, Toxiproxy: the local placement), so network faults on the job's Kafka links act there.
- ``REPLICATION``: between brokers (``inter.broker.listener.name``).
- ``CONTROLLER``: the KRaft quorum.

The default cluster is 3 nodes, replication factor 3, ``min.insync.replicas=2``: a broker fault is a
real leader election. One node (``brokers=1``) is a lighter stack with RF 1. Failure detection is
shortened for chaos runs (a killed broker is fenced after :data:`~.plan.SESSION_TIMEOUT_MS`); the
values in force are in :attr:`KRaftCluster.effective_conf`.

Composed of collaborators: the layout, configuration and format (:class:`~.plan.KRaftPlan`), the waits
(:class:`~.readiness.KafkaReadiness`), the faults on the brokers (:class:`~.control.BrokerControl`), the
harness's admin client (:class:`~.admin.KafkaAdmin`) and the job's links (:class:`~.links.JobLinks`);
where each node runs is the :class:`~..placement.Placement`'s. This class starts, heals and stops the
whole, keeps the topics and answers the stack interface (:class:`~..base.KafkaCluster`) and every Kafka
capability (:mod:`..capabilities`) by delegating.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.environment import find_java
from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, KafkaCluster, LinkProxy, LinkScope, StackError
from pytest_streamchaos.stack.kraft.admin import KafkaAdmin, PartitionState
from pytest_streamchaos.stack.kraft.control import BrokerControl, job_upstream
from pytest_streamchaos.stack.kraft.links import JobLinks
from pytest_streamchaos.stack.kraft.operations import TopicAdministration, TopicOperations
from pytest_streamchaos.stack.kraft.plan import KafkaNode, KRaftPlan
from pytest_streamchaos.stack.kraft.readiness import KafkaReadiness
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.process import terminate_all


class KRaftCluster(TopicAdministration, KafkaCluster):
    """N KRaft nodes (ids 1..N) on ``placement`` (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, brokers: int = 3, *, placement: Placement, java_home: str = "",
                 start_timeout: float = 90.0, progress: Callable[[str], None] | None = None,
                 build_links: bool = True) -> None:
        """``build_links``: build Toxiproxy for the job's links if it is not built yet (False: the job's links
        go direct then, :mod:`.links`; the session's tests fault none of them)."""
        if brokers < 1:
            raise StackError(f"brokers={brokers}: a Kafka cluster needs at least 1 broker; "
                             "fix: --chaos-kafka-brokers 1")
        self.workdir = Path(workdir).absolute()
        self.placement, self.java_home, self.progress = placement, java_home, progress
        self.plan = KRaftPlan(self.workdir, placement, brokers=brokers, start_timeout=start_timeout)
        #: the job's links to the brokers (Toxiproxy proxies), made by :meth:`start`
        self.links = JobLinks(None, "the cluster is not started")
        self.admin = KafkaAdmin("")
        self.readiness = KafkaReadiness(self.plan, self.admin)
        self.control = BrokerControl(self.plan, self.readiness, self.links)
        #: Kafka's own operations on the topics (the topic faults)
        self.topic_ops = TopicOperations(self.admin, lambda: str(find_java(self.java_home)[0]), progress)
        self.reassign_dir = self.workdir / "reassignments"
        self.build_links = build_links
        self._started = False

    def __repr__(self) -> str:
        state = "running" if self._started else "stopped"
        return f"<{type(self).__name__} {self.plan.brokers} brokers {self.bootstrap_servers or '-'} {state}>"

    # -- shape -------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self.plan.bootstrap_servers

    @property
    def broker_ids(self) -> list[int]:
        return list(self.plan.broker_ids)

    @property
    def effective_conf(self) -> dict[str, str]:
        return self.plan.effective_conf

    @property
    def nodes(self) -> list[KafkaNode]:
        return list(self.plan.nodes)

    @property
    def replication(self) -> int:
        """The replication factor of every topic it creates (3, or fewer with fewer nodes)."""
        return self.plan.replication

    @property
    def min_isr(self) -> int:
        """``min.insync.replicas`` (2, or 1 with one node)."""
        return self.plan.min_isr

    @property
    def start_timeout(self) -> float:
        return self.plan.start_timeout

    @property
    def link_scope(self) -> LinkScope:
        return self.placement.link_scope

    @property
    def running(self) -> bool:
        return self._started and all(n.alive for n in self.plan.nodes)

    def node(self, broker_id: int) -> KafkaNode:
        return self.plan.node(broker_id)

    @property
    def job_bootstrap_servers(self) -> str:
        """The job's listeners (their proxies where the stack has them): faults on the job's links act here."""
        return ",".join(f"{h}:{p}" for h, p in (self._job_address(n) for n in self.plan.nodes))

    def _job_address(self, node: KafkaNode) -> tuple[str, int]:
        proxy = self.links.nodes.get(node.node_id)
        return (HOST, proxy.listen_port) if proxy is not None else (node.host, node.ports["job"])

    def endpoints(self) -> list[Endpoint]:
        return [n.endpoint() for n in self.plan.nodes]

    # -- start / stop / heal -----------------------------------------------------------------------
    def start(self) -> None:
        """Resolve the jars (once per machine), format every node's storage, start all nodes and wait
        until each is up, every broker registered and a round trip through a replicated topic works.
        On failure everything started is stopped."""
        if self._started:
            return
        java = str(find_java(self.java_home)[0])
        jars = artifacts.resolve(artifacts.kafka_jars(), self.progress, java=java)
        self.placement.prepare()
        self.plan.lay_out(java, jars)
        self.admin.bootstrap_servers = self.plan.bootstrap_servers
        self._started = True
        try:
            self._start_links()
            self.plan.write_configs(self._job_address)
            self.plan.format()
            for node in self.plan.nodes:
                node.start()
            self.readiness.wait_ready(self.plan.nodes, self.start_timeout)
            self.readiness.round_trip(self.start_timeout)
        except BaseException:
            self.stop()
            raise

    def _start_links(self) -> None:
        """The job's links: a Toxiproxy proxy per node, its JOB listener advertised there (:mod:`.links`),
        where the job shares this host's network; none where it does not (the docker backend: network
        faults on the job's Kafka links act in the job's containers' namespaces)."""
        if self.placement.shares_host_network:
            self.links.start_server(self.workdir / "logs", self.progress, self.placement.host, build=self.build_links)
        else:
            self.links.reason = "the docker backend's job links run through the job's containers' namespaces"
        if self.links.available:
            for node in self.plan.nodes:
                self.links.add_node(node.node_id, job_upstream(node))

    def stop(self, timeout: float = 1.0) -> None:
        """SIGTERM every node at once, SIGKILL what is left after ``timeout``. Idempotent. (Nodes stopped
        together wait for each other's controlled shutdown for seconds; the session's data is thrown
        away, so a short grace is enough.)"""
        procs = [n.process for n in self.plan.nodes if n.process is not None]
        terminate_all(procs, timeout=timeout)
        self.placement.release(procs)
        self.links.stop()
        self.admin.close()
        self._started = False

    def heal(self, timeout: float | None = None) -> None:
        """Every broker running and registered, leadership back on the preferred replicas, every
        partition's ISR full."""
        timeout = timeout or self.start_timeout
        if not self._started:
            self.start()
            return
        self.links.reset()
        self.control.revive(timeout)
        self.readiness.await_full_isr(timeout)
        self.readiness.await_preferred_leaders(timeout)

    # -- topics ------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, replication: int | None = None,
                     config: dict[str, str] | None = None) -> str:
        """Create ``name`` with exactly ``partitions`` partitions (replication: the cluster's, 3 by
        default); an existing topic of that name is deleted and created anew. Returns the name once
        every partition has a leader and a full ISR."""
        self.admin.create_topic(name, partitions, replication or self.plan.replication, config)
        return name

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topic(name)

    def reset(self) -> None:
        """Delete every topic (not Kafka's internal ones)."""
        for t in self.admin.topics():
            self.admin.delete_topic(t)

    def partition_states(self, topic: str) -> dict[int, PartitionState] | None:
        """Leader, replicas and ISR of every partition of ``topic`` now (None: unknown topic)."""
        return self.admin.partitions(topic)

    def leader_of(self, topic: str, partition: int = 0, timeout: float = 10.0) -> int:
        """The broker leading ``topic``/``partition`` now (waits up to ``timeout`` while it has none)."""
        def leader() -> int:
            state = (self.admin.partitions(topic) or {}).get(partition)
            return state.leader if state is not None and state.leader >= 0 else 0

        return poll(leader, timeout, interval=0.1, on_timeout=lambda _: StackError(
            f"{topic}[{partition}] has no leader after {timeout:g}s (brokers alive: {self.alive_brokers()})"))

    def followers_of(self, topic: str, partition: int = 0) -> list[int]:
        """The in-sync replicas of ``topic``/``partition`` other than its leader."""
        state = (self.admin.partitions(topic) or {}).get(partition)
        return [] if state is None else [b for b in state.isr if b != state.leader]

    def controller_id(self) -> int | None:
        """The active KRaft controller: the leader in the quorum state of the newest epoch a live node
        has seen (None while there is none)."""
        states = [s for n in self.plan.nodes if n.alive and not n.paused and (s := n.quorum_state()) is not None]
        best = max(states, key=lambda s: s.get("leaderEpoch", -1), default=None)
        leader = None if best is None else best.get("leaderId", -1)
        return leader if leader is not None and leader >= 0 else None

    # -- the job's links ---------------------------------------------------------------------------
    def job_links(self, broker_ids: list[int] | None = None) -> list[LinkProxy]:
        """The Toxiproxy proxies of the job's links to these brokers (all, bootstrap ones included, when
        None); [] when the stack has none (faults then act on the JOB listeners' ports)."""
        return list(self.links.proxies(broker_ids))

    def listen(self, port: int) -> None:
        """Also answer the job's clients on ``127.0.0.1:port`` (a job that hard-codes ``localhost:9092``):
        a bootstrap proxy to a live broker; the metadata then leads the client to every broker's proxy.
        Refused where the job does not share this host's network: there ``localhost`` is the job's
        container, out of reach. Failing here, before the job starts, beats a job that waits two minutes
        for a broker it cannot see."""
        if not self.placement.shares_host_network:
            raise StackError(f"kafka port {port}: the docker backend cannot serve a job that hard-codes "
                             f"localhost:{port} (its executors run in containers, where localhost is the container); "
                             "fix: pass the bootstrap servers to the job (e.g. args=['{bootstrap_servers}']), or run "
                             "this test on the local backend (@pytest.mark.chaos(backend='local'))")
        live = [n for n in self.plan.nodes if n.alive] or self.plan.nodes
        self.links.listen(port, job_upstream(live[0]))

    def unlisten(self, port: int) -> None:
        self.links.unlisten(port)

    # -- the stack interface: the brokers (delegated) ----------------------------------------------
    def alive_brokers(self) -> list[int]:
        return [n.node_id for n in self.plan.nodes if n.alive]

    def registered_brokers(self) -> list[int]:
        return self.admin.brokers(timeout=2.0)

    def kill_broker(self, broker_id: int, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        self.control.kill(broker_id, sig, wait)

    def wait_gone(self, broker_id: int, timeout: float = 15.0) -> None:
        self.control.wait_gone(broker_id, timeout)

    def restart_broker(self, broker_id: int, wait: bool = True) -> None:
        self.control.restart(broker_id, wait)

    def pause_broker(self, broker_id: int, wait: bool = True) -> None:
        self.control.pause(broker_id, wait)

    def wait_paused(self, broker_id: int, timeout: float = 5.0) -> None:
        self.control.wait_paused(broker_id, timeout)

    def resume_broker(self, broker_id: int) -> None:
        self.control.resume(broker_id)

    def broker_state(self, broker_id: int) -> str | None:
        return self.control.state(broker_id)

    def peer_ports(self, broker_id: int) -> list[int]:
        return self.control.peer_ports(broker_id)

    def node_mark(self, broker_id: int) -> tuple[int, int] | None:
        """The mark the job group puts on connections the node opens (its child group ``broker-<id>``)."""
        return self.placement.node_mark(self.plan.node(broker_id).name, broker_id)
