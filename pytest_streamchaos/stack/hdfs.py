"""A real HDFS on 127.0.0.1: one NameNode and N DataNodes of Hadoop 3.5.0, each its own JVM.

The jars are Maven Central's (:func:`~.artifacts.hadoop_jars`, resolved once per machine) on a class
path of their own: Hadoop brings its own Jackson, Guava and Netty, kept apart from ``pyspark/jars``.
Every node is a :class:`~.process.ManagedProcess` in the job's group (``job=True``): HDFS is part of
the system under test, so network faults can tell its connections from the harness's.

One generated conf dir (``core-site.xml``, ``hdfs-site.xml``, ``log4j.properties``) serves every
node; what differs per DataNode (its ports and data dir) comes as ``-D`` options. Failure detection
is shortened for chaos tests: DataNodes heartbeat every second and the NameNode declares a silent one
dead after ``2 x recheck + 10 x heartbeat`` = :data:`DEAD_AFTER_S` seconds (Hadoop's default is
10.5 minutes). Readiness and :meth:`LocalHdfsCluster.state` come from the NameNode's JMX JSON
(``/jmx``): safe mode, and the DataNodes it counts live and dead.
"""

from __future__ import annotations

import getpass
import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack import artifacts
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.environment import JAVA_FIX, find_java, java_version
from pytest_streamchaos.stack.ports import HOST, free_port, port_holder, port_is_free, reserve
from pytest_streamchaos.stack.process import Daemon, ManagedProcess, terminate_all
from pytest_streamchaos.stack.spark_daemons import DAEMON_JAVA_OPTS, jvm_tmp_opts

NAMENODE_CLASS = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE_CLASS = "org.apache.hadoop.hdfs.server.datanode.DataNode"
#: Hadoop 3.5.0's classes are Java 17 bytecode (class file version 61)
MIN_JAVA = 17
#: seconds between a DataNode's heartbeats (Hadoop's default 3)
HEARTBEAT_S = 1
#: how often the NameNode looks for DataNodes without heartbeats (Hadoop's default 5 min)
RECHECK_MS = 1000
#: seconds without a heartbeat until the NameNode declares a DataNode dead (Hadoop's formula); it
#: notices within one more recheck interval
DEAD_AFTER_S = 2 * RECHECK_MS / 1000 + 10 * HEARTBEAT_S
#: heaps: the nodes hold a few files' metadata and blocks; measured RSS is ~200 MB each regardless
NAMENODE_HEAP = "256m"
DATANODE_HEAP = "192m"
#: how long one JMX request may take (a paused NameNode accepts the connection and never answers)
JMX_TIMEOUT_S = 1.0
#: per-node port names (``fixed_ports`` keys are ``namenode.<name>`` / ``datanode-<i>.<name>``)
NAMENODE_PORTS = ("rpc", "http")
DATANODE_PORTS = ("data", "http", "ipc")

# Hadoop 3.5 logs through slf4j to reload4j (log4j 1.x API): one line per event, to the node's log file.
LOG4J = """\
log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.target=System.out
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=%d{HH:mm:ss.SSS} %-5p [%t] %c{1}: %m%n
# a line per client call or block move: noise at a chaos test's rates
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.BlockStateChange=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""

# No proxy for the NameNode's own address, whatever the environment says.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def jmx_bean(port: int, query: str, host: str = HOST) -> dict[str, Any] | None:
    """The first bean of ``http://host:port/jmx?qry=<query>``, or None when it does not answer."""
    try:
        with _HTTP.open(f"http://{host}:{port}/jmx?qry={query}", timeout=JMX_TIMEOUT_S) as resp:
            beans = json.loads(resp.read().decode()).get("beans") or []
    except (OSError, ValueError, http.client.HTTPException):
        return None
    return beans[0] if beans else None


@dataclass(frozen=True)
class HdfsState:
    """What the NameNode reports (``answered`` False: it did not answer, nothing else is known)."""

    answered: bool
    safemode: bool | None = None  #: in safe mode (no writes); None when it did not answer
    live: tuple[str, ...] = ()  #: DataNodes it counts live (``datanode-<i>``)
    dead: tuple[str, ...] = ()  #: DataNodes it has declared dead
    safemode_reason: str = ""  #: the NameNode's own safe-mode message ("" when off)


