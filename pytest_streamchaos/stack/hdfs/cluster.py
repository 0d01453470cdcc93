"""A real HDFS on 127.0.0.1: one NameNode and N DataNodes of Hadoop 3.5.0, each its own JVM.

The jars are Maven Central's (:func:`~pytest_streamchaos.machine.artifacts.hadoop_jars`, resolved once per
machine) on a class path of their own: Hadoop brings its own Jackson, Guava and Netty, kept apart from ``pyspark/jars``.
Every node is a process in the job's group: HDFS is part of the system under test, so network faults
can tell its connections from the harness's.

One generated conf dir (``core-site.xml``, ``hdfs-site.xml``, ``log4j.properties``) serves every
node; what differs per DataNode (its ports and data dir) comes as ``-D`` options. Failure detection
is shortened for chaos tests: DataNodes heartbeat every second and the NameNode declares a silent one
dead after ``2 x recheck + 10 x heartbeat`` = :data:`~.plan.DEAD_AFTER_S` seconds (Hadoop's default is
10.5 minutes). Readiness and :meth:`LocalHdfsCluster.state` come from the NameNode's JMX JSON
(``/jmx``): safe mode, and the DataNodes it counts live and dead.

Composed of collaborators: the layout and the nodes' commands (:class:`~.plan.HdfsPlan`), their JMX state
and the waits (:class:`~.state.HdfsReadiness`), the faults on the nodes and their revival
(:class:`~.control.HdfsControl`). :class:`~.watcher.HdfsWatcher` puts what HDFS does on a run's timeline.
"""

from __future__ import annotations

import getpass
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.hdfs.control import HdfsControl
from pytest_streamchaos.stack.hdfs.plan import DEAD_AFTER_S, HdfsNode, HdfsPlan
from pytest_streamchaos.stack.hdfs.state import HdfsReadiness, HdfsState
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.local.placement import LocalPlacement
from pytest_streamchaos.stack.process import DaemonProcess, terminate_all
from pytest_streamchaos.stack.service import Service

if TYPE_CHECKING:  # untyped (mypy reads it as Any): named for the reader
    from fsspec import AbstractFileSystem


