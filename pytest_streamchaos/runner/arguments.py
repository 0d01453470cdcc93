"""The names and shapes of ``chaos.run``'s arguments that need no running job, checked by
:func:`~pytest_streamchaos.runner.spec.build_run` before anything starts (docs/names.md): the groups' numbers,
the topic and output names, the annotations an oracle reads by name, the topics an oracle names.

Each refusal is a ``ValueError`` in one line naming the argument, what was given and what exists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_streamchaos.analysis.oracle import Oracle, TumblingWindowOracle
from pytest_streamchaos.analysis.spelling import did_you_mean, listed
from pytest_streamchaos.observe.output_names import OutputKind, check_output_name, output_kind
from pytest_streamchaos.runner.groups import JobSetup, Load, Timing, Watch
from pytest_streamchaos.workload.records import MAX_RECORD_SIZE

#: what a Kafka topic's name may be (Kafka's own rule: letters, digits, '.', '_', '-'; at most 249)
TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def check_arguments(load: Load, watch: Watch, setup: JobSetup, timing: Timing) -> None:
    """Every check of this module (see its docstring)."""
    check_load(load)
    check_timing(timing)
    port = setup.kafka_port
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        raise ValueError(f"kafka_port={port!r} is not a port (1-65535), e.g. kafka_port=9092")
    for topic in load.inputs or {}:
        check_topic(topic, "inputs")
    for name in watch.outputs or {}:
        check_output_name(name)
        if output_kind(name) == OutputKind.KAFKA:
            check_topic(name, "outputs")
    check_annotations(watch.annotate, watch.oracle)
    check_oracle_topics(watch.oracle, watch.outputs)


def check_load(load: Load) -> None:
    """``Load``'s numbers: what the generator and the topics can take."""
    bounds: list[tuple[str, Any, bool, str]] = [
        ("partitions", load.partitions, _int(load.partitions) and load.partitions >= 1, "an int >= 1"),
        ("key_space", load.key_space, _int(load.key_space) and load.key_space >= 1, "an int >= 1"),
        ("skew", load.skew, _num(load.skew) and load.skew >= 0, "a number >= 0 (a Zipf exponent; 0: uniform)"),
        ("record_size", load.record_size, _int(load.record_size) and 0 <= load.record_size <= MAX_RECORD_SIZE,
         f"an int from 0 to {MAX_RECORD_SIZE} (bytes)"),
        ("late_fraction", load.late_fraction, _num(load.late_fraction) and 0 <= load.late_fraction <= 1,
         "a fraction from 0 to 1"),
    ]
    for name, value, ok, what in bounds:
        if not ok:
            raise ValueError(f"Load({name}={value!r}): must be {what}")


def check_timing(timing: Timing) -> None:
    """``Timing``'s seconds: each a number > 0 (``settle_seconds`` may be None: the default)."""
    for name in ("trigger_seconds", "warmup_timeout", "drain_timeout", "settle_seconds"):
        value = getattr(timing, name)
        if value is None and name == "settle_seconds":
            continue
        if not (_num(value) and value > 0):
            raise ValueError(f"Timing({name}={value!r}): must be a number of seconds > 0")


def check_topic(topic: Any, where: str) -> None:
    """A Kafka topic's name as Kafka takes it (the topic is created before the job starts)."""
    if not isinstance(topic, str) or not TOPIC.match(topic) or topic in (".", ".."):
        raise ValueError(f"{where}={{{topic!r}: ...}}: not a Kafka topic name (letters, digits, '.', '_', '-'; at "
                         "most 249)")


def check_annotations(annotate: Mapping[str, Any] | None, oracle: Oracle | None) -> None:
    """``annotate``'s names are strings, and every annotation the oracle reads by name (``copies="lines"``,
    ``amount="total"``) is one of them, with the did-you-mean: before the run, not when the analysis looks for
    it after the run."""
    names = list(annotate or {})
    for name in names:
        if not isinstance(name, str) or not name:
            raise ValueError(f"Watch(annotate={{{name!r}: ...}}): an annotation's name is a non-empty string, e.g. "
                             "annotate={'lines': lambda rec: len(rec['Items'])}")
    for arg, name in (oracle.annotation_names() if oracle is not None else {}).items():
        if name not in names:
            given = f"Watch(annotate=...) gives {listed(names)}" if names else "Watch(annotate=...) gives none"
            raise ValueError(f"{arg.rstrip('=)')}={name!r}) reads the annotation {name!r}, which no annotate= "
                             f"makes{did_you_mean(name, names)}; {given}: add annotate={{{name!r}: fn(record)}} or "
                             "pass the callable itself")


def check_oracle_topics(oracle: Oracle | None, outputs: Mapping[str, Any] | None) -> None:
    """The outputs an oracle names (``topic=``, ``side_topic=`` / ``late_topic=``) are outputs of the run: a name
    that is not would make every output ignored (lost) or never a side output."""
    if oracle is None:
        return
    kind = type(oracle).__name__
    side = "late_topic" if isinstance(oracle, TumblingWindowOracle) else "side_topic"
    for arg, topic in (("topic", oracle.topic), (side, oracle.side_topic)):
        if topic is None:
            continue
        if outputs is None:
            raise ValueError(f"{kind}({arg}={topic!r}): the run reads its own output topics, whose names the test "
                             f"does not know; leave {arg}= out, or name the job's outputs in outputs={{...}}")
        if topic not in outputs:
            raise ValueError(f"{kind}({arg}={topic!r}) is not an output of the run{did_you_mean(topic, outputs)}; "
                             f"outputs= names {listed(outputs)}")


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _num(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)

