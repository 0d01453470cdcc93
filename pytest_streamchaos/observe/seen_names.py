"""The names a test gives that only the running job can confirm, judged on what the run saw (docs/names.md).

Pure: each function takes what was observed -- Spark's progress of the job's queries, the first records or
rows an output showed (:class:`Sampled`), the failures of its tasks -- and returns the refusal in one line
(None: nothing wrong, or too little seen yet to say). The runner asks them during the warm-up
(:mod:`pytest_streamchaos.runner.phases.names`), before the load and its faults:

- :func:`unread_inputs`: ``inputs={topic: ...}`` that no query subscribes to, while the queries read others
  (Spark's ``sources[].description``: ``KafkaV2[Subscribe[orders]]``, ``SubscribePattern``, ``Assign``);
- :func:`unwritten_outputs`: Kafka topics of ``outputs=`` that got nothing while the job writes elsewhere (its
  Kafka sinks reported rows, or its producer asked for a topic that does not exist);
- :func:`idless`: an id spec (a field path, ``"key"``, a callable) that gave no input id for any of an output's
  first :data:`SAMPLE` records -- some records without ids are legitimate (poison, markers), none is a typo;
- :func:`missing_fields`: the fields an oracle reads (``AggregateOracle(value_field=...)``) that none of those
  records has.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.analysis.spelling import close_to, did_you_mean, listed
from pytest_streamchaos.records import BatchProgress

#: how many of an output's first records judge its names: none of them with an input id is a typo
SAMPLE = 10


@dataclass(frozen=True)
class Sampled:
    """One of an output's first records as the collector read it: its value (a Kafka record's bytes, a file's
    or table's row), its message key, and how many input ids were read from it (None: the reader failed,
    ``error`` says why)."""

    value: Any
    key: bytes | None = None
    ids: int | None = 0
    error: str = ""


# -- the fields of what was seen ----------------------------------------------------------------------------
def decoded(sample: Sampled) -> Any:
    """The record's value as an object: a row as it is, JSON bytes decoded (None: not JSON)."""
    value = sample.value
    if isinstance(value, bytes | str):
        try:
            return json.loads(value)
        except (ValueError, UnicodeDecodeError):
            return None
    return value


def fields_of(objects: Iterable[Any]) -> list[str]:
    """The top-level fields of the records that are objects, in the order first seen."""
    seen: dict[str, None] = {}
    for obj in objects:
        if isinstance(obj, Mapping):
            seen.update(dict.fromkeys(str(k) for k in obj))
    return list(seen)


