"""How a KRaft cluster's nodes are laid out, configured and formatted: the listeners, the shared and
per-node settings, each node's command line, and the storage format before the first start
(:class:`KRaftPlan`); :class:`KafkaNode` is one node's handle. Where each node runs is the placement's."""

from __future__ import annotations

import functools
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_streamchaos.assets import read_fixture
from pytest_streamchaos.machine import commands
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.jvm import jvm_tmp_opts
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.process import Daemon, DaemonProcess

KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
LISTENERS = ("CLIENT", "JOB", "REPLICATION", "CONTROLLER")
#: Broker JVM flags for a 2-core machine shared with Spark: a small heap, the serial GC (no GC threads
#: competing with the job), C1 only (start-up in ~1 s instead of ~3), IPv4 sockets.
BROKER_JAVA_OPTS = ("-Xms64m -Xmx320m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 "
                    "-Xss512k -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true")
#: A broker heartbeats the active controller every HEARTBEAT_MS; one silent for SESSION_TIMEOUT_MS is
#: fenced and leaves every ISR (Kafka's defaults: 2 s / 9 s): a killed leader is replaced in ~4 s.
HEARTBEAT_MS = 500
SESSION_TIMEOUT_MS = 4000
#: A follower that fetches nothing for this long leaves the ISR (default 30 s).
REPLICA_LAG_MS = 5000


class KafkaNode(Daemon):
    """One KRaft node (broker + controller) with its four listener ports and its data directory."""

    role = "broker"

    def __init__(self, node_id: int, ports: dict[str, int], data_dir: Path,
                 start: Callable[[], DaemonProcess]) -> None:
        super().__init__(node_id, start)
        self.node_id = node_id
        self.ports = ports  #: listener name (lower case) -> port
        self.data_dir = data_dir

    def endpoint(self) -> Endpoint:
        """The node as network faults see it: the ports its peers and the job connect to."""
        return Endpoint(self.name, "broker", self.host, {"kafka": self.ports["job"],
                                                         "replication": self.ports["replication"],
                                                         "controller": self.ports["controller"]})

    def quorum_state(self) -> dict[str, Any] | None:
        """The node's view of the KRaft quorum (``leaderId``, ``leaderEpoch``), from its own file."""
        try:
            return json.loads((self.data_dir / "__cluster_metadata-0" / "quorum-state").read_text())
        except (OSError, ValueError):
            return None


