"""An existing Kafka by its bootstrap address (``--chaos-kafka-bootstrap``, stack/kraft/attached.py): the faults
that need the brokers' hosts are refused before the job starts, naming why; bad input is one line at session
start. Nothing here starts a broker: an unreachable address is a port nothing listens on."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pytest_streamchaos.faults.registry import parse, refused_by_stack
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.capabilities import BrokerKill
from pytest_streamchaos.stack.kraft.attached import AttachedKafka, attach_kafka
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster

REFUSED = [("kill_broker", {}), ("isolate_broker", {}), ("pause", {"target": "broker"}),
           ("network_delay", {"target": "kafka", "ms": 100}), ("network_delay", {"target": "broker-1",
                                                                                       "ms": 100}),
           ("network_partition", {"target": "kafka"}), ("packet_loss", {"target": "kafka", "percent": 10}),
           ("bandwidth_limit", {"target": "kafka", "kbit": 100})]
ALLOWED = [("kill_executor", {}), ("kill_driver", {}), ("pause", {"target": "driver"}),
           ("network_delay", {"target": "driver", "ms": 100}), ("poison_records", {"count": 3})]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("kind", "kwargs"), REFUSED, ids=[f"{k}-{kw.get('target', '')}" for k, kw in REFUSED])
def test_a_fault_on_the_brokers_is_refused_on_an_attached_kafka_in_one_line(kind: str, kwargs: dict,
                                                                          tmp_path: Path) -> None:
    spec, spark = parse(kind, kwargs=kwargs), LocalSparkCluster(tmp_path / "spark")
    why = refused_by_stack(spec, spark, AttachedKafka("127.0.0.1:1"))
    assert why and "\n" not in why and why.startswith(f"@{kind} cannot run on the attached Kafka (AttachedKafka)")
    assert "without --chaos-kafka-bootstrap" in why
    assert refused_by_stack(spec, spark, LocalKafkaCluster(tmp_path / "kafka")) is None  # the stack's own take it


@pytest.mark.parametrize(("kind", "kwargs"), ALLOWED, ids=[f"{k}-{kw.get('target', '')}" for k, kw in ALLOWED])
def test_a_fault_that_spares_the_brokers_runs_on_an_attached_kafka(kind: str, kwargs: dict, tmp_path: Path) -> None:
    spec = parse(kind, kwargs=kwargs)
    assert refused_by_stack(spec, LocalSparkCluster(tmp_path / "spark"), AttachedKafka("127.0.0.1:1")) is None


def test_the_attached_kafka_is_what_every_client_uses_and_it_starts_nothing() -> None:
    kafka = AttachedKafka("10.0.0.5:9092,10.0.0.6:9092")
    assert kafka.manager == "attached" and not isinstance(kafka, BrokerKill)
    assert kafka.bootstrap_servers == kafka.job_bootstrap_servers == "10.0.0.5:9092,10.0.0.6:9092"
    assert kafka.controller_id() is None  # a KRaft client sees no controller: no false elections on the timeline
    kafka.start()  # nothing to start, nothing contacted
    kafka.stop()


@pytest.mark.parametrize("bad", ["localhost", "host:port", ":9092", "a:1,b"])
def test_a_bootstrap_that_is_not_host_port_is_one_line(bad: str) -> None:
    with pytest.raises(StackError, match="is not host:port; fix: --chaos-kafka-bootstrap=HOST:PORT") as exc:
        attach_kafka(bad)
    assert "\n" not in str(exc.value)


def test_a_bootstrap_nothing_answers_at_is_one_line_naming_the_fix() -> None:
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(StackError, match=f"no Kafka answers at {address} within 1s .*; fix: start the cluster") as exc:
        attach_kafka(address, timeout=1.0)
    assert "\n" not in str(exc.value)


def test_the_session_refuses_an_unreachable_bootstrap_at_its_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest(f"--chaos-kafka-bootstrap=127.0.0.1:{free_port()}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if "--chaos-kafka-bootstrap" in line]
    assert len(lines) == 1 and "no Kafka answers at" in lines[0] and "fix:" in lines[0], result.stderr.str()
    result.stdout.no_fnmatch_line("*passed*")  # nothing ran


def test_an_attached_kafka_on_the_docker_backend_is_refused_at_start(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("--chaos-kafka-bootstrap=127.0.0.1:9092", "--chaos-backend=docker")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-kafka-bootstrap: an existing Kafka is for the local backend*"])


def test_a_job_that_hard_codes_a_port_needs_the_attached_cluster_itself_there(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = {"10.0.0.5:9092": "cluster-A", "127.0.0.1:9092": "cluster-B", "127.0.0.1:19092": "cluster-A"}
    monkeypatch.setattr(AttachedKafka, "cluster_id", lambda self, timeout=5.0: ids[self.bootstrap_servers])
    kafka = AttachedKafka("10.0.0.5:9092")
    kafka.listen(19092)  # the same cluster answers there: nothing to add
    with pytest.raises(StackError, match="expects Kafka at localhost:9092, and there is cluster-B, not the cluster "
                                         "of --chaos-kafka-bootstrap=10.0.0.5:9092") as exc:
        kafka.listen(9092)
    assert "\n" not in str(exc.value) and "fix:" in str(exc.value)