class LocalHdfsCluster(Service):
    """A NameNode and ``datanodes`` DataNodes of Hadoop 3.5.0 as local JVMs (see the module docstring);
    :class:`~..base.HdfsCluster` for the HDFS faults."""

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
        host: Host | None = None,
    ) -> None:
        """``fixed_ports`` pins ports instead of allocating them (keys ``namenode.rpc``,
        ``namenode.http``, ``datanode-<i>.data|http|ipc``); ``conf`` adds or overrides
        ``hdfs-site.xml`` entries; ``host``: the session's host resources (default: the current one)."""
        if datanodes < 1 or not 1 <= replication <= datanodes:
            raise StackError(f"datanodes={datanodes}, replication={replication}: HDFS needs at least one "
                             "DataNode and 1 <= replication <= datanodes; fix: raise datanodes or lower replication")
        self.workdir = Path(workdir).absolute()
        self.plan = HdfsPlan(self.workdir, LocalPlacement(host), datanodes=datanodes, replication=replication,
                             java_home=java_home or "", start_timeout=start_timeout, fixed_ports=fixed_ports or {},
                             extra_conf=conf or {})
        killed: set[str] = set()  # nodes down by our own signal (not a start-up failure)
        self.readiness = HdfsReadiness(self.plan, killed)
        self.control = HdfsControl(self.plan, self.readiness, killed)
        self._started = False

    # -- shape ---------------------------------------------------------------------------------
    @property
    def namenode(self) -> HdfsNode:
        """The NameNode's handle (``StackError`` before :meth:`start`)."""
        return self.readiness.namenode

    @property
    def datanodes(self) -> list[HdfsNode]:
        """The DataNodes' handles, by index."""
        return list(self.plan.datanodes)

    @property
    def replication(self) -> int:
        return self.plan.replication

    @property
    def effective_conf(self) -> dict[str, str]:
        """core-site + hdfs-site as the nodes run with them."""
        return self.plan.effective_conf

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
        return [n.endpoint() for n in self.plan.nodes()]

    def processes(self) -> list[DaemonProcess]:
        """The current process of every node that was started."""
        return [n.process for n in self.plan.nodes() if n.process is not None]

    # -- start / stop / heal -------------------------------------------------------------------
    def start(self) -> None:
        """Check Java, resolve the jars, check the ports, format the name dir, start every node and
        wait until the NameNode is out of safe mode with every DataNode live. Any failure raises
        :class:`StackError` naming the fix, with everything started stopped again."""
        if self._started:
            return
        java = self.plan.check_java()
        jars = artifacts.resolve(artifacts.hadoop_jars(), java=str(java))
        self.plan.lay_out(java, jars)
        self._started = True
        try:
            self.plan.format()
            for node in self.plan.nodes():  # DataNodes retry the NameNode each second until it listens
                node.start()
            self.readiness.wait_ready(self.plan.start_timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 3.0) -> None:
        """SIGTERM every node at once, SIGKILL what is left after ``timeout``. Idempotent."""
        terminate_all(self.processes(), timeout=timeout)
        self._started = False

    def heal(self, timeout: float = 60.0) -> HdfsState:
        """Resume paused nodes, restart dead ones, and wait until the NameNode is out of safe mode
        with every DataNode registered and live."""
        if not self._started:
            raise StackError("heal() before start(): the HDFS cluster is not running")
        deadline = time.monotonic() + timeout
        self.control.revive(deadline)
        return self.readiness.wait_ready(max(0.1, deadline - time.monotonic()))

    # -- state (delegated) ---------------------------------------------------------------------------
    def state(self) -> HdfsState:
        """Safe mode and the live / dead DataNodes, as the NameNode reports them now."""
        return self.readiness.state()

    def out_of_safemode(self) -> bool:
        return self.readiness.out_of_safemode()

    def datanode_registered(self, i: int) -> bool:
        return self.readiness.datanode_registered(i)

    def wait_ready(self, timeout: float) -> HdfsState:
        return self.readiness.wait_ready(timeout)

    # -- faults: one method per operation (delegated) ------------------------------------------
    def kill_namenode(self, sig: int = signal.SIGKILL, wait: bool = True) -> HdfsNode:
        """Send ``sig`` to the NameNode; with ``wait``, return once it is gone."""
        return self.control.signal(self.namenode, sig, wait)

    def restart_namenode(self, wait: bool = True, timeout: float | None = None) -> HdfsNode:
        """Start the NameNode again (killed first if running) on the same ports and name dir; with
        ``wait``, return once it is out of safe mode with every DataNode reporting."""
        return self.control.restart(self.namenode, wait, timeout)

    def pause_namenode(self, wait: bool = True) -> None:
        """SIGSTOP the NameNode (it accepts connections and answers nothing)."""
        self.control.process(self.namenode).pause(wait=wait)

    def resume_namenode(self) -> None:
        """SIGCONT the NameNode and wait until it runs."""
        self.control.process(self.namenode).resume()

    def kill_datanode(self, i: int, sig: int = signal.SIGKILL, wait: bool = True) -> HdfsNode:
        """Send ``sig`` to DataNode ``i``; with ``wait``, return once it is gone."""
        return self.control.signal(self.control.datanode(i), sig, wait)

    def restart_datanode(self, i: int, wait: bool = True, timeout: float | None = None) -> HdfsNode:
        """Start DataNode ``i`` again (killed first if running) on its ports and data dir; with
        ``wait``, return once it has registered and the cluster is ready."""
        return self.control.restart(self.control.datanode(i), wait, timeout)

    def pause_datanode(self, i: int, wait: bool = True) -> None:
        """SIGSTOP DataNode ``i`` (no heartbeats: declared dead after :data:`DEAD_AFTER_S`)."""
        self.control.process(self.control.datanode(i)).pause(wait=wait)

    def resume_datanode(self, i: int) -> None:
        """SIGCONT DataNode ``i`` (declared dead meanwhile, it registers again by itself)."""
        self.control.process(self.control.datanode(i)).resume()

    def wait_gone(self, node: HdfsNode, timeout: float = 10.0) -> None:
        """Return once ``node``'s process group is gone (after a kill with ``wait=False``)."""
        if node.process is not None:
            node.process.wait_gone(timeout)

    def wait_paused(self, node: HdfsNode, timeout: float = 5.0) -> None:
        """Return once ``node`` is stopped (after a pause with ``wait=False``)."""
        self.control.process(node).wait_paused(timeout)

    # -- clients -------------------------------------------------------------------------------
    def filesystem(self, user: str | None = None) -> AbstractFileSystem:
        """An fsspec WebHDFS filesystem on this cluster (as ``user``, default: this OS user).
        Reads redirect to a DataNode's HTTP port, which is on 127.0.0.1 too."""
        import fsspec

        host, port = self.webhdfs
        return fsspec.filesystem("webhdfs", host=host, port=port, user=user or getpass.getuser(),
                                 skip_instance_cache=True)

    def client_conf(self) -> dict[str, str]:
        """Hadoop client settings a writer needs so its files match this cluster (a client's own
        ``dfs.replication`` wins over the NameNode's); for Spark, prefix each key with ``spark.hadoop.``."""
        return {"dfs.replication": str(self.plan.replication),
                "dfs.client.block.write.replace-datanode-on-failure.policy": "NEVER"}
