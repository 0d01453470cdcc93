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

from pytest_streamchaos.machine import ports
from pytest_streamchaos.netem.probe import ask, kafka_metadata_v4, metadata_brokers
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.runner.kafka_port import check_kafka_port, unanswered
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


def test_a_port_the_session_listens_on_outlives_a_run_that_listened_on_it_too(kafka, streamchaos_host) -> None:
    """``--chaos-kafka-port 9092`` and a run's ``kafka_port=9092``: the run's end must not take the session's
    bootstrap proxy with it (the next test's job, relying on the session's port, would find nothing there)."""
    port = streamchaos_host.ports.free()
    kafka.listen(port)  # the session's
    try:
        kafka.listen(port)  # a run's
        kafka.unlisten(port)  # the run's end
        assert unanswered(port, kafka.job_links()) is None, "the session's port must still answer"
    finally:
        kafka.unlisten(port)
    assert ports.port_holder(port) is None, "the last unlisten releases the port"


def test_the_jobs_side_of_a_fixed_port_is_checked_and_what_does_not_answer_is_named(kafka, streamchaos_host) -> None:
    """Issue 47: a job that hard-codes localhost:<port> waited two minutes ("Timed out waiting for a node
    assignment") for a port that did not answer Kafka. The run asks first, as the job's client will: Metadata on
    the bootstrap port, ApiVersions on every broker the reply advertises; what does not answer is named."""
    port = streamchaos_host.ports.free()
    kafka.listen(port)
    try:
        links = kafka.job_links()
        if not links:
            pytest.skip(f"no Toxiproxy on this stack: {kafka.links.reason}")
        check_kafka_port(port, links, timeout=10)  # the real brokers answer through their proxies
        outcome, frame, _ = ask(port, kafka_metadata_v4(), 5.0)
        advertised = {(h, p) for _, h, p in metadata_brokers(frame)}
        assert outcome == "reply" and advertised == {("127.0.0.1", kafka.links.nodes[n].listen_port)
                                                     for n in kafka.alive_brokers()}
        bootstrap = kafka.links.bootstrap[port]
        upstream, dead = bootstrap.upstream, streamchaos_host.ports.free()
        bootstrap.set_upstream(f"127.0.0.1:{dead}")  # a broker that is not there
        why = unanswered(port, links) or ""
        # the proxy accepts, cannot reach its upstream, and drops the job's connection (a reset, or a close)
        assert re.fullmatch(rf"the job's localhost:{port} \(127\.0\.0\.1\) did not answer Kafka's Metadata request: "
                            rf"the connection was (reset|closed before a reply) \(the proxy job-bootstrap-{port} there "
                            rf"leads to 127\.0\.0\.1:{dead}\)", why), why
        with pytest.raises(RunError, match=rf"^kafka_port={port}: the job's localhost:{port} .* still after 1s; a job"):
            check_kafka_port(port, links, timeout=1)
        bootstrap.set_upstream(upstream)
        node = kafka.links.nodes[kafka.alive_brokers()[-1]]
        node.disable()  # the broker's own proxy, where the metadata leads the job's client
        why = unanswered(port, links) or ""
        assert why.startswith("broker ") and f"at 127.0.0.1:{node.listen_port}, did not answer Kafka's ApiVersions " \
               "request: nothing listens there" in why, why
    finally:
        kafka.links.reset()
        kafka.unlisten(port)
