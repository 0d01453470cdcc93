"""The input record format the generator writes and the example pipelines read.

A good record is one JSON object, padded with a ``pad`` field to a target size::

    {"id":17,"key":"k3","ts":1700000000123,"pad":"xxxxxxxx"}

``id`` is the unique input id, ``key`` the key (``"k<n>"``, also the Kafka message key) and ``ts``
the event time in epoch milliseconds. A *poison* record is malformed on purpose (see
``POISON_KINDS``); the generator flags it in the ground truth so a job is expected to reject it.

User records: a *record factory* (``Generator(record_factory=...)``) builds each value from a
:class:`RecordSpec` instead; :func:`normalise_record` turns what it returns into Kafka bytes, and
:func:`record_value` is what the callables that look at an input record get (``annotate``, an
oracle's ``copies`` / ``amount``; :mod:`pytest_streamchaos.usercode`).

Encoding uses preformatted ``bytes`` templates (``%``-formatting) rather than ``json.dumps``: it is
several times faster, and the generator must reach tens of thousands of records per second on one core.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_streamchaos.usercode import UserCodeError, annotation_what, name_of

#: The malformed shapes a poison record takes, in the order ``id % 3`` picks them:
#: ``not_json`` -- plain text; ``truncated`` -- a JSON object cut short;
#: ``missing_ts`` -- valid JSON without the ``ts`` field (a job with a schema sees a null event time).
POISON_KINDS: tuple[str, ...] = ("not_json", "truncated", "missing_ts")

_HEAD = b'{"id":%d,"key":"k%d","ts":%d'
_PAD_OPEN = b',"pad":"'
_PAD_CLOSE = b'"}'
_PAD_OVERHEAD = len(_PAD_OPEN) + len(_PAD_CLOSE)
_PAD = b"x" * 65536

#: The smallest size a good record can be padded to is what its fields take; ids and times of
#: realistic magnitude need about this much, smaller ``record_size`` values just mean "no padding".
MIN_RECORD_SIZE = len(b'{"id":0,"key":"k0","ts":1700000000000}')
MAX_RECORD_SIZE = len(_PAD)


class PoisonRecordError(ValueError):
    """Raised by :func:`decode_record` for a malformed (poison) record."""


@dataclass(frozen=True)
class Record:
    """One decoded good input record."""

    id: int
    key: int
    ts_ms: int


def key_bytes(key: int) -> bytes:
    """The Kafka message key of key number ``key`` (``b"k<n>"``)."""
    return b"k%d" % key


def encode_record(id_: int, key: int, ts_ms: int, size: int = 0) -> bytes:
    """Encode one good record, padded to ``size`` bytes when its fields take fewer."""
    head = _HEAD % (id_, key, ts_ms)
    n = size - len(head) - _PAD_OVERHEAD
    if n >= 0:
        return head + _PAD_OPEN + _PAD[:n] + _PAD_CLOSE
    return head + b"}"


def encode_poison(id_: int, key: int, ts_ms: int, kind: str | None = None) -> bytes:
    """Encode one malformed record of ``kind`` (default: chosen by ``id % 3``).

    Every kind still carries the id in readable form so that a human (or a dead-letter sink)
    can tell which input it was.
    """
    kind = kind or POISON_KINDS[id_ % len(POISON_KINDS)]
    if kind == "not_json":
        return b"poison id=%d key=k%d ts=%d" % (id_, key, ts_ms)
    if kind == "truncated":
        return b'{"id":%d,"key":"k%d","ts":' % (id_, key)
    if kind == "missing_ts":
        return b'{"id":%d,"key":"k%d"}' % (id_, key)
    raise ValueError(f"unknown poison kind {kind!r}; use one of {POISON_KINDS}")


def encode_batch(
    ids: np.ndarray,
    keys: np.ndarray,
    ts_ms: np.ndarray,
    size: int = 0,
    poison: np.ndarray | None = None,
) -> list[bytes]:
    """Encode many records at once (the generator's hot path).

    ``poison`` is an optional boolean mask; flagged records get :func:`encode_poison`.
    """
    head_t, pad, pad_open, pad_close = _HEAD, _PAD, _PAD_OPEN, _PAD_CLOSE
    room = size - _PAD_OVERHEAD
    out: list[bytes] = []
    append = out.append
    for i, k, t in zip(ids.tolist(), keys.tolist(), ts_ms.tolist(), strict=True):
        head = head_t % (i, k, t)
        n = room - len(head)
        append(head + pad_open + pad[:n] + pad_close if n >= 0 else head + b"}")
    if poison is not None and poison.any():
        for j in np.flatnonzero(poison).tolist():
            out[j] = encode_poison(int(ids[j]), int(keys[j]), int(ts_ms[j]))
    return out


def decode_record(value: bytes) -> Record:
    """Decode a good record; raise :class:`PoisonRecordError` for anything malformed."""
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError) as e:
        raise PoisonRecordError(f"not JSON: {value[:60]!r}") from e
    if not isinstance(obj, dict):
        raise PoisonRecordError(f"not a JSON object: {value[:60]!r}")
    missing = [f for f in ("id", "key", "ts") if f not in obj]
    if missing:
        raise PoisonRecordError(f"missing field(s) {missing}: {value[:60]!r}")
    key = obj["key"]
    if not (isinstance(obj["id"], int) and isinstance(obj["ts"], int) and isinstance(key, str)
            and key.startswith("k") and key[1:].isdigit()):
        raise PoisonRecordError(f"wrong field types: {value[:60]!r}")
    return Record(obj["id"], int(key[1:]), obj["ts"])


def is_poison(value: bytes) -> bool:
    """True if ``value`` is not a well-formed input record."""
    try:
        decode_record(value)
    except PoisonRecordError:
        return True
    return False


def poison_kinds_of(values: Sequence[bytes]) -> list[str | None]:
    """For tests and reports: which poison kind each value is (None for a good record)."""
    out: list[str | None] = []
    for v in values:
        if not is_poison(v):
            out.append(None)
        elif not v.startswith(b"{"):
            out.append("not_json")
        elif v.endswith(b'"ts":'):
            out.append("truncated")
        else:
            out.append("missing_ts")
    return out


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """What a record factory is given for one input record.

    ``id``: the unique input id (put it in any field, of any type that round-trips, e.g.
    ``str(rec.id)``); ``key``: ``"k<n>"`` (the default Kafka message key); ``key_index``: ``n``;
    ``ts``: the event time in epoch milliseconds (late records are already shifted back);
    ``rng``: a ``random.Random`` seeded from the generator's seed and the id, so the factory's
    output is a pure function of (seed, id) -- the same whatever the batching or rate.
    """

    id: int
    key: str
    key_index: int
    ts: int
    rng: random.Random


#: What a factory may return: a value (dict -> JSON, str, bytes) or a ``(key, value)`` pair, the key
#: being str / bytes / None (None: no message key).
FactoryValue = dict | str | bytes
FactoryOutput = FactoryValue | tuple[str | bytes | None, FactoryValue]
RecordFactory = Callable[[RecordSpec], Any]

_U64 = (1 << 64) - 1


def record_rng(seed: int, id_: int) -> random.Random:
    """The factory's ``rng`` for record ``id_`` under generator ``seed`` (deterministic per id)."""
    return random.Random(((seed & _U64) << 64) | (id_ & _U64))


def make_spec(seed: int, id_: int, key_index: int, ts_ms: int) -> RecordSpec:
    """The :class:`RecordSpec` a factory receives for one record."""
    return RecordSpec(id_, f"k{key_index}", key_index, ts_ms, record_rng(seed, id_))


def record_value(out: object) -> Any:
    """The record a factory made, as the callables that look at input records get it (see
    :mod:`pytest_streamchaos.usercode`): its return value, or the value of a ``(key, value)`` pair."""
    return out[1] if isinstance(out, tuple) and len(out) == 2 else out


def build_batch(
    factory: RecordFactory,
    seed: int,
    ids: np.ndarray,
    keys: np.ndarray,
    ts_ms: np.ndarray,
    poison: np.ndarray | None = None,
    annotate: Mapping[str, Callable[[Any], float]] | None = None,
    what: str = "record_factory",
) -> tuple[list[bytes], list[bytes | None], dict[str, np.ndarray]]:
    """Call ``factory`` once per record: (values, message keys, annotation columns).

    Each ``annotate`` callable gets the record the factory made (:func:`record_value`). Whatever
    one of them raises comes out as a :class:`~pytest_streamchaos.usercode.UserCodeError` naming it
    (``what`` names the factory, e.g. ``inputs['sales'] factory``) and the record's id.
    Poison records (``poison`` mask) still go through the factory (so annotations are defined) but
    their value is replaced by :func:`encode_poison`'s malformed bytes; the key is kept.
    """
    ann = {name: np.empty(ids.shape[0]) for name in annotate or {}}
    fns = [(name, fn, ann[name]) for name, fn in (annotate or {}).items()]
    values: list[bytes] = []
    msg_keys: list[bytes | None] = []
    for j, (i, k, t) in enumerate(zip(ids.tolist(), keys.tolist(), ts_ms.tolist(), strict=True)):
        spec = make_spec(seed, i, k, t)
        try:
            out = factory(spec)
        except Exception as e:  # a try block costs nothing until it catches
            raise UserCodeError(f"{what} {name_of(factory)}", e, f"record id {i}") from e
        try:
            mk, v = normalise_record(out, spec)
        except TypeError as e:  # it returned something that is not a record
            raise UserCodeError(f"{what} {name_of(factory)}", e, f"record id {i}") from e
        rec = record_value(out)
        for name, fn, col in fns:
            try:
                col[j] = fn(rec)
            except Exception as e:
                raise UserCodeError(annotation_what(name, fn), e, f"record id {i}") from e
        values.append(v)
        msg_keys.append(mk)
    if poison is not None and poison.any():
        for j in np.flatnonzero(poison).tolist():
            values[j] = encode_poison(int(ids[j]), int(keys[j]), int(ts_ms[j]))
    return values, msg_keys, ann


def _value_bytes(value: Any, id_: int) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":")).encode()
    raise TypeError(f"record factory returned a value of type {type(value).__name__} for id {id_}; "
                    "return a dict (sent as JSON), str, bytes, or a (key, value) pair")


def normalise_record(out: Any, spec: RecordSpec) -> tuple[bytes | None, bytes]:
    """``(message key, value bytes)`` of a factory's return value for ``spec``.

    A plain value keeps the generator's key (``spec.key``); a ``(key, value)`` pair sets its own
    (str / bytes, or None for no key).
    """
    if isinstance(out, tuple):
        if len(out) != 2:
            raise TypeError(f"record factory returned a {len(out)}-tuple for id {spec.id}; "
                            "a tuple must be (key, value)")
        key, value = out
        if key is not None and not isinstance(key, (str, bytes)):
            raise TypeError(f"record factory returned a key of type {type(key).__name__} for id "
                            f"{spec.id}; use str, bytes or None")
        kb = key.encode() if isinstance(key, str) else key
        return kb, _value_bytes(value, spec.id)
    return spec.key.encode(), _value_bytes(out, spec.id)
