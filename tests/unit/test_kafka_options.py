"""Options of format("kafka"): Spark's names (case-insensitive), defaults and errors."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from pytest_streamchaos.spark.kafka_format import sink_plan
from pytest_streamchaos.spark.kafka_options import (
    KafkaOptionError,
    client_options,
    parse_sink_options,
    parse_source_options,
)
from pytest_streamchaos.spark.kafka_sink import KafkaSinkError
from pytest_streamchaos.spark.source_state import load_initial, read_initial_offsets, save_initial, state_key

BASE = {"kafka.bootstrap.servers": "h:9092"}
TYPES = {"string": StringType(), "binary": BinaryType(), "int": IntegerType()}


def schema(**cols: str) -> StructType:
    """A schema without a JVM (StructType.fromDDL needs a session)."""
    return StructType([StructField(name, TYPES[t]) for name, t in cols.items()])


def src(streaming: bool = True, **options: str) -> dict:
    return parse_source_options({**BASE, **options}, streaming=streaming)


def test_every_supported_source_option(monkeypatch):
    monkeypatch.delenv("STREAMCHAOS_KAFKA_TIMEOUT_MS", raising=False)
    o = src(False, subscribe="a, b", startingOffsets='{"a": {"0": -2}}', endingOffsets='{"a": {"0": 9}}',
            maxOffsetsPerTrigger="50", failOnDataLoss="false", includeHeaders="true",
            **{"kafkaConsumer.pollTimeoutMs": "1500", "kafka.client.id": "job"})
    assert o["subscription"] == ("subscribe", ["a", "b"]) and o["topics"] == ["a", "b"]
    assert o["starting"] == '{"a": {"0": -2}}' and o["ending"] == '{"a": {"0": 9}}'
    assert o["max_rows"] == 50 and o["poll_timeout_s"] == 1.5
    assert o["fail_on_data_loss"] is False and o["include_headers"] is True
    assert o["client"] == {"client.id": "job", "bootstrap.servers": "h:9092"}


def test_defaults_streaming_latest_batch_earliest_to_latest(monkeypatch):
    monkeypatch.delenv("STREAMCHAOS_KAFKA_TIMEOUT_MS", raising=False)
    s, b = src(subscribe="a"), src(False, subscribe="a")
    assert (s["starting"], s["ending"], s["max_rows"], s["poll_timeout_s"]) == ("latest", None, None, 120.0)
    assert (b["starting"], b["ending"]) == ("earliest", "latest")
    assert s["fail_on_data_loss"] is True and s["include_headers"] is False
    monkeypatch.setenv("STREAMCHAOS_KAFKA_TIMEOUT_MS", "7000")  # the harness's link timeout
    assert src(subscribe="a")["poll_timeout_s"] == 7.0


def test_names_are_case_insensitive():
    o = parse_source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubScribe": "a", "STARTINGOFFSETS": "Earliest",
                              "maxoffsetspertrigger": "3"}, streaming=True)
    assert o["client"]["bootstrap.servers"] == "h:1" and o["starting"] == "earliest" and o["max_rows"] == 3


def test_subscribe_pattern_and_assign():
    assert src(subscribePattern="in-.*")["subscription"] == ("pattern", "in-.*")
    assert src(assign=json.dumps({"t": [1, 0, 1]}))["subscription"] == ("assign", {"t": [0, 1]})


@pytest.mark.parametrize("options, message", [
    ({}, "exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"),
    ({"subscribe": "a", "assign": '{"a": [0]}'}, "exactly one of"),
    ({"assign": "[0]"}, "assign='\\[0\\]': use JSON"),
    ({"subscribePattern": "("}, "not a valid regular expression"),
    ({"subscribe": "a", "startingOffsets": "newest"}, "startingOffsets='newest'"),
    ({"subscribe": "a", "endingOffsets": "latest"}, "'endingOffsets' is not valid in streaming"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, "maxOffsetsPerTrigger='0' must be a positive integer"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, "failOnDataLoss='maybe' must be 'true' or 'false'"),
    ({"subscribe": "a", "startingTimestamp": "1"}, r"unsupported Kafka source option\(s\) \['startingtimestamp'\]"),
    ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "'kafka.auto.offset.reset' is not supported: use"),
])
def test_bad_source_options_name_the_option(options, message):
    with pytest.raises(KafkaOptionError, match=message):
        src(**options)


def test_unknown_option_error_lists_the_supported_ones():
    with pytest.raises(KafkaOptionError) as err:
        src(subscribe="a", minPartitions="4")
    assert "minpartitions" in str(err.value)
    assert all(name in str(err.value) for name in ("subscribePattern", "includeHeaders", "kafka.*"))


def test_batch_only_rules():
    with pytest.raises(KafkaOptionError, match="'latest' is not valid for batch"):
        src(False, subscribe="a", startingOffsets="latest")
    with pytest.raises(KafkaOptionError, match="endingOffsets='earliest'"):
        src(False, subscribe="a", endingOffsets="earliest")
    with pytest.raises(KafkaOptionError, match="endingOffsets="):
        src(False, subscribe="a", endingOffsets='{"a": {"0": -2}}')  # -2 (earliest) is no end


def test_bootstrap_servers_required():
    with pytest.raises(KafkaOptionError, match="'kafka.bootstrap.servers' is required"):
        parse_source_options({"subscribe": "a"}, streaming=True)


def test_java_client_names_are_mapped():
    conf = client_options({**BASE, "kafka.fetch.max.wait.ms": "5", "kafka.sasl.mechanism": "PLAIN",
                           "kafka.receive.buffer.bytes": "1024"})
    assert conf == {"fetch.wait.max.ms": "5", "sasl.mechanisms": "PLAIN", "socket.receive.buffer.bytes": "1024",
                    "bootstrap.servers": "h:9092"}


def test_sink_options_and_spark_owned_ones():
    o = parse_sink_options({**BASE, "Topic": "out", "checkpointLocation": "/ck", "kafka.acks": "1"})
    assert o == {"client": {"acks": "1", "bootstrap.servers": "h:9092"}, "topic": "out"}
    with pytest.raises(KafkaOptionError, match=r"unsupported Kafka sink option\(s\) \['topics'\]"):
        parse_sink_options({**BASE, "topics": "out"})


def test_sink_plan_checks_columns_like_spark():
    opts = parse_sink_options(BASE)
    with pytest.raises(KafkaSinkError, match="Required attribute 'value' not found"):
        sink_plan(schema(key="string", topic="string"), opts)
    with pytest.raises(KafkaSinkError, match="topic option required when no 'topic' attribute"):
        sink_plan(schema(value="string"), opts)
    with pytest.raises(KafkaSinkError, match="partition attribute type must be int"):
        sink_plan(schema(value="string", topic="string", partition="string"), opts)
    plan = sink_plan(schema(value="binary", key="string", topic="string"), opts)
    assert plan["topic"] is None and plan["columns"] == ["key", "topic", "value"]
    assert sink_plan(schema(value="string"), {**opts, "topic": "o"})["topic"] == "o"


def test_initial_offsets_state(tmp_path):
    key = state_key("h:1", ["subscribe", ["a"]], "latest")
    assert key == state_key("h:1", ["subscribe", ["a"]], "latest") != state_key("h:1", ["subscribe", ["b"]], "latest")
    assert read_initial_offsets(tmp_path / "none") == [] and load_initial(tmp_path, key) is None
    save_initial(tmp_path, key, {"a": {"0": 5}})
    assert load_initial(tmp_path, key) == {"a": {"0": 5}}
    [doc] = read_initial_offsets(tmp_path)
    assert doc["topics"] == ["a"] and doc["offsets"] == {"a": {"0": 5}} and doc["t"] > 0
