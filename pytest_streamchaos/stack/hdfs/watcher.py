"""The HDFS side of a run's timeline: safe-mode exits and DataNodes registered or declared dead, as
the NameNode reports them (polled in a background thread)."""

from __future__ import annotations

from pytest_streamchaos.events import Records
from pytest_streamchaos.poll import Every
from pytest_streamchaos.stack.hdfs import HdfsKind
from pytest_streamchaos.stack.hdfs.cluster import LocalHdfsCluster
from pytest_streamchaos.stack.service import Service


class HdfsWatcher(Service):
    """Records what HDFS does on a run's timeline, stamped when observed (``recorder.record``, on
    ``time.time``): ``namenode_safemode_exit`` (a new NameNode process left safe mode),
    ``datanode_registered`` and ``datanode_dead`` (target ``datanode-<i>``), by polling
    :meth:`LocalHdfsCluster.state` in a background thread. The state at :meth:`start` is the
    baseline: only changes after it are recorded."""

    def __init__(self, hdfs: LocalHdfsCluster, recorder: Records, interval: float = 0.25) -> None:
        self.hdfs, self.recorder, self.interval = hdfs, recorder, interval
        self._polling = Every(self.poll_once, interval, "hdfs-watcher")
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
        self._polling.start()
        return self

    def stop(self) -> None:
        """Stop polling (idempotent)."""
        self._polling.stop()

    def poll_once(self) -> list[tuple[HdfsKind, str]]:
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
            events.append((HdfsKind.NAMENODE_SAFEMODE_EXIT, "namenode"))
        self._safemode = st.safemode
        for dn in self.hdfs.datanodes:
            if dn.name in st.live and dn.name not in self._live and self.hdfs.datanode_registered(dn.index):
                events.append((HdfsKind.DATANODE_REGISTERED, dn.name))
                self._live.add(dn.name)
        self._live &= set(st.live)
        events += [(HdfsKind.DATANODE_DEAD, name) for name in sorted(set(st.dead) - self._dead)]
        self._dead = set(st.dead)
        for kind, target in events:
            self.recorder.record(kind, target)
        return events
