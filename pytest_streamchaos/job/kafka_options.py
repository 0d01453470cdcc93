"""Options of ``format("kafka")`` with the names and rules of Spark's Kafka connector.

Spark's option names are case-insensitive. ``kafka.*`` options go to the librdkafka clients; the
Java-client names librdkafka lacks are renamed (:data:`JAVA_TO_LIBRDKAFKA`) or refused with the
replacement (:data:`REFUSED_CLIENT_OPTIONS`). Any other option fails, naming it and the supported
ones: a misspelt option must not silently change what a job reads.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

#: source options (lower case) of Spark's Kafka connector that this emulation implements
SOURCE_OPTIONS = (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets", "maxOffsetsPerTrigger",
    "failOnDataLoss", "includeHeaders", "kafkaConsumer.pollTimeoutMs",
)
#: sink options besides ``kafka.*``
SINK_OPTIONS = ("topic", "includeHeaders")
#: options Spark itself puts into a query's option map; they belong to Spark, not to the source/sink
SPARK_OWNED_OPTIONS = ("checkpointLocation", "path", "queryName")

#: Java Kafka client settings librdkafka spells differently
JAVA_TO_LIBRDKAFKA = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "sasl.mechanism": "sasl.mechanisms",
    "delivery.timeout.ms": "message.timeout.ms",
}
#: Java Kafka client settings with no librdkafka equivalent (or that Spark forbids), and what to do
REFUSED_CLIENT_OPTIONS = {
    "key.deserializer": "keys are always read as bytes; cast or parse the key column",
    "value.deserializer": "values are always read as bytes; cast or parse the value column",
    "key.serializer": "keys are always written as bytes; cast the key column to string or binary",
    "value.serializer": "values are always written as bytes; cast the value column to string or binary",
    "auto.offset.reset": "use the source option startingOffsets",
    "enable.auto.commit": "the source commits no offsets to Kafka; progress is in the checkpoint",
    "interceptor.classes": "Java interceptors cannot run in the librdkafka client",
    "max.poll.records": "use the source option maxOffsetsPerTrigger to bound a micro-batch",
    "default.api.timeout.ms": "use the source option kafkaConsumer.pollTimeoutMs",
    "max.block.ms": "the producer never blocks; a full queue is drained and the write retried",
    "buffer.memory": "use kafka.queue.buffering.max.kbytes (librdkafka)",
    "sasl.jaas.config": "use kafka.sasl.username and kafka.sasl.password (librdkafka)",
    "ssl.truststore.location": "use kafka.ssl.ca.location with a PEM file (librdkafka reads no JKS)",
    "ssl.truststore.password": "use kafka.ssl.ca.location with a PEM file (librdkafka reads no JKS)",
    "ssl.truststore.type": "use kafka.ssl.ca.location with a PEM file (librdkafka reads no JKS)",
}

#: set by the harness: how long a read may stall on the broker before the task fails (ms)
ENV_KAFKA_TIMEOUT_MS = "STREAMCHAOS_KAFKA_TIMEOUT_MS"
_DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark's default: spark.network.timeout


class KafkaOptionError(ValueError):
    """An option is unknown, missing or malformed; the message names it and what is accepted."""


def _lower(options: dict[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def client_options(options: dict[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options as a librdkafka configuration (prefix removed, Java names mapped)."""
    conf: dict[str, str] = {}
    for key, value in options.items():
        if not key.lower().startswith("kafka."):
            continue
        name = key[len("kafka."):].lower()  # client property names are lower case in both clients
        if name in REFUSED_CLIENT_OPTIONS:
            raise KafkaOptionError(f"Kafka option '{key}' is not supported: {REFUSED_CLIENT_OPTIONS[name]}")
        conf[JAVA_TO_LIBRDKAFKA.get(name, name)] = value
    servers = conf.pop("bootstrap.servers", None)
    if not servers:
        raise KafkaOptionError("option 'kafka.bootstrap.servers' is required (e.g. '127.0.0.1:9092')")
    conf["bootstrap.servers"] = servers
    return conf


def _check_known(opts: dict[str, str], known: tuple[str, ...], what: str) -> None:
    allowed = {k.lower() for k in (*known, *SPARK_OWNED_OPTIONS)}
    unknown = sorted(k for k in opts if not k.startswith("kafka.") and k not in allowed)
    if unknown:
        raise KafkaOptionError(
            f"unsupported Kafka {what} option(s) {unknown}: the supported ones are "
            f"{', '.join(known)} and kafka.* (passed to the Kafka client)")


