"""The embedded HDFS (stack/hdfs/) on real JVMs: start-up, WebHDFS through fsspec, replication, the
fault operations and what the NameNode reports after them, the timeline watcher, the fault actions,
bad input, and a local PySpark session writing parquet and a streaming checkpoint to it.

Timings are printed (``-s`` shows them), never asserted: the machine is shared."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import requests
from stack_helpers import processes_under

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.registry import actions_for, parse
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.machine.ports import port_holder
from pytest_streamchaos.poll import settled, wait_for
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.hdfs.cluster import LocalHdfsCluster
from pytest_streamchaos.stack.hdfs.watcher import HdfsWatcher

pytestmark = pytest.mark.integration


def report(what: str, seconds: float) -> None:
    print(f"\nHDFS timing: {what}: {seconds:.2f}s")


def put(hdfs: LocalHdfsCluster, name: str, data: bytes | None = None) -> tuple[str, bytes]:
    """A new file through WebHDFS; its path and content."""
    path = f"/it/{uuid.uuid4().hex[:8]}/{name}"
    data = data if data is not None else f"{name} {uuid.uuid4().hex}\n".encode() * 100
    hdfs.filesystem().pipe_file(path, data)
    return path, data


def events(rec: Recorder, kind: str, target: str | None = None) -> list:
    return [e for e in rec.events() if e.kind == kind and (target is None or e.target == target)]


def test_cluster_comes_up_serves_webhdfs_and_stop_leaves_nothing(tmp_path: Path) -> None:
    cluster = LocalHdfsCluster(tmp_path / "hdfs")
    started = time.monotonic()
    try:
        cluster.start()
        report("cluster up (format + NameNode + 2 DataNodes, out of safe mode, both live)",
               time.monotonic() - started)
        pids = [p.pid for p in cluster.processes()]
        ports = [port for e in cluster.endpoints() for port in e.ports.values()]
        assert [e.name for e in cluster.endpoints()] == ["namenode", "datanode-0", "datanode-1"]
        for node in [cluster.namenode, *cluster.datanodes]:
            proc = psutil.Process(node.pid)
            listening = {c.laddr.ip for c in proc.net_connections("inet") if c.status == psutil.CONN_LISTEN}
            assert listening == {"127.0.0.1"}, f"{node.name} listens on {listening}"
            print(f"\nHDFS RSS: {node.name}: {proc.memory_info().rss / 2**20:.0f} MB")
        assert all(port_holder(p) for p in ports), "every node port listens"
        path, data = put(cluster, "up.txt")
        assert cluster.filesystem().cat_file(path) == data
    finally:
        cluster.stop()
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert not processes_under(tmp_path / "hdfs")
    assert not [p for p in ports if port_holder(p)], "a port still listens after stop()"
    cluster.stop()  # idempotent


def block_hosts(hdfs: LocalHdfsCluster, path: str) -> list[str]:
    """The DataNodes (``host:port``) holding the file's first block, from WebHDFS."""
    host, port = hdfs.webhdfs
    resp = requests.get(f"http://{host}:{port}/webhdfs/v1{path}", timeout=10,
                        params={"op": "GETFILEBLOCKLOCATIONS", "user.name": "test"})
    resp.raise_for_status()
    return resp.json()["BlockLocations"]["BlockLocation"][0]["names"]


def test_a_file_written_through_webhdfs_reads_back_with_two_replicas(hdfs: LocalHdfsCluster) -> None:
    path, data = put(hdfs, "round-trip.bin", os.urandom(300_000))
    fs = hdfs.filesystem()
    assert fs.cat_file(path) == data
    assert fs.info(path)["replication"] == 2
    assert sorted(block_hosts(hdfs, path)) == sorted(f"127.0.0.1:{dn.ports['data']}" for dn in hdfs.datanodes)


