"""The check of a fixed Kafka port's job side (issue 47): the Metadata request it sends and the brokers it reads
from a reply, byte for byte as Kafka's protocol lays them out, and the addresses a JVM's client takes for
``localhost``. The exchange with real brokers is tests/integration/test_kafka_port.py's."""

from __future__ import annotations

import socket
import struct

import pytest

from pytest_streamchaos.netem.probe import kafka_metadata_v4, metadata_brokers
from pytest_streamchaos.runner import kafka_port


def _string(s: str | None) -> bytes:
    return struct.pack(">h", -1) if s is None else struct.pack(">h", len(s)) + s.encode()


def test_the_metadata_request_is_version_4_for_no_topic() -> None:
    frame = kafka_metadata_v4(correlation_id=7, client_id="probe")
    size, api, version, correlation = struct.unpack_from(">ihhi", frame)
    assert (size, api, version, correlation) == (len(frame) - 4, 3, 4, 7)
    assert frame[12:19] == _string("probe") and frame[19:] == struct.pack(">ib", 0, 0), "no topic, no auto-creation"


def test_the_brokers_of_a_metadata_v4_reply() -> None:
    brokers = [(1, "127.0.0.1", 41001, None), (2, "127.0.0.1", 41002, "rack-b")]
    body = struct.pack(">iii", 7, 0, len(brokers)) + b"".join(
        struct.pack(">i", n) + _string(h) + struct.pack(">i", p) + _string(r) for n, h, p, r in brokers)
    body += _string("cluster-id") + struct.pack(">ii", 1, 0)  # cluster id, controller, no topics
    assert metadata_brokers(body) == [(1, "127.0.0.1", 41001), (2, "127.0.0.1", 41002)]
    with pytest.raises(ValueError, match="not a Kafka Metadata v4 reply"):
        metadata_brokers(b"HTTP/1.1 400")


def test_a_jvm_client_takes_the_ipv4_addresses_of_localhost_first(monkeypatch: pytest.MonkeyPatch) -> None:
    both = [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 9092, 0, 0)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 9092))]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: both)
    assert kafka_port.job_addresses(9092) == ["127.0.0.1"]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: both[:1])
    assert kafka_port.job_addresses(9092) == ["::1"], "an IPv6-only localhost: the proxy on 127.0.0.1 is not there"


def test_a_port_where_nothing_listens_is_named_in_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: a connect is refused
        why = kafka_port.unanswered(port, [])
    assert why == (f"the job's localhost:{port} (127.0.0.1) did not answer Kafka's Metadata request: nothing "
                   "listens there")
