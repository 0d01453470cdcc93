"""How the HDFS nodes are configured and started (:class:`HdfsPlan`): Java and ports checked, the one conf
dir every node reads (``core-site.xml``, ``hdfs-site.xml``, ``log4j.properties``), each node's command
line, and the NameNode's format before the first start; :class:`HdfsNode` is one node's handle. Every node
binds 127.0.0.1: HDFS runs on the local placement only."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from pytest_streamchaos.machine.environment import JAVA_FIX, find_java, java_version
from pytest_streamchaos.machine.ports import HOST, port_holder, port_is_free
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.jvm import DAEMON_JAVA_OPTS, HADOOP_LOG4J, jvm_tmp_opts
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.process import Daemon, DaemonProcess, ManagedProcess

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
#: per-node port names (``fixed_ports`` keys are ``namenode.<name>`` / ``datanode-<i>.<name>``)
NAMENODE_PORTS = ("rpc", "http")
DATANODE_PORTS = ("data", "http", "ipc")

LOG4J = HADOOP_LOG4J + """\
# a line per client call or block move: noise at a chaos test's rates
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.BlockStateChange=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
"""


class HdfsNode(Daemon):
    """A NameNode or DataNode JVM: its current process and what it takes to start it again."""

    def __init__(self, role: str, index: int, ports: Mapping[str, int], start: Callable[[], DaemonProcess]) -> None:
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


class HdfsPlan:
    """The cluster's layout and its nodes' commands: a NameNode and ``datanodes`` DataNodes (``replication``
    copies of each block), ``fixed_ports`` pinned instead of allocated (keys ``namenode.rpc``,
    ``namenode.http``, ``datanode-<i>.data|http|ipc``), ``extra_conf`` over ``hdfs-site.xml``."""

    def __init__(self, workdir: Path, placement: Placement, *, datanodes: int, replication: int, java_home: str,
                 start_timeout: float, fixed_ports: Mapping[str, int], extra_conf: Mapping[str, str]) -> None:
        self.workdir, self.placement = workdir, placement
        self.n_datanodes, self.replication = datanodes, replication
        self.java_home, self.start_timeout = java_home, start_timeout
        self.fixed_ports, self.extra_conf = dict(fixed_ports), dict(extra_conf)
        self.effective_conf: dict[str, str] = {}  #: core-site + hdfs-site as the nodes run with them
        self.namenode: HdfsNode | None = None
        self.datanodes: list[HdfsNode] = []
        self._java: Path | None = None
        self._java_home: Path | None = None
        self._classpath = ""

    def nodes(self) -> list[HdfsNode]:
        """The NameNode (once laid out) and the DataNodes."""
        return [*([self.namenode] if self.namenode else []), *self.datanodes]

    def check_java(self) -> Path:
        java, self._java_home = find_java(self.java_home)
        version = java_version(java)
        if version < MIN_JAVA:
            raise StackError(f"{java} is Java {version}; Hadoop 3.5's HDFS needs Java {MIN_JAVA} or later; {JAVA_FIX}")
        return java

    def lay_out(self, java: Path, jars: list[Path]) -> None:
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
        self.namenode = HdfsNode("namenode", 0, nn_ports, lambda: self._launch("namenode", NAMENODE_CLASS))
        self.datanodes = []
        for i in range(self.n_datanodes):
            dn_ports = {p: ports[f"datanode-{i}.{p}"] for p in DATANODE_PORTS}
            self.datanodes.append(HdfsNode("datanode", i, dn_ports, self._datanode_starter(i, dn_ports)))

    def _check_fixed_ports(self) -> None:
        keys = [f"namenode.{p}" for p in NAMENODE_PORTS]
        keys += [f"datanode-{i}.{p}" for i in range(self.n_datanodes) for p in DATANODE_PORTS]
        unknown = sorted(set(self.fixed_ports) - set(keys))
        if unknown:
            raise StackError(f"fixed_ports: unknown keys {unknown}; fix: use {', '.join(keys)}")
        for port in self.fixed_ports.values():
            self.placement.host.ports.reserve(port)  # before any allocation: no other node is handed a pinned port

    def _port(self, key: str) -> int:
        return self.fixed_ports.get(key) or self.placement.host.ports.free()

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

    def _launch(self, name: str, cls: str, *args: str) -> DaemonProcess:
        return self.placement.launch(self._argv(cls, name, *args), env=self._env(), cwd=self.workdir,
                                     log_path=self.workdir / "logs" / f"{name}.log", name=f"hdfs-{name}")

    def _datanode_starter(self, i: int, ports: Mapping[str, int]) -> Callable[[], DaemonProcess]:
        data = self.workdir / f"data-{i}"
        opts = {"dfs.datanode.data.dir": data.as_uri(), "dfs.datanode.address": f"{HOST}:{ports['data']}",
                "dfs.datanode.http.address": f"{HOST}:{ports['http']}",
                "dfs.datanode.ipc.address": f"{HOST}:{ports['ipc']}"}
        args = [a for k, v in opts.items() for a in ("-D", f"{k}={v}")]
        return lambda: self._launch(f"datanode-{i}", DATANODE_CLASS, *args)

    def format(self) -> None:
        """``NameNode -format``: a fresh, empty name dir (a harness step: not in the job's group)."""
        name = "namenode-format"
        proc = ManagedProcess(self._argv(NAMENODE_CLASS, name, "-format", "-force", "-nonInteractive"),
                              env=self._env(), cwd=self.workdir, log_path=self.workdir / "logs" / f"{name}.log",
                              name=f"hdfs-{name}", host=self.placement.host)
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
