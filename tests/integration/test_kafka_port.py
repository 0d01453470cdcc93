"""``--chaos-kafka-port`` / ``kafka_port=``: the cluster also answers the job on a fixed bootstrap port, so
a job that hard-codes ``localhost:9092`` runs unchanged; a port held by another process is named."""

from __future__ import annotations

import os
import re
import socket
import uuid

import psutil
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from pytest_streamchaos.stack import ports
from pytest_streamchaos.stack.base import StackError

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


def test_the_cluster_answers_the_job_on_a_fixed_port_through_toxiproxy(kafka, streamchaos_host) -> None:
    """A job that hard-codes localhost:<port> bootstraps through a proxy to a live broker; the metadata
    then leads its clients to every broker's own proxy (the job's listener). Killing the broker behind
    the bootstrap proxy moves it to a live one."""
    port = streamchaos_host.ports.free()
    kafka.create_topic("invoices", 1)
    kafka.listen(port)
    try:
        assert _roundtrip(f"localhost:{port}", "invoices") == [b"%d" % i for i in range(20)]
        behind = kafka.links.bootstrap[port].upstream
        first = next(n for n in kafka.nodes if f"{n.host}:{n.ports['job']}" == behind)
        kafka.kill_broker(first.node_id)
        assert kafka.links.bootstrap[port].upstream != behind, "the bootstrap proxy still leads to a dead broker"
        kafka.create_topic("invoices", 1)
        assert _roundtrip(f"127.0.0.1:{port}", "invoices", 5) == [b"%d" % i for i in range(5)]
    finally:
        kafka.unlisten(port)
    assert ports.port_holder(port) is None, "the proxy must release the port"


def test_a_taken_port_is_named_with_its_holder(kafka) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        holder = rf"pid {os.getpid()} \({re.escape(psutil.Process().name())}\)"  # python, or pytest (tox)
        with pytest.raises(StackError, match=rf"kafka port {port}: .* in use by {holder}"):
            kafka.listen(port)
