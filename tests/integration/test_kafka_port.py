"""``--chaos-kafka-port``: the embedded cluster also answers on a fixed bootstrap port, so a job that
hard-codes ``localhost:9092`` runs unchanged; a port held by another process is named."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from pytest_streamchaos.stack import ports
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

pytestmark = pytest.mark.integration


def _roundtrip(bootstrap: str, topic: str, n: int = 20) -> list[bytes]:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, b"%d" % i)
    assert p.flush(20) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[bytes] = []
        for _ in range(100):
            got += [m.value() for m in c.consume(50, 0.2) if m.error() is None]
            if len(got) >= n:
                break
        return got
    finally:
        c.close()


def test_cluster_answers_on_the_fixed_port_and_after_a_reset(tmp_path: Path) -> None:
    port = ports.free_port()
    cluster = LocalKafkaCluster(brokers=2, workdir=tmp_path, bootstrap_port=port)
    try:
        cluster.start()
        cluster.create_topic("invoices", 1)
        assert _roundtrip(f"localhost:{port}", "invoices") == [b"%d" % i for i in range(20)]
        old = cluster.bootstrap_servers
        cluster.reset()  # fresh and empty: what a run with fixed topic names starts from
        assert cluster.bootstrap_servers != old
        cluster.create_topic("invoices", 1)
        assert _roundtrip(f"127.0.0.1:{port}", "invoices", 5) == [b"%d" % i for i in range(5)]
        cluster.unlisten(port)
        assert ports.port_holder(port) is None
        cluster.listen(port)  # again, as the next run that names this port does
        assert _roundtrip(f"localhost:{port}", "invoices", 5)[:5] == [b"%d" % i for i in range(5)]
    finally:
        cluster.stop()
    assert ports.port_holder(port) is None, "the forwarder must release the port at stop"


def test_a_taken_port_is_named_with_its_holder(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cluster = LocalKafkaCluster(brokers=1, workdir=tmp_path, bootstrap_port=port)
        with pytest.raises(StackError, match=rf"kafka port {port}: .* in use by pid \d+ \(python"):
            cluster.start()
        assert not cluster.running