def test_namenode_kill_fails_clients_and_a_restart_recovers_the_files(hdfs: LocalHdfsCluster) -> None:
    # several blocks, so that the restarted NameNode waits in safe mode for a DataNode's block report
    files = [put(hdfs, f"nn-{i}.txt") for i in range(3)]
    fs = hdfs.filesystem()
    rec = Recorder()
    with HdfsWatcher(hdfs, rec):
        hdfs.kill_namenode()
        with pytest.raises(requests.ConnectionError):
            fs.cat_file(files[0][0])
        restarted = time.time()
        hdfs.restart_namenode(wait=False)
        exit_ev = wait_for(lambda: events(rec, "namenode_safemode_exit"), 60, "the watcher to see the safe-mode exit",
                           last=hdfs.state)[0]
        report("NameNode restart to out of safe mode (watcher's stamp)", exit_ev.t - restarted)
        hdfs.wait_ready(60)
        report("NameNode restart to ready (both DataNodes live again)", time.time() - restarted)
        wait_for(lambda: len(events(rec, "datanode_registered")) == 2, 10, "both DataNodes' re-registration",
                 last=rec.events)
    assert exit_ev.t > restarted
    assert all(e.t > restarted for e in events(rec, "datanode_registered"))
    for path, data in files:
        assert fs.cat_file(path) == data
    assert hdfs.state().safemode is False


def test_a_dead_datanode_is_noticed_and_replication_masks_it(hdfs: LocalHdfsCluster) -> None:
    path, data = put(hdfs, "dn.txt")
    # a write returns once one replica is durable; the second may still be in flight (or, right after a
    # NameNode restart, scheduled later), and the masking claim needs both
    wait_for(lambda: len(block_hosts(hdfs, path)) == 2, 30, "both replicas of the file (replication 2)",
             last=lambda: block_hosts(hdfs, path))
    rec = Recorder()
    with HdfsWatcher(hdfs, rec):
        killed = time.time()
        hdfs.kill_datanode(1)
        wait_for(lambda: "datanode-1" in hdfs.state().dead, hdfs.dead_after_s + 15,
                 f"the NameNode to declare datanode-1 dead (configured: {hdfs.dead_after_s:g}s)", last=hdfs.state)
        report(f"DataNode death noticed by the NameNode (configured {hdfs.dead_after_s:g}s)", time.time() - killed)
        assert hdfs.state().live == ("datanode-0",)
        # JMX calls it dead as soon as its heartbeats are overdue; the NameNode drops its replicas at its
        # next recheck (<= 1 s later), and until then WebHDFS may still redirect a read to it
        gone = f"127.0.0.1:{hdfs.datanodes[1].ports['data']}"
        wait_for(lambda: gone not in block_hosts(hdfs, path), 5, "the NameNode to drop datanode-1's replica",
                 last=lambda: block_hosts(hdfs, path))
        assert hdfs.filesystem().cat_file(path) == data  # the other replica serves it
        dead_ev = wait_for(lambda: events(rec, "datanode_dead", "datanode-1"), 5, "the watcher's datanode_dead")[0]
        restarted = time.time()
        hdfs.restart_datanode(1)
        report("DataNode restart to registered", time.time() - restarted)
        wait_for(lambda: events(rec, "datanode_registered", "datanode-1"), 5, "the watcher's datanode_registered",
                 last=rec.events)
    assert dead_ev.t > killed
    assert events(rec, "datanode_registered", "datanode-1")[0].t > restarted
    assert hdfs.state().live == ("datanode-0", "datanode-1")


def test_a_paused_namenode_stalls_a_webhdfs_call_until_resumed(hdfs: LocalHdfsCluster) -> None:
    path, data = put(hdfs, "pause.txt")
    fs = hdfs.filesystem()
    got: dict[str, bytes] = {}
    hdfs.pause_namenode()
    try:
        call = threading.Thread(target=lambda: got.update(data=fs.cat_file(path)), daemon=True)
        call.start()
        assert not settled(lambda: not call.is_alive(), 2.0), "the call finished against a frozen NameNode"
    finally:
        hdfs.resume_namenode()
    assert settled(lambda: not call.is_alive(), 30.0), "the call did not finish after resume"
    assert got["data"] == data


