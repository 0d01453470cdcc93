"""The ``local`` Kafka backend: a real Apache Kafka cluster of KRaft nodes, one JVM each, on 127.0.0.1.

Each node runs ``kafka.Kafka`` as broker and controller (KRaft combined mode, static quorum) from the
jars resolved once per machine (:mod:`.artifacts`: Apache Kafka and a log4j2 backend), in its own
process group and in the job's cgroup (child group ``broker-<id>``: the system under test, and a cut
between brokers can tell one node's connections from the others'). Four listeners per node:

- ``CLIENT``: the harness (generator, collector, admin). No fault aimed at the job's links touches it.
- ``JOB``: the job's clients. Advertised at the node's proxy when the stack has one
  (:attr:`LocalKafkaCluster.job_proxies`), so network faults on the job's Kafka links act there.
- ``REPLICATION``: between brokers (``inter.broker.listener.name``).
- ``CONTROLLER``: the KRaft quorum.

The default cluster is 3 nodes, replication factor 3, ``min.insync.replicas=2``: a broker fault is a
real leader election. One node (``brokers=1``) is a lighter stack with RF 1. Failure detection is
shortened for chaos runs (a killed broker is fenced after :data:`~.kafka_kraft.SESSION_TIMEOUT_MS`); the
values in force are in :attr:`LocalKafkaCluster.effective_conf`.

The cluster is assembled from its parts: the nodes' configuration and storage format
(:mod:`.kafka_kraft`), the faults on them (:mod:`.kafka_faults`); this module holds the start-up,
readiness, topics, leader / controller lookup, the job's links and healing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack import artifacts
from pytest_streamchaos.stack.base import KafkaCluster, StackError
from pytest_streamchaos.stack.environment import find_java
from pytest_streamchaos.stack.host import current
from pytest_streamchaos.stack.kafka_admin import KafkaAdmin, PartitionState, client_conf
from pytest_streamchaos.stack.kafka_faults import KafkaNodeFaults
from pytest_streamchaos.stack.kafka_kraft import LISTENERS, KafkaNode, KRaftConfig
from pytest_streamchaos.stack.kafka_links import JobLinks
from pytest_streamchaos.stack.ports import HOST
from pytest_streamchaos.stack.process import ManagedProcess, terminate_all

KAFKA_MAIN = "kafka.Kafka"
READY_LINE = "Kafka Server started"


class LocalKafkaCluster(KafkaNodeFaults, KRaftConfig, KafkaCluster):
    """N KRaft nodes (ids 1..N) on 127.0.0.1 (see the module docstring)."""

    def __init__(self, workdir: str | os.PathLike, brokers: int = 3, *, java_home: str = "",
                 start_timeout: float = 90.0, progress: Callable[[str], None] | None = None) -> None:
        if brokers < 1:
            raise StackError(f"brokers={brokers}: a Kafka cluster needs at least 1 broker; "
                             "fix: --chaos-kafka-brokers 1")
        self.workdir = Path(workdir).absolute()
        self.brokers, self.java_home, self.start_timeout = brokers, java_home, start_timeout
        self.progress = progress
        self.replication = min(3, brokers)
        self.min_isr = min(2, brokers)
        self.nodes: list[KafkaNode] = []
        self.broker_ids: list[int] = []
        self.bootstrap_servers = ""
        self.effective_conf: dict[str, str] = {}
        #: the job's links to the brokers (Toxiproxy proxies), made by :meth:`start`
        self.links = JobLinks(None, "the cluster is not started")
        self.admin = KafkaAdmin("")
        self._jars: list[Path] = []
        self._java = ""
        self._cluster_id = ""
        self._started = False

    # -- start / stop --------------------------------------------------------------------------
    def start(self) -> None:
        """Resolve the jars (once per machine), format every node's storage, start all nodes and wait
        until each is up, every broker registered and a round trip through a replicated topic works.
        On failure everything started is stopped."""
        if self._started:
            return
        self._java = str(find_java(self.java_home)[0])
        self._jars = artifacts.resolve(artifacts.kafka_jars(), self.progress, java=self._java)
        self._plan()
        self._started = True
        try:
            self._start_links()
            self._write_configs()
            self._format()
            for node in self.nodes:
                node.start()
            self._wait_ready(self.nodes, self.start_timeout)
            self._round_trip()
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 1.0) -> None:
        """SIGTERM every node at once, SIGKILL what is left after ``timeout``. Idempotent. (Nodes stopped
        together wait for each other's controlled shutdown for seconds; the session's data is thrown
        away, so a short grace is enough.)"""
        terminate_all([n.process for n in self.nodes if n.process is not None], timeout=timeout)
        self.links.stop()
        self.admin.close()
        self._started = False

    @property
    def job_bootstrap_servers(self) -> str:
        """The job's listeners (their proxies where the stack has them): faults on the job's links act here."""
        return ",".join(f"{h}:{p}" for h, p in (self._job_address(n) for n in self.nodes))

    def _job_address(self, node: KafkaNode) -> tuple[str, int]:
        proxy = self.links.nodes.get(node.node_id)
        return (HOST, proxy.listen_port) if proxy is not None else (node.host, node.ports["job"])

    def _job_upstream(self, node: KafkaNode) -> str:
        return f"{node.host}:{node.ports['job']}"

    @property
    def running(self) -> bool:
        return self._started and all(n.alive for n in self.nodes)

    def _plan(self) -> None:
        """Ports, directories and the configuration of every node."""
        for sub in ("logs", "conf", "data", "tmp"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        (self.workdir / "conf" / "log4j2.properties").write_text(read_fixture("kafka", "log4j2.properties"))
        self.broker_ids = list(range(1, self.brokers + 1))
        self.nodes = []
        for nid in self.broker_ids:
            ports = {name.lower(): current().ports.free() for name in LISTENERS}
            data = self.workdir / "data" / f"broker-{nid}"
            node = KafkaNode(nid, ports, data, lambda nid=nid: self._launch_node(nid))
            node.host = self._address(node.name)
            self.nodes.append(node)
        self.bootstrap_servers = ",".join(f"{n.host}:{n.ports['client']}" for n in self.nodes)
        self.admin = KafkaAdmin(self.bootstrap_servers)
        self.effective_conf = self._shared_conf()

    def _start_links(self) -> None:
        """The job's links: a Toxiproxy proxy per node, its JOB listener advertised there (:mod:`.kafka_links`)."""
        self.links = JobLinks.start(self.workdir / "logs", self.progress)
        if self.links.available:
            for node in self.nodes:
                self.links.add_node(node.node_id, self._job_upstream(node))

    # -- what a backend changes: where a node lives and how it is started -------------------------
    def _address(self, name: str) -> str:
        """The address node ``name`` binds and is reached at."""
        return HOST

    def _launch_node(self, nid: int) -> ManagedProcess:
        name = f"broker-{nid}"
        self.node_mark(nid)  # before it opens any connection: the cut between brokers needs them marked
        argv = self._java_argv(KAFKA_MAIN, str(self.workdir / "conf" / f"{name}.properties"))
        return ManagedProcess(argv, env=self._env(), log_path=self.workdir / "logs" / f"{name}.log",
                              cwd=self.workdir, name=name, job=True, subgroup=name)

    # -- readiness -----------------------------------------------------------------------------
    def _wait_ready(self, nodes: list[KafkaNode], timeout: float) -> None:
        """Every node of ``nodes`` logged its start and every broker of the cluster is registered; a
        node that exits fails the wait at once, with its log."""
        def ready() -> bool:
            for n in nodes:
                if not n.alive:
                    raise StackError(self._died(n))
            if not all(READY_LINE in n.process.log_since_start() for n in nodes if n.process is not None):
                return False
            try:
                return self.admin.brokers(timeout=2.0) == self.broker_ids
            except Exception:  # the first metadata request may find no broker listening yet
                return False

        poll(ready, timeout, interval=0.1, on_timeout=lambda _: StackError(
            f"the Kafka cluster ({self.brokers} brokers) did not come up within {timeout:g}s: "
            + "; ".join(f"{n.name}: {'started' if READY_LINE in n.process.log_since_start() else 'not started'} "
                        f"(log {n.process.log_path})" for n in nodes if n.process is not None)
            + f"\n{nodes[0].tail_log(15)}\nfix: raise --chaos-start-timeout on a busy machine"))

    def _died(self, n: KafkaNode) -> str:
        assert n.process is not None
        return (f"Kafka {n.name} exited with code {n.process.returncode} during start-up (log {n.process.log_path}):\n"
                f"{n.tail_log(25)}\nfix: see the log's last error (a port taken, disk full, the wrong Java)")

    def _round_trip(self) -> None:
        """Produce to and consume from a replicated topic (brokers registered do not mean the
        cluster serves clients yet), then delete it."""
        from confluent_kafka import Consumer, Producer

        topic = f"streamchaos-ready-{uuid.uuid4().hex[:8]}"
        self.create_topic(topic, partitions=1)
        producer = Producer(client_conf(self.bootstrap_servers, acks="all"))
        producer.produce(topic, b"ready")
        if producer.flush(self.start_timeout) != 0:
            raise StackError(f"the Kafka cluster did not acknowledge a record within {self.start_timeout:g}s")
        consumer = Consumer(client_conf(self.bootstrap_servers, **{"group.id": topic, "enable.auto.commit": False}))
        try:
            from confluent_kafka import TopicPartition

            consumer.assign([TopicPartition(topic, 0, 0)])
            poll(lambda: (m := consumer.poll(0.2)) is not None and m.error() is None, self.start_timeout,
                 interval=0.0, on_timeout=lambda _: StackError("the Kafka cluster did not hand back a record it "
                                                               f"acknowledged within {self.start_timeout:g}s"))
        finally:
            consumer.close()
        self.delete_topic(topic)

    # -- topics ----------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, replication: int | None = None,
                     config: dict[str, str] | None = None) -> str:
        """Create ``name`` with exactly ``partitions`` partitions (replication: the cluster's, 3 by
        default); an existing topic of that name is deleted and created anew. Returns the name once
        every partition has a leader and a full ISR."""
        self.admin.create_topic(name, partitions, replication or self.replication, config)
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
        states = [s for n in self.nodes if n.alive and not n.paused and (s := n.quorum_state()) is not None]
        best = max(states, key=lambda s: s.get("leaderEpoch", -1), default=None)
        leader = None if best is None else best.get("leaderId", -1)
        return leader if leader is not None and leader >= 0 else None

    def job_links(self, broker_ids: list[int] | None = None) -> list[Any]:
        """The Toxiproxy proxies of the job's links to these brokers (all, bootstrap ones included, when
        None); [] when the stack has none (faults then act on the JOB listeners' ports)."""
        return self.links.proxies(broker_ids)

    def listen(self, port: int) -> None:
        """Also answer the job's clients on ``127.0.0.1:port`` (a job that hard-codes ``localhost:9092``):
        a bootstrap proxy to a live broker; the metadata then leads the client to every broker's proxy."""
        live = [n for n in self.nodes if n.alive] or self.nodes
        self.links.listen(port, self._job_upstream(live[0]))

    def unlisten(self, port: int) -> None:
        self.links.unlisten(port)

    def heal(self, timeout: float | None = None) -> None:
        """Every broker running and registered, leadership back on the preferred replicas, every
        partition's ISR full."""
        timeout = timeout or self.start_timeout
        if not self._started:
            self.start()
            return
        for n in self.nodes:
            if n.paused:
                self.resume_broker(n.node_id)
        self.links.reset()
        dead = [n for n in self.nodes if not n.alive]
        for n in dead:
            n.start()
        if dead:
            self._wait_ready(dead, timeout)
        self._await_full_isr(timeout)
        self._await_preferred_leaders(timeout)

    def _await_full_isr(self, timeout: float) -> None:
        def full() -> bool:
            md = self.admin.metadata()
            return all(len(pm.isrs) == len(pm.replicas) and pm.leader >= 0
                       for t in md.topics.values() for pm in t.partitions.values())

        poll(full, timeout, interval=0.2, on_timeout=lambda _: StackError(
            f"the Kafka cluster did not heal within {timeout:g}s: some partitions still miss an in-sync replica"))

    def _await_preferred_leaders(self, timeout: float) -> None:
        # One election request is not enough: the controller refuses a preferred replica it does not
        # yet count in sync (seen: a partition still led by broker 3 after a heal), so ask again until
        # the metadata shows every partition led by its first replica.
        def preferred() -> bool:
            md = self.admin.metadata()
            off = any(pm.replicas and pm.leader != pm.replicas[0]
                      for t in md.topics.values() for pm in t.partitions.values())
            if off:
                self.admin.elect_preferred_leaders()
            return not off

        poll(preferred, timeout, interval=0.5, on_timeout=lambda _: StackError(
            f"the Kafka cluster did not heal within {timeout:g}s: some partitions are not led by their "
            "preferred replica"))

    def __repr__(self) -> str:
        state = "running" if self._started else "stopped"
        return f"<LocalKafkaCluster {self.brokers} brokers {self.bootstrap_servers or '-'} {state}>"
