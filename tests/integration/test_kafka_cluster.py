"""The real Kafka cluster (Apache Kafka, KRaft, one JVM per node) with confluent-kafka clients: exact
topics, replication, transactions, broker faults on real processes, bad input, and the nodes' lifetime."""

from __future__ import annotations

import json
import signal
import textwrap
import threading
import time
import uuid

import psutil
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.kraft.plan import KAFKA_MAIN
from pytest_streamchaos.stack.local import LocalKafkaCluster
from pytest_streamchaos.testing import wait_for

pytestmark = pytest.mark.integration

#: Clients reconnect quickly, so a healed broker is seen within a second or two.
FAST = {"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500, "socket.connection.setup.timeout.ms": 3000}


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int | None = None, **conf) -> None:
    """Produce and require an acknowledgement for every record."""
    p = Producer({"bootstrap.servers": bootstrap, **FAST, **conf})
    errors: list = []
    for v in values:
        kw = {} if partition is None else {"partition": partition}
        p.produce(topic, v, on_delivery=lambda err, _m: err and errors.append(err), **kw)
    left = p.flush(30)
    assert left == 0 and not errors, f"{left} undelivered, errors {errors[:3]}"


def consume_all(bootstrap: str, topic: str, partitions: int, n: int, timeout: float = 30.0,
                **conf) -> list[bytes]:
    """Read up to ``n`` records from the start of every partition (no group management)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                  "enable.auto.commit": False, **FAST, **conf})
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            out += [m.value() for m in c.consume(1000, 0.2) if m.error() is None]
    finally:
        c.close()
    return out


def test_three_jvms_serve_a_replicated_topic(kafka):
    assert kafka.broker_ids == [1, 2, 3] and kafka.registered_brokers() == [1, 2, 3]
    jvms = [psutil.Process(n.pid) for n in kafka.nodes]
    assert all(KAFKA_MAIN in p.cmdline() for p in jvms), "each node is its own kafka.Kafka JVM"
    assert len({p.pid for p in jvms}) == 3
    topic = kafka.create_topic(f"replicated-{uuid.uuid4().hex[:6]}", partitions=3)
    states = wait_for(lambda: kafka.partition_states(topic), 10, f"every broker's metadata to list {topic}")
    assert sorted(states) == [0, 1, 2]
    assert all(len(s.replicas) == 3 and set(s.isr) == {1, 2, 3} for s in states.values())
    assert {s.leader for s in states.values()} == {1, 2, 3}, "leadership is spread over the nodes"
    assert kafka.effective_conf["min.insync.replicas"] == "2"
    eps = {e.name: e for e in kafka.endpoints()}
    assert sorted(eps) == ["broker-1", "broker-2", "broker-3"]
    assert set(eps["broker-1"].ports) == {"kafka", "replication", "controller"}
    kafka.delete_topic(topic)


def test_create_topic_is_exact_and_a_second_create_starts_empty(kafka):
    name = f"orders-{uuid.uuid4().hex[:6]}"
    assert kafka.create_topic(name, partitions=2) == name
    produce(kafka.bootstrap_servers, name, [b"from an earlier test"], partition=0)
    kafka.create_topic(name, partitions=3)  # the same name again: deleted and created anew
    assert sorted(kafka.partition_states(name)) == [0, 1, 2]
    assert consume_all(kafka.bootstrap_servers, name, 3, 1, timeout=2) == []
    kafka.delete_topic(name)
    assert kafka.partition_states(name) is None


def test_read_committed_sees_only_committed_transactions(kafka):
    topic = kafka.create_topic(f"tx-{uuid.uuid4().hex[:6]}", partitions=1)
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"tx-{uuid.uuid4()}", **FAST})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"aborted")
    assert p.flush(30) == 0  # written to the log (librdkafka's abort would purge an unsent record)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"committed")
    p.commit_transaction(30)
    assert consume_all(kafka.bootstrap_servers, topic, 1, 2, timeout=5, **{"isolation.level": "read_committed"}) \
        == [b"committed"]
    assert sorted(consume_all(kafka.bootstrap_servers, topic, 1, 2, timeout=5,
                              **{"isolation.level": "read_uncommitted"})) == [b"aborted", b"committed"]


def test_leader_kill_elects_a_new_leader_and_acks_all_loses_nothing(kafka):
    """SIGKILL of a partition's leader JVM under an acks=all producer: the controller fences it and
    elects a follower, the producer retries there, every acknowledged record is readable."""
    topic = kafka.create_topic(f"failover-{uuid.uuid4().hex[:6]}", partitions=1)
    leader = kafka.leader_of(topic, 0)
    acked: list[bytes] = []
    stop = threading.Event()

    def load() -> None:
        p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5, **FAST})
        i = 0
        while not stop.is_set():
            v = str(i).encode()
            p.produce(topic, v, on_delivery=lambda err, m: err is None and acked.append(m.value()))
            p.poll(0.002)
            i += 1
        assert p.flush(60) == 0

    t = threading.Thread(target=load)
    t.start()
    try:
        wait_for(lambda: len(acked) > 500, 30, "500 records acknowledged before the kill")
        killed_at = time.monotonic()
        kafka.kill_broker(leader)
        new = wait_for(lambda: (lead := kafka.leader_of(topic, 0)) != leader and lead, 30,
                       f"a leader other than broker {leader}")
        assert kafka.broker_state(leader) is None
        print(f"leader {leader} -> {new} in {time.monotonic() - killed_at:.1f}s")
        n = len(acked)
        wait_for(lambda: len(acked) > n + 500, 30, "acknowledgements to go on after the failover")
    finally:
        stop.set()
        t.join(90)
    kafka.restart_broker(leader)
    got = consume_all(kafka.bootstrap_servers, topic, 1, len(acked), timeout=30)
    assert set(acked) <= set(got), f"{len(set(acked) - set(got))} acknowledged records are gone"


def test_controller_kill_moves_the_quorum_leadership(kafka):
    controller = kafka.controller_id()
    assert controller in kafka.broker_ids
    kafka.kill_broker(controller)
    new = wait_for(lambda: (c := kafka.controller_id()) not in (None, controller) and c, 30,
                   f"a KRaft controller other than node {controller}")
    assert new in kafka.broker_ids
    kafka.heal()
    assert kafka.registered_brokers() == [1, 2, 3]


def test_paused_broker_answers_nothing_until_resumed(kafka):
    topic = kafka.create_topic(f"paused-{uuid.uuid4().hex[:6]}", partitions=1)
    leader = kafka.leader_of(topic, 0)
    kafka.pause_broker(leader)
    try:
        assert kafka.broker_state(leader) == "paused"
        p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all", "message.timeout.ms": 1500,
                      **FAST})
        failed: list = []
        p.produce(topic, b"x", on_delivery=lambda err, _m: failed.append(err))
        p.flush(10)
        assert failed and failed[0] is not None, "a record to a frozen leader is not acknowledged"
    finally:
        kafka.resume_broker(leader)
    assert kafka.broker_state(leader) == "running"
    produce(kafka.bootstrap_servers, topic, [b"after"], acks="all")


def test_heal_restarts_dead_nodes_and_restores_preferred_leaders(kafka):
    topic = kafka.create_topic(f"heal-{uuid.uuid4().hex[:6]}", partitions=3)
    # the admin client may ask a broker whose metadata has not caught up with the creation yet
    states = wait_for(lambda: kafka.partition_states(topic), 10, f"every broker's metadata to list {topic}")
    before = {p: s.leader for p, s in states.items()}
    kafka.kill_broker(2)
    wait_for(lambda: 2 not in kafka.registered_brokers(), 30, "broker 2 fenced")
    kafka.heal()
    assert kafka.alive_brokers() == [1, 2, 3]
    after = kafka.partition_states(topic)
    assert all(set(s.isr) == {1, 2, 3} for s in after.values())
    assert {p: s.leader for p, s in after.items()} == before


def test_a_single_node_cluster_has_replication_one(tmp_path):
    cluster = LocalKafkaCluster(tmp_path, brokers=1)
    try:
        cluster.start()
        assert (cluster.replication, cluster.min_isr) == (1, 1)
        topic = cluster.create_topic("single", partitions=2)
        produce(cluster.bootstrap_servers, topic, [b"a", b"b"], acks="all")
        assert len(consume_all(cluster.bootstrap_servers, topic, 2, 2)) == 2
    finally:
        cluster.stop()
    assert not any(n.alive for n in cluster.nodes)


def test_no_java_is_one_line_naming_the_fix_and_nothing_starts(tmp_path):
    cluster = LocalKafkaCluster(tmp_path, brokers=1, java_home=str(tmp_path / "no-jdk"))
    with pytest.raises(StackError, match=r"java not found: .* has no executable bin/java; install a JDK"):
        cluster.start()
    assert cluster.nodes == []


def test_a_node_that_cannot_format_its_storage_fails_naming_it(tmp_path):
    cluster = LocalKafkaCluster(tmp_path, brokers=1)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "broker-1").write_text("a file where the log directory should be")
    with pytest.raises(StackError, match=r"could not format broker-1's log directory .* fix: free disk space"):
        cluster.start()
    assert not any(n.alive for n in cluster.nodes)


def _gone(pid: int, started: float) -> bool:
    try:
        p = psutil.Process(pid)
        return p.create_time() != started or p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# slow (-m slow): 60 s; the reaper killing a SIGKILLed pytest's JVMs is in the default run as
# test_spark_cluster.py::test_sigkilled_pytest_leaves_no_jvm (4 s) and tests/unit/test_reaper.py
@pytest.mark.slow
def test_nodes_die_with_a_sigkilled_pytest(pytester):
    """A pytest process that is SIGKILLed mid-test leaves no broker JVM behind."""
    pidfile = pytester.path / "nodes.json"
    pytester.makepyfile(test_inner=textwrap.dedent(f"""
        import json, os, signal

        def test_killed(kafka):
            with open({str(pidfile)!r}, "w") as f:
                json.dump([[n.pid, __import__("psutil").Process(n.pid).create_time()] for n in kafka.nodes], f)
            os.kill(os.getpid(), signal.SIGKILL)
    """))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--chaos-kafka-brokers", "1", timeout=180)
    assert result.ret == -signal.SIGKILL, result.stdout.str()[-2000:]
    for pid, started in json.loads(pidfile.read_text()):
        wait_for(lambda pid=pid, started=started: _gone(pid, started), 20,
                 f"broker JVM pid {pid} to exit after its pytest died")