def lookup(obj: Any, path: str) -> tuple[bool, list[str]]:
    """Whether dotted ``path`` is in ``obj`` (a string along the way is read as JSON, as the row reader does);
    if not, the fields where it stopped."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, str):
            try:
                cur = json.loads(cur)
            except ValueError:
                return False, []
        if not isinstance(cur, Mapping):
            return False, []
        if part not in cur:
            return False, [str(k) for k in cur]
        cur = cur[part]
    return True, []


def fields_note(samples: Sequence[Sampled], path: str | None = None) -> str:
    """``they have fields a, b, c (did you mean 'a'?)``, or what they are when they are not objects; for a
    nested ``path``, the fields where it stopped."""
    objects = [decoded(s) for s in samples]
    names = fields_of(objects)
    if not names:
        first = samples[0].value if samples else None
        return f"they are not JSON objects (the first: {str(first)[:60]!r})"
    if path and "." in path:
        stops = [f for o in objects for f in lookup(o, path)[1]]
        head = path.split(".")[0]
        if head in names and stops:
            inner = list(dict.fromkeys(stops))
            return f"{head!r} has fields {listed(inner)}{did_you_mean(path.split('.')[-1], inner)}"
    hint = did_you_mean(path.split(".")[0], names) if path else ""
    return f"they have fields {listed(names)}{hint}"


# -- ids ------------------------------------------------------------------------------------------------------
def idless(what: str, spec: Any, samples: Sequence[Sampled], n: int = SAMPLE) -> str | None:
    """The refusal of an id spec (``what`` names it: ``outputs['ledger']``) that gave no input id for any of the
    first ``n`` records (None while fewer were seen, or when one had an id)."""
    first = list(samples[:n])
    if len(first) < n or any(s.ids for s in first):
        return None
    errors = [s.error for s in first if s.error]
    why = f" (the reader: {errors[0]})" if errors else ""
    if spec == "key":
        keys = list(dict.fromkeys(repr(s.key) for s in first))
        return (f"{what} = 'key': none of the first {n} records has a message key that is an input id (keys: "
                f"{listed(keys, 5)}){why}; {fields_note(first)}: name the field with the input id instead")
    if callable(spec):
        name = getattr(spec, "__qualname__", repr(spec))
        return (f"{what}: the id reader {name} gave no input id for any of the first {n} records{why}; "
                f"{fields_note(first)}")
    if isinstance(spec, str):
        present = any(lookup(decoded(s), spec)[0] for s in first)
        if present:
            return (f"{what} = {spec!r}: the field is there but holds no input id in any of the first {n} records"
                    f"{why}: name a field of integer ids (or a callable (value, key) -> ids)")
        return (f"{what} = {spec!r}: none of the first {n} records has the field {spec!r}; "
                f"{fields_note(first, spec)}")
    return (f"{what}: none of the first {n} records has an 'id' or 'ids' field{why}; {fields_note(first)}: "
            "name the field with the input id")


def missing_fields(oracle: str, output: str, fields: Mapping[str, str | None], samples: Sequence[Sampled],
                   n: int = SAMPLE) -> str | None:
    """The refusal of the first field ``oracle`` reads (``fields``: argument -> JSON path; None: the default
    window, ``window`` or ``window_start``) that none of the first ``n`` records of ``output`` has (None while
    fewer were seen)."""
    first = list(samples[:n])
    if len(first) < n:
        return None
    objects = [decoded(s) for s in first]
    for arg, path in fields.items():
        if path is None:
            if any(isinstance(o, Mapping) and ("window" in o or "window_start" in o) for o in objects):
                continue
            return (f"{oracle} reads each output's window, but none of the first {n} records of {output} has a "
                    f"'window' object or 'window_start' / 'window_end'; {fields_note(first)}")
        if not any(lookup(o, path)[0] for o in objects):
            return (f"{oracle}({arg}={path!r}): none of the first {n} records of {output} has that field; "
                    f"{fields_note(first, path)}")
    return None


# -- topics ---------------------------------------------------------------------------------------------------
#: a Kafka source in a query's progress: ``KafkaV2[Subscribe[a, b]]``, ``KafkaSourceV1[SubscribePattern[x.*]]``,
#: ``KafkaV2[Assign[orders-0, orders-1]]``
_KAFKA_SOURCE = re.compile(r"Kafka\w*\[(Subscribe|SubscribePattern|Assign)\[(.*)\]\]")


@dataclass
class Subscriptions:
    """What the job's queries read, from their progress: Kafka topics, topic patterns, other sources."""

    topics: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)  #: descriptions of sources that are not Kafka's
    queries: set[str] = field(default_factory=set)  #: the queries that reported progress

    def reads(self, topic: str) -> bool:
        return topic in self.topics or any(_matches(p, topic) for p in self.patterns)

    def describe(self) -> str:
        parts = [*self.topics, *(f"the pattern {p!r}" for p in self.patterns)]
        return listed(parts) if parts else f"no Kafka topic (their sources: {listed(self.others, 3)})"


def _matches(pattern: str, topic: str) -> bool:
    try:
        return re.fullmatch(pattern, topic) is not None
    except re.error:
        return False


def subscriptions(batches: Iterable[BatchProgress]) -> Subscriptions:
    """What the queries that reported progress (``batches``: Spark's progress dicts) read."""
    out = Subscriptions()
    for b in batches:
        out.queries.add(str(b.get("id") or ""))
        for src in b.get("sources") or []:
            desc = str(src.get("description") or "")
            m = _KAFKA_SOURCE.search(desc)
            if m is None:
                if desc not in out.others:
                    out.others.append(desc)
                continue
            items = [i.strip() for i in m.group(2).split(",") if i.strip()]
            if m.group(1) == "SubscribePattern":
                out.patterns += [p for p in dict.fromkeys(items) if p not in out.patterns]
                continue
            if m.group(1) == "Assign":  # topic-partition: orders-0
                items = [i.rsplit("-", 1)[0] if i.rsplit("-", 1)[-1].isdigit() else i for i in items]
            out.topics += [t for t in dict.fromkeys(items) if t not in out.topics]
    return out


