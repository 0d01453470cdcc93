"""The rows a job's outputs hold at the end of a run, whole, for a reference run to compare
(:mod:`pytest_streamchaos.analysis.reference`): a Kafka topic read from its beginning to its end offsets
as a committed reader sees it (``read_committed``: an aborted transaction's records are not output), a
file sink's committed files (:meth:`~pytest_streamchaos.observe.file_sink.FileSinkCollector.rows`).

A Kafka message's value is a row when it is a JSON object; any other value is the row ``{"value": ...}``;
the message key is kept beside it (an update stream's key).
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from pytest_streamchaos.facts import OutputRows
from pytest_streamchaos.poll import poll

#: how long the whole read of one topic may take (it has ended: no writer is left)
READ_TIMEOUT_S = 60.0


def kafka_rows(bootstrap_servers: str, topic: str, name: str | None = None) -> OutputRows:
    """Every committed message of ``topic``, partition by partition in offset order, as rows."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"streamchaos-rows-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "logger": logging.getLogger("pytest_streamchaos.observe.librdkafka")})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        parts = sorted(meta.partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        got: dict[int, list[tuple[int, str | None, Any]]] = {p: [] for p in parts}
        done = {p for p in parts if ends[p] == 0}

        def read() -> bool:
            for msg in consumer.consume(1000, timeout=0.5):
                p, offset = msg.partition(), msg.offset()
                if msg.error() is not None or p is None or offset is None:
                    continue
                key = msg.key()
                got[p].append((offset, None if key is None else key.decode(errors="replace"), _row(msg.value())))
                if offset + 1 >= ends[p]:
                    done.add(p)
            # a read_committed reader stops short of the end offsets by the transaction markers
            position = {tp.partition: tp.offset for tp in consumer.position([TopicPartition(topic, p) for p in parts])}
            done.update(p for p in parts if position.get(p, -1) >= ends[p])
            return len(done) == len(parts)

        poll(read, READ_TIMEOUT_S, lambda _: RuntimeError(
            f"reading the rows of output topic {topic} did not reach its end offsets {ends} within "
            f"{READ_TIMEOUT_S:g}s"), interval=0.0)
    finally:
        consumer.close()
    ordered = [m for p in parts for m in sorted(got[p], key=lambda m: m[0])]
    return OutputRows(name or topic, [m[2] for m in ordered], [m[1] for m in ordered])


def _row(value: bytes | None) -> dict[str, object]:
    if value is None:
        return {"value": None}
    try:
        obj = json.loads(value)
    except ValueError:
        return {"value": value.decode(errors="replace")}
    return obj if isinstance(obj, dict) else {"value": obj}


def output_rows(collector: Any, own: dict[str, str] | None = None) -> list[OutputRows]:
    """The rows of every output ``collector`` reads (one collector, or :class:`~.outputs.Outputs` of
    several): a collector with rows of its own (a file sink, a table) gives them; a Kafka topic's are read
    from the topic. ``own``: the run's own topics (their names change per run) by what the test calls them
    (``output``); a topic the test named keeps its name."""
    parts = getattr(collector, "parts", None) or [collector]
    out: list[OutputRows] = []
    for part in parts:
        rows = getattr(part, "rows", None)
        if callable(rows):
            out.append(OutputRows(part.name, rows(), table=bool(getattr(part, "table", False))))
            continue
        for topic in part.topics:
            out.append(kafka_rows(part.bootstrap_servers, topic, (own or {}).get(topic, topic)))
    return out