def _subscription(opts: dict[str, str]) -> tuple[str, Any]:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k, "").strip()]
    if len(given) != 1:
        raise KafkaOptionError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must "
                               f"be set (got {given or 'none'})")
    kind, raw = given[0], opts[given[0]].strip()
    if kind == "subscribe":
        topics = [t.strip() for t in raw.split(",") if t.strip()]
        return "subscribe", topics
    if kind == "subscribepattern":
        try:
            re.compile(raw)
        except re.error as e:
            raise KafkaOptionError(f"subscribePattern={raw!r} is not a valid regular expression: {e}") from None
        return "pattern", raw
    return "assign", _assign_spec(raw)


def _assign_spec(raw: str) -> dict[str, list[int]]:
    try:
        spec = json.loads(raw)
        ok = isinstance(spec, dict) and spec and all(
            isinstance(ps, list) and all(isinstance(p, int) for p in ps) for ps in spec.values())
    except ValueError:
        ok = False
    if not ok:
        raise KafkaOptionError(f"assign={raw!r}: use JSON like {{\"topicA\": [0, 1], \"topicB\": [2]}}")
    return {t: sorted(set(ps)) for t, ps in spec.items()}


def _offsets_spec(name: str, raw: str, allowed: tuple[str, ...], json_bad: int | None) -> str:
    raw = raw.strip()
    if raw.lower() in allowed:
        return raw.lower()
    try:
        spec = json.loads(raw)
        ok = isinstance(spec, dict) and all(
            isinstance(ps, dict) and all(isinstance(v, int) and v != json_bad and v >= -2 for v in ps.values())
            for ps in spec.values())
    except ValueError:
        ok = False
    if not ok:
        special = "-2 = earliest, -1 = latest" if json_bad is None else "-1 = latest"
        raise KafkaOptionError(f"{name}={raw!r}: use {' or '.join(repr(a) for a in allowed)} or JSON like "
                               f'{{"topic": {{"0": 42}}}} ({special})')
    return raw


def _positive_int(name: str, raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise KafkaOptionError(f"{name}={raw!r} must be a positive integer")
    return value


def _bool(name: str, raw: str | None, default: bool) -> bool:
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise KafkaOptionError(f"{name}={raw!r} must be 'true' or 'false'")
    return raw.strip().lower() == "true"


def parse_source_options(options: dict[str, str], *, streaming: bool, strict: bool = True) -> dict[str, Any]:
    """Validate ``format("kafka")`` source options as Spark's connector does.

    ``streaming``: startingOffsets defaults to latest (earliest for batch); endingOffsets is batch
    only. ``strict``: unknown options fail (``False`` keeps the old ``streamchaos_kafka`` leniency).
    """
    opts = _lower(options)
    if strict:
        _check_known(opts, SOURCE_OPTIONS, "source")
    if "bootstrap.servers" in opts and "kafka.bootstrap.servers" not in opts and not strict:
        options = {**options, "kafka.bootstrap.servers": opts["bootstrap.servers"]}
    kind, spec = _subscription(opts)
    starting = _offsets_spec("startingOffsets", opts.get("startingoffsets", "latest" if streaming else "earliest"),
                             ("earliest", "latest"), None)
    if not streaming and starting == "latest":
        raise KafkaOptionError("startingOffsets='latest' is not valid for batch queries (use 'earliest' or JSON)")
    ending = None
    if "endingoffsets" in opts:
        if streaming:
            raise KafkaOptionError("option 'endingOffsets' is not valid in streaming queries (batch only)")
        ending = _offsets_spec("endingOffsets", opts["endingoffsets"], ("latest",), -2)
    elif not streaming:
        ending = "latest"
    poll_ms = opts.get("kafkaconsumer.polltimeoutms") or (None if strict else opts.get("polltimeoutms"))
    poll_ms = poll_ms or os.environ.get(ENV_KAFKA_TIMEOUT_MS) or str(_DEFAULT_POLL_TIMEOUT_MS)
    max_rows = opts.get("maxoffsetspertrigger") or (None if strict else opts.get("maxrowspertrigger"))
    return {
        "client": client_options(options),
        "subscription": (kind, spec),
        "topics": spec if kind == "subscribe" else None,
        "starting": starting,
        "ending": ending,
        "max_rows": _positive_int("maxOffsetsPerTrigger", max_rows),
        "poll_timeout_s": _positive_int("kafkaConsumer.pollTimeoutMs", poll_ms) / 1000.0,
        "fail_on_data_loss": _bool("failOnDataLoss", opts.get("failondataloss"), True),
        "include_headers": _bool("includeHeaders", opts.get("includeheaders"), False),
    }


def parse_sink_options(options: dict[str, str]) -> dict[str, Any]:
    """Validate ``format("kafka")`` sink options: ``topic`` (optional if the data has a topic column),
    ``kafka.bootstrap.servers`` and other ``kafka.*`` producer settings."""
    opts = _lower(options)
    _check_known(opts, SINK_OPTIONS, "sink")
    topic = opts.get("topic", "").strip() or None
    return {"client": client_options(options), "topic": topic}
