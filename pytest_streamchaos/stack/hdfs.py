"""A real HDFS on 127.0.0.1: one NameNode and N DataNodes of Hadoop 3.5.0, each its own JVM.

The jars are Maven Central's (:func:`~.artifacts.hadoop_jars`, resolved once per machine) on a class
path of their own: Hadoop brings its own Jackson, Guava and Netty, kept apart from ``pyspark/jars``.
Every node is a :class:`~.process.ManagedProcess` in the job's group (``job=True``): HDFS is part of
the system under test, so network faults can tell its connections from the harness's.

One generated conf dir (``core-site.xml``, ``hdfs-site.xml``, ``log4j.properties``) serves every
node; what differs per DataNode (its ports and data dir) comes as ``-D`` options. Failure detection
is shortened for chaos tests: DataNodes heartbeat every second and the NameNode declares a silent one
dead after ``2 x recheck + 10 x heartbeat`` = :data:`~.hdfs_launch.DEAD_AFTER_S` seconds (Hadoop's default is
10.5 minutes). Readiness and :meth:`LocalHdfsCluster.state` come from the NameNode's JMX JSON
(``/jmx``): safe mode, and the DataNodes it counts live and dead.

The cluster is assembled from its parts: the nodes' configuration and start (:mod:`.hdfs_launch`),
their JMX state and the readiness waits (:mod:`.hdfs_state`); this module holds the start-up, the
faults on the nodes, healing and the clients. :class:`~.hdfs_watcher.HdfsWatcher` puts what HDFS does
on a run's timeline.
"""

from __future__ import annotations

import getpass
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_streamchaos.stack import artifacts
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.hdfs_launch import DEAD_AFTER_S, HdfsLaunch, HdfsNode
from pytest_streamchaos.stack.hdfs_state import HdfsReadiness, HdfsState
from pytest_streamchaos.stack.ports import HOST
from pytest_streamchaos.stack.process import ManagedProcess, terminate_all


class LocalHdfsCluster(HdfsReadiness, HdfsLaunch):
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