class HdfsNode(Daemon):
    """A NameNode or DataNode JVM: its current process and what it takes to start it again."""

    def __init__(self, role: str, index: int, ports: Mapping[str, int], start: Callable[[], ManagedProcess]) -> None:
        super().__init__(index, start)
        self.role = role  #: ``namenode`` | ``datanode``
        self.ports = dict(ports)

    @property
    def name(self) -> str:
        """``namenode`` or ``datanode-<i>`` (endpoints, timeline targets, log files)."""
        return "namenode" if self.role == "namenode" else f"datanode-{self.index}"

    def endpoint(self) -> Endpoint:
        """The node with its ports, for network faults."""
        return Endpoint(self.name, self.role, self.host, dict(self.ports))


class LocalHdfsCluster:
    """A NameNode and ``datanodes`` DataNodes of Hadoop 3.5.0 as local JVMs (see the module docstring)."""

    def __init__(
        self,
        workdir: str | os.PathLike,
        datanodes: int = 2,
        replication: int = 2,
        java_home: str | None = None,
        *,
        start_timeout: float = 60.0,
        fixed_ports: Mapping[str, int] | None = None,
        conf: Mapping[str, str] | None = None,
    ) -> None:
        """``fixed_ports`` pins ports instead of allocating them (keys ``namenode.rpc``,
        ``namenode.http``, ``datanode-<i>.data|http|ipc``); ``conf`` adds or overrides
        ``hdfs-site.xml`` entries."""
        if datanodes < 1 or not 1 <= replication <= datanodes:
            raise StackError(f"datanodes={datanodes}, replication={replication}: HDFS needs at least one "
                             "DataNode and 1 <= replication <= datanodes; fix: raise datanodes or lower replication")
        self.workdir = Path(workdir).absolute()
        self.n_datanodes, self.replication = datanodes, replication
        self.java_home, self.start_timeout = java_home or "", start_timeout
        self.fixed_ports, self.extra_conf = dict(fixed_ports or {}), dict(conf or {})
        self.effective_conf: dict[str, str] = {}  #: core-site + hdfs-site as the nodes run with them
        self._namenode: HdfsNode | None = None
        self._datanodes: list[HdfsNode] = []
        self._killed: set[str] = set()  # nodes down by our own signal (not a start-up failure)
        self._started = False

    # -- shape ---------------------------------------------------------------------------------
    @property
    def namenode(self) -> HdfsNode:
        """The NameNode's handle (``StackError`` before :meth:`start`)."""
        if self._namenode is None:
            raise StackError("the HDFS cluster is not started: call start() first")
        return self._namenode

    @property
    def datanodes(self) -> list[HdfsNode]:
        """The DataNodes' handles, by index."""
        return list(self._datanodes)

    @property
    def default_fs(self) -> str:
        """``hdfs://127.0.0.1:<NameNode RPC port>``."""
        return f"hdfs://{HOST}:{self.namenode.ports['rpc']}"

    @property
    def webhdfs(self) -> tuple[str, int]:
        """(host, port) of WebHDFS: the NameNode's HTTP server."""
        return HOST, self.namenode.ports["http"]

    @property
    def dead_after_s(self) -> float:
        """Seconds without heartbeats until the NameNode declares a DataNode dead."""
        return DEAD_AFTER_S

    def endpoints(self) -> list[Endpoint]:
        """Every node with its ports (NameNode rpc/http; DataNode data/http/ipc)."""
        return [n.endpoint() for n in self._nodes()]

    def processes(self) -> list[ManagedProcess]:
        """The current process of every node that was started."""
        return [n.process for n in self._nodes() if n.process is not None]

    def _nodes(self) -> list[HdfsNode]:
        return [*([self._namenode] if self._namenode else []), *self._datanodes]

    # -- start / stop --------------------------------------------------------------------------
    def start(self) -> None:
        """Check Java, resolve the jars, check the ports, format the name dir, start every node and
        wait until the NameNode is out of safe mode with every DataNode live. Any failure raises
        :class:`StackError` naming the fix, with everything started stopped again."""
        if self._started:
            return
        java = self._check_java()
        jars = artifacts.resolve(artifacts.hadoop_jars(), java=str(java))
        self._plan(java, jars)
        self._started = True
        try:
            self._format()
            for node in self._nodes():  # DataNodes retry the NameNode each second until it listens
                node.start()
            self.wait_ready(self.start_timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM every node at once, SIGKILL what is left after ``timeout``. Idempotent."""
        terminate_all(self.processes(), timeout=timeout)
        self._started = False

    def __enter__(self) -> LocalHdfsCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _check_java(self) -> Path:
        java, self._java_home = find_java(self.java_home)
        version = java_version(java)
        if version < MIN_JAVA:
            raise StackError(f"{java} is Java {version}; Hadoop 3.5's HDFS needs Java {MIN_JAVA} or later; {JAVA_FIX}")
        return java

    def _plan(self, java: Path, jars: list[Path]) -> None:
        """Ports (checked free), directories, the conf dir and the node handles."""
        self._check_fixed_ports()
        ports = {f"namenode.{p}": self._port(f"namenode.{p}") for p in NAMENODE_PORTS}
        for i in range(self.n_datanodes):
            ports.update({f"datanode-{i}.{p}": self._port(f"datanode-{i}.{p}") for p in DATANODE_PORTS})
        _check_ports(ports)
        for sub in ("conf", "logs", "tmp", "name"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        self._write_conf(ports["namenode.rpc"], ports["namenode.http"])
        self._classpath = os.pathsep.join([str(self.workdir / "conf"), *map(str, jars)])
        self._java = java
        nn_ports = {p: ports[f"namenode.{p}"] for p in NAMENODE_PORTS}
        self._namenode = HdfsNode("namenode", 0, nn_ports, lambda: self._launch("namenode", NAMENODE_CLASS))
        self._datanodes = []
        for i in range(self.n_datanodes):
            dn_ports = {p: ports[f"datanode-{i}.{p}"] for p in DATANODE_PORTS}
            self._datanodes.append(HdfsNode("datanode", i, dn_ports, self._datanode_starter(i, dn_ports)))

    def _check_fixed_ports(self) -> None:
        keys = [f"namenode.{p}" for p in NAMENODE_PORTS]
        keys += [f"datanode-{i}.{p}" for i in range(self.n_datanodes) for p in DATANODE_PORTS]
        unknown = sorted(set(self.fixed_ports) - set(keys))
        if unknown:
            raise StackError(f"fixed_ports: unknown keys {unknown}; fix: use {', '.join(keys)}")
        for port in self.fixed_ports.values():
            reserve(port)  # before any allocation, so no other node is handed a pinned port

    def _port(self, key: str) -> int:
        return self.fixed_ports.get(key) or free_port()

    def _write_conf(self, rpc: int, http_port: int) -> None:
        conf = self.workdir / "conf"
        secret = conf / "http-signature-secret"  # else every node reads ~/hadoop-http-auth-signature-secret
        secret.write_text(secrets.token_hex(16))
        core = {"fs.defaultFS": f"hdfs://{HOST}:{rpc}", "hadoop.tmp.dir": str(self.workdir / "tmp"),
                "hadoop.http.authentication.signature.secret.file": str(secret),
                # A DataNode serves WebHDFS through a cached NameNode client whose idle connection
                # only learns of a NameNode's death on its next call, which then fails (EOFException):
                # the first read after a NameNode restart would fail. Idle connections close after
                # 1 s (the default is 10 s) instead; heartbeats keep the DataNode's own busy.
                "ipc.client.connection.maxidletime": "1000"}
        hdfs = {**self._hdfs_site(rpc, http_port), **self.extra_conf}
        (conf / "core-site.xml").write_text(_site_xml(core))
        (conf / "hdfs-site.xml").write_text(_site_xml(hdfs))
        (conf / "log4j.properties").write_text(LOG4J)
        # The NameNode's and DataNode's HTTP servers look up webapps/<name> on the class path. Hadoop's
        # tarball ships them as a directory; the Maven jars do not. Empty ones are enough for /jmx
        # and WebHDFS, which are servlets registered in code.
        for app in ("hdfs", "datanode", "static"):
            (conf / "webapps" / app).mkdir(parents=True, exist_ok=True)
        self.effective_conf = {**core, **hdfs}

    def _hdfs_site(self, rpc: int, http_port: int) -> dict[str, str]:
        return {
            "dfs.namenode.rpc-address": f"{HOST}:{rpc}",
            "dfs.namenode.http-address": f"{HOST}:{http_port}",
            "dfs.namenode.name.dir": (self.workdir / "name").as_uri(),
            "dfs.replication": str(self.replication),
            "dfs.permissions.enabled": "false",
            "dfs.namenode.safemode.extension": "0",  # out of safe mode as soon as the blocks are reported
            "dfs.heartbeat.interval": str(HEARTBEAT_S),
            "dfs.namenode.heartbeat.recheck-interval": str(RECHECK_MS),
            # stale must stay >= 3 heartbeats and below the dead interval (the default 30 s is above it)
            "dfs.namenode.stale.datanode.interval": str(3000 * HEARTBEAT_S),
            # with 2 DataNodes there is no spare to replace one in a write pipeline: write on with the other
            "dfs.client.block.write.replace-datanode-on-failure.policy": "NEVER",
            "dfs.namenode.datanode.registration.ip-hostname-check": "false",
            # WebHDFS redirects clients to the DataNode's host name: 127.0.0.1, not the machine's name
            "dfs.datanode.hostname": HOST,
            "dfs.namenode.handler.count": "4",
            "dfs.datanode.handler.count": "3",
            "dfs.block.scanner.volume.bytes.per.second": "0",  # no background block scanner: CPU is scarce
        }

    def _argv(self, cls: str, name: str, *args: str) -> list[str]:
        heap = NAMENODE_HEAP if cls == NAMENODE_CLASS else DATANODE_HEAP
        log4j = (self.workdir / "conf" / "log4j.properties").as_uri()
        return [str(self._java), f"-Xmx{heap}", *DAEMON_JAVA_OPTS.split(),
                *jvm_tmp_opts(self.workdir / "tmp" / name).split(), f"-Dlog4j.configuration={log4j}",
                f"-Dstreamchaos.node={name}", "-cp", self._classpath, cls, *args]

    def _env(self) -> dict[str, str]:
        # Nothing of the caller's HADOOP_* / CLASSPATH settings leaks in; DataNodes run `du` and `df`.
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(self.workdir)),
                "LANG": os.environ.get("LANG", "C.UTF-8"), "JAVA_HOME": str(self._java_home),
                "TMPDIR": str(self.workdir / "tmp")}

    def _launch(self, name: str, cls: str, *args: str, job: bool = True) -> ManagedProcess:
        return ManagedProcess(self._argv(cls, name, *args), env=self._env(), cwd=self.workdir,
                              log_path=self.workdir / "logs" / f"{name}.log", name=f"hdfs-{name}", job=job)

    def _datanode_starter(self, i: int, ports: Mapping[str, int]) -> Callable[[], ManagedProcess]:
        data = self.workdir / f"data-{i}"
        opts = {"dfs.datanode.data.dir": data.as_uri(), "dfs.datanode.address": f"{HOST}:{ports['data']}",
                "dfs.datanode.http.address": f"{HOST}:{ports['http']}",
                "dfs.datanode.ipc.address": f"{HOST}:{ports['ipc']}"}
        args = [a for k, v in opts.items() for a in ("-D", f"{k}={v}")]
        return lambda: self._launch(f"datanode-{i}", DATANODE_CLASS, *args)

    def _format(self) -> None:
        """``NameNode -format``: a fresh, empty name dir (a harness step: not in the job's group)."""
        proc = self._launch("namenode-format", NAMENODE_CLASS, "-format", "-force", "-nonInteractive", job=False)
        try:
            rc = proc.wait(self.start_timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            proc.kill()
        if rc != 0:
            why = f"did not finish within {self.start_timeout:.0f}s" if rc is None else f"exited with code {rc}"
            raise StackError(f"formatting the HDFS NameNode's name dir {self.workdir / 'name'} {why} "
                             f"(log {proc.log_path}):\n{proc.tail_log(20)}")

    # -- readiness and state -------------------------------------------------------------------
    def state(self) -> HdfsState:
        """Safe mode and the live / dead DataNodes, as the NameNode reports them now."""
        nn = self._namenode
        if nn is None or not nn.alive or nn.paused:
            return HdfsState(answered=False)
        port = nn.ports["http"]
        fsstate = jmx_bean(port, "Hadoop:service=NameNode,name=FSNamesystemState")
        info = fsstate and jmx_bean(port, "Hadoop:service=NameNode,name=NameNodeInfo")
        if not fsstate or not info:
            return HdfsState(answered=False)
        reason = str(info.get("Safemode") or "")
        return HdfsState(True, fsstate.get("FSState") == "safeMode" or bool(reason),
                         self._node_names(info.get("LiveNodes")), self._node_names(info.get("DeadNodes")),
                         reason.strip())

    def _node_names(self, nodes_json: Any) -> tuple[str, ...]:
        """``datanode-<i>`` of each entry of NameNodeInfo's ``LiveNodes`` / ``DeadNodes`` (by data port)."""
        try:
            nodes = json.loads(nodes_json or "{}")
        except ValueError:
            return ()
        by_port = {dn.ports["data"]: dn.name for dn in self._datanodes}
        names = []
        for key, row in nodes.items():
            port = str(row.get("xferaddr") or key).rpartition(":")[2]
            names.append(by_port.get(int(port), key) if port.isdigit() else key)
        return tuple(sorted(names))

    def out_of_safemode(self) -> bool:
        """Whether the NameNode answers and is out of safe mode."""
        st = self.state()
        return st.answered and st.safemode is False

    def datanode_registered(self, i: int) -> bool:
        """Whether DataNode ``i``'s current process has registered with the current NameNode: its own
        JMX says its block-pool service is RUNNING (registered) and the NameNode counts it live. (The
        NameNode alone would still count a just-restarted DataNode live from its previous life.)"""
        dn = self._datanodes[i]
        if not dn.alive or dn.paused:
            return False
        info = jmx_bean(dn.ports["http"], "Hadoop:service=DataNode,name=DataNodeInfo") or {}
        try:
            actors = json.loads(info.get("BPServiceActorInfo") or "[]")
        except ValueError:
            return False
        running = any(a.get("ActorState") == "RUNNING" for a in actors)
        return running and dn.name in self.state().live

    def wait_ready(self, timeout: float) -> HdfsState:
        """Wait until the NameNode is out of safe mode and counts every DataNode live; a node that
        exits meanwhile fails at once (:class:`StackError` with its log), and so does the timeout
        (naming what was seen, and the fix)."""
        seen: list[HdfsState] = [HdfsState(answered=False)]

        def ready() -> HdfsState | None:
            self._check_running()
            seen[0] = st = self.state()
            return st if st.safemode is False and len(st.live) == self.n_datanodes else None

        return poll(ready, timeout, lambda _: StackError(self._not_ready(seen[0], timeout)), interval=0.2)

    def _not_ready(self, st: HdfsState, timeout: float) -> str:
        logs = self.workdir / "logs"
        if not st.answered:
            return (f"HDFS NameNode did not answer JMX on {HOST}:{self.namenode.ports['http']} within {timeout:.0f}s "
                    f"(log {logs / 'namenode.log'}):\n{self.namenode.tail_log(20)}")
        if st.safemode:
            fix = (f"free disk space where {self.workdir} is (the NameNode wants 100 MB free)"
                   if "resources are low" in st.safemode_reason.lower() else
                   f"the DataNodes have not reported the blocks: see their logs in {logs}, heal() restarts dead "
                   "ones, a new workdir starts empty")
            return f"HDFS NameNode still in safe mode after {timeout:.0f}s: {st.safemode_reason}; fix: {fix}"
        missing = sorted({dn.name for dn in self._datanodes} - set(st.live))
        return (f"HDFS NameNode counts {len(st.live)} of {self.n_datanodes} DataNodes live after {timeout:.0f}s "
                f"(missing {missing}, dead {list(st.dead)}); see their logs in {logs}")

    def _check_running(self) -> None:
        for node in self._nodes():
            p = node.process
            if p is not None and not p.alive and node.name not in self._killed:
                raise StackError(_exit_message(node, p))

    # -- faults: one method per operation ------------------------------------------------------
    def kill_namenode(self, sig: int = signal.SIGKILL, wait: bool = True) -> HdfsNode:
        """Send ``sig`` to the NameNode; with ``wait``, return once it is gone."""
        return self._signal(self.namenode, sig, wait)

    def restart_namenode(self, wait: bool = True, timeout: float | None = None) -> HdfsNode:
        """Start the NameNode again (killed first if running) on the same ports and name dir; with
        ``wait``, return once it is out of safe mode with every DataNode reporting."""
        return self._restart(self.namenode, wait, timeout)

    def pause_namenode(self, wait: bool = True) -> None:
        """SIGSTOP the NameNode (it accepts connections and answers nothing)."""
        self._process(self.namenode).pause(wait=wait)

    def resume_namenode(self) -> None:
        """SIGCONT the NameNode and wait until it runs."""
        self._process(self.namenode).resume()

    def kill_datanode(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> HdfsNode:
        """Send ``sig`` to DataNode ``i``; with ``wait``, return once it is gone."""
        return self._signal(self._datanode(i), sig, wait)

    def restart_datanode(self, i: int, wait: bool = True, timeout: float | None = None) -> HdfsNode:
        """Start DataNode ``i`` again (killed first if running) on its ports and data dir; with
        ``wait``, return once it has registered and the cluster is ready."""
        return self._restart(self._datanode(i), wait, timeout)

    def pause_datanode(self, i: int, wait: bool = True) -> None:
        """SIGSTOP DataNode ``i`` (no heartbeats: declared dead after :data:`DEAD_AFTER_S`)."""
        self._process(self._datanode(i)).pause(wait=wait)

    def resume_datanode(self, i: int) -> None:
        """SIGCONT DataNode ``i`` (declared dead meanwhile, it registers again by itself)."""
        self._process(self._datanode(i)).resume()

    def wait_gone(self, node: HdfsNode, timeout: float = 10.0) -> None:
        """Return once ``node``'s process group is gone (after a kill with ``wait=False``)."""
        if node.process is not None:
            node.process.wait_gone(timeout)

    def wait_paused(self, node: HdfsNode, timeout: float = 5.0) -> None:
        """Return once ``node`` is stopped (after a pause with ``wait=False``)."""
        self._process(node).wait_paused(timeout)

    def heal(self, timeout: float = 60.0) -> HdfsState:
        """Resume paused nodes, restart dead ones, and wait until the NameNode is out of safe mode
        with every DataNode registered and live."""
        if not self._started:
            raise StackError("heal() before start(): the HDFS cluster is not running")
        deadline = time.monotonic() + timeout
        for node in self._nodes():
            if node.paused:
                self._process(node).resume()
        restarted = [n for n in self._nodes() if not n.alive]
        for node in restarted:  # the NameNode first: the list starts with it
            self._fresh_start(node)
        for node in restarted:
            if node.role == "datanode":
                self._wait_registered(node, max(0.1, deadline - time.monotonic()))
        return self.wait_ready(max(0.1, deadline - time.monotonic()))

    def _datanode(self, i: int) -> HdfsNode:
        if not 0 <= i < len(self._datanodes):
            n = len(self._datanodes)
            raise StackError(f"no DataNode {i}: the HDFS cluster has {n} (indexes 0..{n - 1})")
        return self._datanodes[i]

    @staticmethod
    def _process(node: HdfsNode) -> ManagedProcess:
        if node.process is None:
            raise StackError(f"HDFS {node.name} was never started")
        return node.process

    def _signal(self, node: HdfsNode, sig: int, wait: bool) -> HdfsNode:
        proc = self._process(node)
        self._killed.add(node.name)
        if sig == signal.SIGKILL:
            proc.kill(timeout=10, wait=wait)
        else:
            proc.signal(sig)
            if wait:
                proc.wait_gone(30)
        return node

    def _fresh_start(self, node: HdfsNode) -> None:
        if node.process is not None:
            node.process.kill(timeout=10)  # reap what is left of the old group
        self._killed.discard(node.name)
        node.start()

    def _restart(self, node: HdfsNode, wait: bool, timeout: float | None) -> HdfsNode:
        self._fresh_start(node)
        if wait:
            deadline = time.monotonic() + (timeout or self.start_timeout)
            if node.role == "datanode":
                self._wait_registered(node, deadline - time.monotonic())
            self.wait_ready(max(0.1, deadline - time.monotonic()))
        return node

    def _wait_registered(self, node: HdfsNode, timeout: float) -> None:
        def registered() -> bool:
            self._check_running()
            return self.datanode_registered(node.index)

        poll(registered, timeout, interval=0.2, on_timeout=lambda _: StackError(
            f"HDFS {node.name} did not register with the NameNode within {timeout:.0f}s; NameNode reports "
            f"{self.state()} (log {self.workdir / 'logs' / (node.name + '.log')}):\n{node.tail_log(15)}"))

    # -- clients -------------------------------------------------------------------------------
    def filesystem(self, user: str | None = None) -> Any:
        """An fsspec WebHDFS filesystem on this cluster (as ``user``, default: this OS user).
        Reads redirect to a DataNode's HTTP port, which is on 127.0.0.1 too."""
        import fsspec

        host, port = self.webhdfs
        return fsspec.filesystem("webhdfs", host=host, port=port, user=user or getpass.getuser(),
                                 skip_instance_cache=True)

    def client_conf(self) -> dict[str, str]:
        """Hadoop client settings a writer needs so its files match this cluster (a client's own
        ``dfs.replication`` wins over the NameNode's); for Spark, prefix each key with ``spark.hadoop.``."""
        return {"dfs.replication": str(self.replication),
                "dfs.client.block.write.replace-datanode-on-failure.policy": "NEVER"}


def _site_xml(props: Mapping[str, str]) -> str:
    rows = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


def _check_ports(ports: Mapping[str, int]) -> None:
    """Every port of the plan free on 127.0.0.1, or one line naming the first taken one and its holder."""
    for key, port in ports.items():
        if not port_is_free(port):
            holder = port_holder(port) or "a socket in TIME_WAIT"
            raise StackError(f"HDFS port {key}={port} on {HOST} is taken (by {holder}); fix: stop that process, "
                             f"or drop {key!r} from fixed_ports so the plugin picks a free port")


def _exit_message(node: HdfsNode, proc: ManagedProcess) -> str:
    """One line saying that ``node`` exited (naming a port it could not bind), then its log's tail."""
    log = proc.log_since_start()
    bind = re.search(r"BindException: Problem binding to \[([^\]]+)\]", log)
    cause = re.search(r"^[\w.$]+(?:Exception|Error): .*$", log, re.M)  # the first exception's line
    if bind:
        why = f": port {bind.group(1)} is taken; fix: free it or let the plugin pick ports"
    else:
        why = f": {cause.group(0)}" if cause else ""
    return (f"HDFS {node.name} exited with code {proc.returncode} during start-up{why} (log {proc.log_path}):\n"
            f"{proc.tail_log(25)}")


class HdfsWatcher:
    """Records what HDFS does on a run's timeline, stamped when observed (``recorder.record``, on
    ``time.time``): ``namenode_safemode_exit`` (a new NameNode process left safe mode),
    ``datanode_registered`` and ``datanode_dead`` (target ``datanode-<i>``), by polling
    :meth:`LocalHdfsCluster.state` in a background thread. The state at :meth:`start` is the
    baseline: only changes after it are recorded."""

    def __init__(self, hdfs: LocalHdfsCluster, recorder: Any, interval: float = 0.25) -> None:
        self.hdfs, self.recorder, self.interval = hdfs, recorder, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nn_pid: int | None = None
        self._dn_pids: dict[int, int | None] = {}
        self._safemode: bool | None = None
        self._live: set[str] = set()
        self._dead: set[str] = set()

    def start(self) -> HdfsWatcher:
        """Take the baseline and start polling."""
        st = self.hdfs.state()
        self._nn_pid = self.hdfs.namenode.pid
        self._dn_pids = {dn.index: dn.pid for dn in self.hdfs.datanodes}
        # a NameNode that does not answer yet is starting, so in safe mode
        self._safemode = st.safemode if st.answered else True
        self._live, self._dead = set(st.live), set(st.dead)
        self._thread = threading.Thread(target=self._run, name="hdfs-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> HdfsWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll_once()
            except Exception:  # a node between lives answers nothing sensible; keep watching
                continue

    def poll_once(self) -> list[tuple[str, str]]:
        """One observation; records and returns the (kind, target) events it saw."""
        if self.hdfs.namenode.pid != self._nn_pid:  # a new NameNode starts in safe mode, knowing no DataNode
            self._nn_pid, self._safemode, self._live, self._dead = self.hdfs.namenode.pid, True, set(), set()
        for dn in self.hdfs.datanodes:  # a restarted DataNode has to register again
            if dn.pid != self._dn_pids.get(dn.index):
                self._dn_pids[dn.index] = dn.pid
                self._live.discard(dn.name)
        st = self.hdfs.state()
        if not st.answered:
            return []
        events = []
        if self._safemode and st.safemode is False:
            events.append(("namenode_safemode_exit", "namenode"))
        self._safemode = st.safemode
        for dn in self.hdfs.datanodes:
            if dn.name in st.live and dn.name not in self._live and self.hdfs.datanode_registered(dn.index):
                events.append(("datanode_registered", dn.name))
                self._live.add(dn.name)
        self._live &= set(st.live)
        events += [("datanode_dead", name) for name in sorted(set(st.dead) - self._dead)]
        self._dead = set(st.dead)
        for kind, target in events:
            self.recorder.record(kind, target)
        return events