def test_fault_actions_record_recovery_on_the_timeline(hdfs: LocalHdfsCluster) -> None:
    """kill_namenode (restart at once), pause_namenode and kill_datanode through the scheduler, as a
    chaos run fires them; the actions record the NameNode's safe-mode exit and re-registrations."""
    put(hdfs, "actions.txt")
    rec = Recorder()
    ctx = FaultContext(cluster=None, kafka=None, job=None, input_topic="", recorder=rec, stores={"hdfs": hdfs})
    planned = plan([parse("kill_namenode", kwargs={"after": 0}),
                    parse("pause_namenode", kwargs={"after": 6, "duration": 1}),
                    parse("kill_datanode", kwargs={"after": 9, "index": 1, "restart_after": 1})])
    with FaultScheduler(planned, actions_for(ctx), rec) as sched:
        sched.start(time.time())
        wait_for(sched.done, 40, "the schedule to play out", last=rec.events)
        # both DataNodes after the NameNode's restart, then datanode-1 after its own
        wait_for(lambda: len(events(rec, "datanode_registered")) >= 3, 30, "the re-registrations after both kills",
                 last=rec.events)
    assert not sched.errors
    healed = {e.detail["fault"]: e.t for e in events(rec, "fault_healed")}
    assert set(healed) == {"kill_namenode", "pause_namenode", "kill_datanode"}
    assert events(rec, "namenode_safemode_exit")[0].t > healed["kill_namenode"]
    assert events(rec, "datanode_registered", "datanode-1")[-1].t > healed["kill_datanode"]
    hdfs.wait_ready(30)


def test_a_taken_namenode_port_is_one_line_and_starts_nothing(tmp_path: Path, streamchaos_host) -> None:
    import socket

    port = streamchaos_host.ports.free()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        cluster = LocalHdfsCluster(tmp_path / "hdfs", fixed_ports={"namenode.rpc": port})
        began = time.monotonic()
        with pytest.raises(StackError) as err:
            cluster.start()
        report("a taken port reported", time.monotonic() - began)
    msg = str(err.value)
    assert "\n" not in msg and f"namenode.rpc={port}" in msg and "fix:" in msg
    assert not processes_under(tmp_path / "hdfs")


def test_missing_java_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(StackError, match=r"java not found.*apt-get install openjdk-17") as err:
        LocalHdfsCluster(tmp_path / "hdfs", java_home=str(tmp_path / "no-jdk")).start()
    assert "\n" not in str(err.value)


def test_a_resolution_failure_is_one_line_and_starts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             streamchaos_host) -> None:
    # an empty jar cache and a "mirror" on a closed 127.0.0.1 port: the resolver fails at once
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("STREAMCHAOS_MAVEN_REPO", f"http://127.0.0.1:{streamchaos_host.ports.free()}/maven2/")
    with pytest.raises(StackError, match=r"could not resolve Hadoop HDFS 3\.5\.0 .*Fix: .*MAVEN_REPO") as err:
        LocalHdfsCluster(tmp_path / "hdfs").start()
    assert "\n" not in str(err.value)
    assert not processes_under(tmp_path / "hdfs")


def test_a_node_that_exits_at_start_fails_with_its_log_and_leaves_nothing(tmp_path: Path) -> None:
    cluster = LocalHdfsCluster(tmp_path / "hdfs", conf={"dfs.namenode.handler.count": "many"})
    began = time.monotonic()
    with pytest.raises(StackError) as err:
        cluster.start()
    report("a NameNode that exits at start reported", time.monotonic() - began)
    first, _, tail = str(err.value).partition("\n")
    assert "namenode exited with code" in first and 'NumberFormatException: For input string: "many"' in first
    assert "Failed to start namenode" in tail or "NumberFormatException" in tail
    assert not processes_under(tmp_path / "hdfs")


