"""The ctypes binding to librdkafka's mock cluster, in process: no helper, no client traffic."""

from __future__ import annotations

import glob
import json
import socket

import pytest

from pytest_streamchaos.stack import kafka_mock
from pytest_streamchaos.stack.kafka_broker_process import BrokerState, serve
from pytest_streamchaos.stack.kafka_mock import MockCluster, MockError, MockUnavailableError


def _listening(host_port: str) -> bool:
    host, port = host_port.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except OSError:
        return False


def test_library_is_found_and_exports_the_mock_api():
    path = kafka_mock.find_librdkafka()
    assert "librdkafka" in path
    lib = kafka_mock.load()
    assert lib.rd_kafka_mock_cluster_new.restype is not None


def test_cluster_lifecycle_topic_and_controls():
    with MockCluster(3) as mc:
        hosts = mc.bootstrap_servers.split(",")
        assert mc.broker_ids == [1, 2, 3]
        assert len(hosts) == 3 and all(h.startswith("127.0.0.1:") for h in hosts)
        assert all(_listening(h) for h in hosts)
        mc.topic_create("t", partitions=3, replication=3)
        mc.partition_set_leader("t", 0, 2)
        mc.broker_set_rtt(1, 50)
        mc.broker_set_rtt(1, 0)
        mc.broker_set_down(3)
        mc.broker_set_up(3)
        mc.coordinator_set("group", "g", 1)
        mc.push_request_errors(kafka_mock.API_KEYS["Produce"], [6, 6])
        mc.clear_request_errors(kafka_mock.API_KEYS["Produce"])
    assert not mc.alive
    assert not any(_listening(h) for h in hosts), "destroy() must close the listeners"
    mc.destroy()  # idempotent


@pytest.mark.parametrize(
    "call",
    [
        lambda mc: mc.broker_set_down(9),
        lambda mc: mc.broker_set_rtt(1, -5),
        lambda mc: mc.topic_create("x", partitions=1, replication=4),
        lambda mc: mc.topic_create("x", partitions=0, replication=1),
        lambda mc: mc.partition_set_leader("t", 0, 7),
        lambda mc: mc.coordinator_set("nope", "k", 1),
    ],
)
def test_bad_arguments_raise_clear_errors(call):
    with MockCluster(2) as mc:
        with pytest.raises(MockError) as exc:
            call(mc)
    assert "failed" in str(exc.value)


def test_calls_after_destroy_raise():
    mc = MockCluster(1)
    mc.destroy()
    with pytest.raises(MockError, match="destroyed"):
        mc.topic_create("t")


def test_missing_library_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("STREAMCHAOS_LIBRDKAFKA", str(tmp_path / "nope.so"))
    with pytest.raises(MockUnavailableError, match="STREAMCHAOS_LIBRDKAFKA"):
        kafka_mock.find_librdkafka()


def test_library_without_mock_symbols_names_the_fix(monkeypatch):
    # libc stands in for a librdkafka built without the mock API: it loads, but lacks the symbols.
    candidates = sorted(glob.glob("/lib*/libc.so.6") + glob.glob("/usr/lib*/*/libc.so.6")
                        + glob.glob("/lib/*/libc.so.6"))
    if not candidates:
        pytest.skip("cannot locate libc.so.6 on disk")
    monkeypatch.setenv("STREAMCHAOS_LIBRDKAFKA", candidates[0])
    monkeypatch.setattr(kafka_mock, "_lib", None)
    with pytest.raises(MockUnavailableError, match=r"lacks the mock-cluster symbols.*confluent-kafka>=2\.4"):
        kafka_mock.load()


def test_helper_protocol_replies_and_survives_bad_commands(capsys):
    """The helper's command loop, fed in process: every line gets one reply, errors included."""
    state = BrokerState(2)
    try:
        lines = [
            '{"id": 1, "op": "ping"}',
            "not json",
            '{"id": 2, "op": "create_topic", "name": "a", "partitions": 2, "replication": 2}',
            '{"id": 3, "op": "create_topic", "name": "a"}',
            '{"id": 4, "op": "broker_down", "broker": 2}',
            '{"id": 5, "op": "set_rtt", "broker": 1, "ms": 40}',
            '{"id": 6, "op": "broker_down"}',
            '{"id": 7, "op": "frobnicate"}',
            '{"id": 8, "op": "status"}',
            '{"id": 9, "op": "heal"}',
            '{"id": 10, "op": "status"}',
            '{"id": 11, "op": "shutdown"}',
            '{"id": 12, "op": "ping"}',  # after shutdown: never answered
        ]
        serve(state, iter(line + "\n" for line in lines))
    finally:
        state.cluster.destroy()
    replies = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    by_id = {r["id"]: r for r in replies}
    assert len(replies) == 12
    assert by_id[1]["result"] == "pong"
    assert by_id[None]["ok"] is False
    assert by_id[2] == {"id": 2, "ok": True, "result": "a"}
    assert by_id[3]["ok"] is False and "already exists" in by_id[3]["error"]
    assert by_id[6]["ok"] is False and "broker" in by_id[6]["error"]
    assert by_id[7]["ok"] is False and "frobnicate" in by_id[7]["error"]
    before = by_id[8]["result"]
    assert before["down"] == [2] and before["rtt_ms"] == {"1": 40, "2": 0}
    assert before["topics"] == {"a": {"partitions": 2, "replication": 2}}
    assert by_id[9]["result"]["up"] == [2] and by_id[9]["result"]["rtt_cleared"] == [1]
    after = by_id[10]["result"]
    assert after["down"] == [] and after["rtt_ms"] == {"1": 0, "2": 0}
    assert 12 not in by_id