def unread_inputs(named: Sequence[str], seen: Subscriptions) -> str | None:
    """The refusal of ``inputs=`` topics no query reads, while the queries read others: every named one
    unread, or an unread one that misspells a topic the queries read and the test does not name (a topic read
    another way -- a static side of a join -- is not refused)."""
    unread = [t for t in named if not seen.reads(t)]
    if not unread or not (seen.topics or seen.patterns):
        return None
    unnamed = [t for t in seen.topics if t not in named]
    meant = {t: close_to(t, unnamed) for t in unread}
    if len(unread) < len(named) and not any(meant.values()):
        return None
    first = next((t for t in unread if meant[t]), unread[0])
    hint = f" (did you mean {meant[first]!r}?)" if meant[first] else ""
    return (f"inputs= names {first!r}, which no query of the job reads{hint}; its queries read {seen.describe()}: "
            "name the topics the job subscribes to")


#: the job's Kafka source asked for a topic the brokers do not have (the query stops before its first batch)
_NO_SOURCE_TOPIC = "UnknownTopicOrPartitionException"


def mentioned_topics(args: Sequence[str], script: str) -> list[str]:
    """The topic names a job's own text gives: its arguments that could be a topic's name, and the literal
    values of its ``.option("subscribe" / "assign" / "topic", ...)`` calls (the hint of a refusal, never its
    ground)."""
    import ast

    found = [a for a in args if re.fullmatch(r"[A-Za-z][A-Za-z0-9._-]{0,248}", a)]
    try:
        tree = ast.parse(script)
    except SyntaxError:
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "option" and len(node.args) == 2:
            key, value = node.args
            if isinstance(key, ast.Constant) and key.value in ("subscribe", "assign", "topic") \
                    and isinstance(value, ast.Constant) and isinstance(value.value, str):
                found += [t.strip() for t in value.value.split(",") if t.strip()]
    return list(dict.fromkeys(found))


def missing_source(named: Sequence[str], failures: Sequence[str], mentioned: Sequence[str]) -> str | None:
    """The refusal of ``inputs=`` when the job's Kafka source stopped on a topic the brokers do not have (the run
    creates only the named ones): the named topic its own text does not give, with the one it does give that the
    name misspells (``mentioned``: :func:`mentioned_topics`)."""
    if not named or not any(_NO_SOURCE_TOPIC in f and "not present in metadata" not in f for f in failures):
        return None
    unnamed = [t for t in mentioned if t not in named]
    for topic in (t for t in named if t not in mentioned):
        meant = close_to(topic, unnamed)
        if meant:
            return (f"inputs= names {topic!r}, but the job's Kafka source subscribes to a topic the brokers do not "
                    f"have ({_NO_SOURCE_TOPIC}; the run creates only the inputs= topics): did you mean {meant!r} "
                    "(the job's arguments or code name it)? name the topics the job subscribes to")
    also = f"; the job's arguments and code also name {listed(map(repr, unnamed))}" if unnamed else ""
    return (f"the job's Kafka source subscribes to a topic the brokers do not have ({_NO_SOURCE_TOPIC}; the run "
            f"creates only the inputs= topics: {listed(map(repr, named))}){also}: name every topic the job reads "
            "in inputs=")


#: the job's Kafka producer waited for a topic the brokers do not have (the stack's brokers create none on use)
_NO_TOPIC = re.compile(r"Topic (\S+?)\.? not present in metadata")


def missing_topics(messages: Iterable[str]) -> list[str]:
    """The topics the job's tasks failed to write because the brokers do not have them (task failure messages)."""
    return list(dict.fromkeys(m.group(1) for msg in messages for m in [_NO_TOPIC.search(msg or "")] if m))


def unwritten_outputs(received: Mapping[str, int], missing: Sequence[str], sinks_wrote: bool = False,
                      written: Sequence[str] = ()) -> str | None:
    """The refusal of ``outputs=`` Kafka topics the job does not write while it writes others: ``received``
    (every named Kafka output -> records it got so far) all nothing, and either the job's producer failed on a
    topic the test does not name (``missing``), or every Kafka sink of the job reported rows written
    (``sinks_wrote``) -- to ``written`` as far as the brokers tell (topics with records since the job started)."""
    if not received or any(received.values()):
        return None
    named = list(received)
    elsewhere = [t for t in missing if t not in received]
    if elsewhere:
        return (f"outputs= names {listed(map(repr, named))}, but the job writes to topic {elsewhere[0]!r}, which "
                f"does not exist (its Kafka producer found no such topic): name the topic it writes, e.g. "
                f"outputs={{{elsewhere[0]!r}: ...}}")
    if not sinks_wrote:
        return None
    where = f"to {listed(map(repr, written))}" if written else "to topics outputs= does not name"
    return (f"outputs= names {listed(map(repr, named))}, which got no record, but the job's Kafka sinks wrote rows "
            f"{where}: name the topics the job writes")