@pytest.fixture
def local_spark(hdfs: LocalHdfsCluster, tmp_path: Path) -> Iterator:
    """A local-mode PySpark session whose Hadoop client writes with the cluster's replication; its
    JVM is stopped afterwards (not left for the interpreter's exit)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    tmp = tmp_path / "spark-tmp"
    tmp.mkdir()
    builder = (SparkSession.builder.master("local[1]").appName("streamchaos-hdfs")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.local.dir", str(tmp))
               .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={tmp} -XX:-UsePerfData"))
    for key, value in hdfs.client_conf().items():
        builder = builder.config(f"spark.hadoop.{key}", value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            gateway.proc.stdin.close()  # the gateway JVM exits when its stdin closes
            gateway.proc.wait(30)
            SparkContext._gateway = SparkContext._jvm = None


def test_spark_writes_parquet_and_a_streaming_checkpoint_to_hdfs(hdfs: LocalHdfsCluster, local_spark) -> None:
    spark = local_spark
    base = f"/it/spark-{uuid.uuid4().hex[:8]}"
    url = f"{hdfs.default_fs}{base}"
    spark.range(100).write.parquet(f"{url}/numbers")
    assert spark.read.parquet(f"{url}/numbers").count() == 100

    fs = hdfs.filesystem()

    def run_query(batches: int) -> int:
        query = (spark.readStream.format("rate").option("rowsPerSecond", 10).load().writeStream.format("noop")
                 .option("checkpointLocation", f"{url}/checkpoint").trigger(processingTime="500 milliseconds").start())
        try:
            wait_for(lambda: fs.exists(f"{base}/checkpoint/commits/{batches - 1}"), 90,
                     f"micro-batch {batches - 1} committed to the checkpoint on HDFS", last=lambda: query.lastProgress)
        finally:
            query.stop()
        return min(p["batchId"] for p in query.recentProgress)

    assert run_query(2) == 0
    assert fs.exists(f"{base}/checkpoint/metadata") and fs.exists(f"{base}/checkpoint/offsets/0")
    assert fs.cat_file(f"{base}/checkpoint/commits/0").startswith(b"v1")
    # the same query started again reads its checkpoint back from HDFS and goes on after the last commit
    assert run_query(4) >= 2
    assert fs.info(f"{base}/checkpoint/commits/0")["replication"] == 2


def test_batch_writes_committed_on_hdfs_are_read_and_temporary_is_not(hdfs: LocalHdfsCluster) -> None:
    """foreachBatch's batch writes on HDFS (issue 27, item 7): through WebHDFS listings, a ``_SUCCESS``
    marks a committed directory, ``_temporary`` never counts, and a replayed append is a duplicate."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pytest_streamchaos.observe.file_sink import FileSinkCollector
    from pytest_streamchaos.observe.storage import locate

    def parquet(ids: list[int]) -> bytes:
        buf = io.BytesIO()
        pq.write_table(pa.table({"id": ids}), buf)
        return buf.getvalue()

    fs, root = hdfs.filesystem(), f"/it/{uuid.uuid4().hex[:8]}/lake"
    fs.pipe_file(f"{root}/batch=0/part-00000-a-c000.snappy.parquet", parquet([1, 2]))
    fs.pipe_file(f"{root}/batch=0/_SUCCESS", b"")
    fs.pipe_file(f"{root}/batch=1/_temporary/0/task_0/part-00000-b-c000.snappy.parquet", parquet([3]))
    c = FileSinkCollector(locate(f"{hdfs.default_fs}{root}", hdfs), "id")
    c.poll()
    assert sorted(int(i) for i in c.outputs().ids) == [1, 2] and c.mode == "commits"
    fs.pipe_file(f"{root}/batch=0/part-00000-c-c000.snappy.parquet", parquet([1, 2]))  # the replay's append
    fs.pipe_file(f"{root}/batch=0/_SUCCESS", b"")
    c.stop()
    assert sorted(int(i) for i in c.outputs().ids) == [1, 1, 2, 2] and c.errors == []
