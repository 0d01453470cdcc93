"""The job's side of a fixed Kafka port, checked before the job starts.

A job that hard-codes ``localhost:9092`` (``chaos.run(..., kafka_port=9092)``) reaches the stack's Kafka through
the bootstrap port the cluster answers on there, then through each broker's address as the metadata advertises
it. When either does not answer, Spark's Kafka clients do not fail: they retry until their API timeout, twice
("Timed out waiting for a node assignment. Call: listNodes" after two minutes). So the run asks first, as the
job's client will: a Kafka Metadata request on the job's ``localhost:<port>`` (the address a JVM's client takes:
IPv4 first, and Kafka's client keeps the family of the first address), then an ApiVersions request to every
broker that reply advertises (:mod:`pytest_streamchaos.netem.probe`), and fails in one line naming what did not
answer and why.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

from pytest_streamchaos.netem.probe import ask, kafka_metadata_v4, metadata_brokers
from pytest_streamchaos.poll import poll
from pytest_streamchaos.runner.errors import RunError
from pytest_streamchaos.stack.base import LinkProxy

#: how long the port may take to answer (a proxy just created, a broker just healed) before the run fails
ANSWER_TIMEOUT_S = 15.0
_WHY = {"refused": "nothing listens there", "closed": "the connection was closed before a reply",
        "reset": "the connection was reset", "timeout": "no reply"}


def job_addresses(port: int, host: str = "localhost") -> list[str]:
    """The addresses a JVM's Kafka client connects to for ``host``: the IPv4 ones when there are any (Java's
    default order), else the IPv6 ones (Kafka's client keeps only the first address's family)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return []
    v4 = [str(i[4][0]) for i in infos if i[0] == socket.AF_INET]
    return list(dict.fromkeys(v4 or [str(i[4][0]) for i in infos]))


def unanswered(port: int, links: Sequence[LinkProxy], timeout: float = 3.0) -> str | None:
    """Why the job's ``localhost:port`` or a broker it advertises does not answer Kafka now (None: all did)."""
    addresses = job_addresses(port)
    if not addresses:
        return f"localhost does not resolve on this host, so the job's localhost:{port} leads nowhere"
    for address in addresses:
        outcome, frame, _ = ask(port, kafka_metadata_v4(), timeout, address)
        if frame is None:
            return (f"the job's localhost:{port} ({address}) did not answer Kafka's Metadata request: "
                    f"{_WHY.get(outcome, outcome)}{_via(links, port)}")
        try:
            brokers = metadata_brokers(frame)
        except ValueError as exc:
            return f"the job's localhost:{port} ({address}) answered, but not as Kafka: {exc}"
        for node, host, node_port in brokers:
            outcome, reply, _ = ask(node_port, None, timeout, host)
            if reply is None:
                return (f"broker {node}, which localhost:{port} advertises at {host}:{node_port}, did not answer "
                        f"Kafka's ApiVersions request: {_WHY.get(outcome, outcome)}{_via(links, node_port)}")
    return None


def _via(links: Sequence[LinkProxy], port: int) -> str:
    """`` (the proxy job-bootstrap-9092 there leads to 127.0.0.1:41234)`` when one of the job's links listens on
    ``port``."""
    for link in links:
        if link.listen_port == port:
            return f" (the proxy {link.name} there leads to {link.upstream})"
    return ""


def check_kafka_port(port: int, links: Sequence[LinkProxy], timeout: float = ANSWER_TIMEOUT_S) -> None:
    """Wait up to ``timeout`` for the job's ``localhost:port`` and the brokers it advertises to answer Kafka;
    :class:`RunError` in one line naming what did not answer and why, before the job starts."""
    why: list[str | None] = [None]

    def answered() -> bool:
        why[0] = unanswered(port, links)
        return why[0] is None

    poll(answered, timeout, interval=0.5, clock=time.monotonic, on_timeout=lambda _: RunError(
        f"kafka_port={port}: {why[0]}, still after {timeout:g}s; a job that hard-codes localhost:{port} would wait "
        "minutes for a broker (\"Timed out waiting for a node assignment\") before it failed"))