class KRaftPlan:
    """The cluster's nodes, their configuration files, command lines and formatted storage: N KRaft nodes
    (ids 1..N) with the placement's addresses; replication 3 and ``min.insync.replicas`` 2 (fewer with fewer
    nodes). :meth:`lay_out` fixes the ports and makes the nodes' handles."""

    def __init__(self, workdir: Path, placement: Placement, *, brokers: int, start_timeout: float) -> None:
        self.workdir, self.placement = workdir, placement
        self.brokers, self.start_timeout = brokers, start_timeout
        self.replication = min(3, brokers)
        self.min_isr = min(2, brokers)
        self.nodes: list[KafkaNode] = []
        self.broker_ids: list[int] = []
        self.bootstrap_servers = ""
        self.effective_conf: dict[str, str] = {}
        self.jars: list[Path] = []
        self.java = ""
        self._cluster_id = ""

    def lay_out(self, java: str, jars: list[Path]) -> None:
        """Ports, directories and every node's handle (nothing started, no file written)."""
        self.java, self.jars = java, jars
        for sub in ("logs", "conf", "data", "tmp"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        (self.workdir / "conf" / "log4j2.properties").write_text(read_fixture("kafka", "log4j2.properties"))
        self.broker_ids = list(range(1, self.brokers + 1))
        self.nodes = []
        for nid in self.broker_ids:
            ports = {name.lower(): self.placement.host.ports.free() for name in LISTENERS}
            node = KafkaNode(nid, ports, self.workdir / "data" / f"broker-{nid}", functools.partial(self._launch, nid))
            node.host = self.placement.address(node.name)
            self.nodes.append(node)
        self.bootstrap_servers = ",".join(f"{n.host}:{n.ports['client']}" for n in self.nodes)
        self.effective_conf = self._shared_conf()

    def node(self, broker_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == broker_id:
                return n
        raise StackError(f"no broker {broker_id}: the brokers are {self.broker_ids}")

    def _launch(self, nid: int) -> DaemonProcess:
        """A node in a child group of the job's (``broker-<id>``), marked before it opens any connection:
        a cut between brokers needs its own connections told apart (:meth:`~..placement.Placement.node_mark`)."""
        name = f"broker-{nid}"
        self.placement.node_mark(name, nid)
        argv = self.java_argv(KAFKA_MAIN, str(self.workdir / "conf" / f"{name}.properties"))
        return self.placement.launch(argv, env=self.env(), name=name, log_path=self.workdir / "logs" / f"{name}.log",
                                     cwd=self.workdir, job=True, subgroup=name)

    def write_configs(self, job_address: Callable[[KafkaNode], tuple[str, int]]) -> None:
        """Every node's properties file; ``job_address``: where the node's JOB listener is advertised."""
        for node in self.nodes:
            conf = self._node_conf(node, job_address(node))
            (self.workdir / "conf" / f"{node.name}.properties").write_text(_properties(conf))

    def _shared_conf(self) -> dict[str, str]:
        voters = ",".join(f"{n.node_id}@{n.host}:{n.ports['controller']}" for n in self.nodes)
        rf, isr = str(self.replication), str(self.min_isr)
        return {
            "process.roles": "broker,controller", "controller.quorum.voters": voters,
            "inter.broker.listener.name": "REPLICATION", "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": ",".join(f"{x}:PLAINTEXT" for x in LISTENERS),
            "default.replication.factor": rf, "min.insync.replicas": isr, "num.partitions": "1",
            "offsets.topic.replication.factor": rf, "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": rf, "transaction.state.log.min.isr": isr,
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": rf, "share.coordinator.state.topic.min.isr": isr,
            "broker.heartbeat.interval.ms": str(HEARTBEAT_MS), "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "replica.lag.time.max.ms": str(REPLICA_LAG_MS), "unclean.leader.election.enable": "false",
            "group.initial.rebalance.delay.ms": "0", "auto.create.topics.enable": "false",
            "num.network.threads": "1", "num.io.threads": "2", "num.replica.fetchers": "1",
            "log.cleaner.enable": "false",
        }

    def _node_conf(self, node: KafkaNode, job: tuple[str, int]) -> dict[str, str]:
        listeners = {x: f"{x}://{node.host}:{node.ports[x.lower()]}" for x in LISTENERS}
        advertised = {**listeners, "JOB": f"JOB://{job[0]}:{job[1]}"}
        return {**self.effective_conf, "node.id": str(node.node_id), "log.dirs": str(node.data_dir),
                "listeners": ",".join(listeners.values()),
                "advertised.listeners": ",".join(advertised[x] for x in LISTENERS if x != "CONTROLLER")}

    def java_argv(self, main: str, *args: str) -> list[str]:
        cp = os.pathsep.join(str(j) for j in self.jars)
        log4j = (self.workdir / "conf" / "log4j2.properties").as_uri()
        return [self.java, *BROKER_JAVA_OPTS.split(), *jvm_tmp_opts(self.workdir / "tmp").split(),
                f"-Dlog4j2.configurationFile={log4j}", "-cp", cp, main, *args]

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(self.workdir)),
                "LANG": os.environ.get("LANG", "C.UTF-8")}

    def format(self) -> None:
        """Format every node's storage with one cluster id (static quorum: no quorum flag)."""
        self._cluster_id = _random_cluster_id()
        done = commands.completed_all(
            [self.java_argv(STORAGE_TOOL, "format", "-t", self._cluster_id, "-c",
                            str(self.workdir / "conf" / f"{n.name}.properties"), "--ignore-formatted")
             for n in self.nodes], timeout=self.start_timeout, env=self.env(), error=StackError,
            fix="raise --chaos-start-timeout on a busy machine")
        for nid, proc in zip((n.node_id for n in self.nodes), done, strict=True):
            if proc.returncode != 0:
                raise StackError(f"Kafka's StorageTool could not format broker-{nid}'s log directory "
                                 f"{self.workdir / 'data' / f'broker-{nid}'}: {java_error(proc.stdout)}; "
                                 "fix: free disk space there, or check that the directory is writable")


def java_error(output: str, lines: int = 2) -> str:
    """What a failed JVM tool said, without its stack trace: its last ``lines`` message lines."""
    said = [ln.strip() for ln in output.splitlines()
            if ln.strip() and not ln.lstrip().startswith(("at ", "... ")) and not ln.startswith("\t")]
    return " ".join(said[-lines:]) or "no output"


def _properties(conf: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in conf.items())


def _random_cluster_id() -> str:
    """A cluster id as Kafka's ``StorageTool random-uuid`` makes one: 16 random bytes, URL-safe
    base64 without padding, never starting with ``-`` (a command line would take it for an option;
    Kafka's ``Uuid.randomUuid`` draws again too). No JVM start needed."""
    import base64

    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid
