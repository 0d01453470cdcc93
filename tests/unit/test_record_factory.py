"""User record factories: what the factory is given, how its output is normalised, determinism,
poison, annotations -- without a broker (``records.build_batch`` is the generator's per-record path)."""

import dataclasses
import json
import random

import numpy as np
import pytest

from pytest_streamchaos import RecordSpec
from pytest_streamchaos.workload import records
from pytest_streamchaos.workload.generator import Generator


def invoice(rec: RecordSpec) -> dict:
    return {"InvoiceNumber": str(rec.id), "StoreID": rec.key, "InvoiceTime": rec.ts,
            "Lines": rec.rng.randint(1, 4), "Total": round(rec.rng.uniform(1, 100), 2)}


def batch(factory=invoice, poison=None, annotate=None, seed=7):
    ids = np.arange(100, 110, dtype=np.int64)
    keys = ids % 3
    ts = 1_700_000_000_000 + ids
    return records.build_batch(factory, seed, ids, keys, ts, poison, annotate)


def test_spec_is_frozen_slotted_and_carries_id_key_ts_rng():
    spec = records.make_spec(1, 42, 3, 1_700_000_000_123)
    assert (spec.id, spec.key, spec.key_index, spec.ts) == (42, "k3", 3, 1_700_000_000_123)
    assert isinstance(spec.rng, random.Random)
    assert not hasattr(spec, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.id = 1  # type: ignore[misc]


def test_factory_is_called_per_record_and_dicts_are_sent_as_json_with_the_generator_key():
    seen = []
    values, keys, _ = batch(lambda rec: seen.append(rec) or {"InvoiceNumber": str(rec.id), "ts": rec.ts})
    assert [s.id for s in seen] == list(range(100, 110))
    assert [json.loads(v)["InvoiceNumber"] for v in values] == [str(i) for i in range(100, 110)]
    assert keys == [b"k%d" % (i % 3) for i in range(100, 110)]


@pytest.mark.parametrize(("out", "expected"), [
    ({"a": 1}, (b"k3", b'{"a":1}')),
    ("text", (b"k3", b"text")),
    (b"\x00raw", (b"k3", b"\x00raw")),
    (("mykey", {"a": 1}), (b"mykey", b'{"a":1}')),
    ((b"kb", "v"), (b"kb", b"v")),
    ((None, b"v"), (None, b"v")),
])
def test_normalise_record_accepts_values_and_key_value_pairs(out, expected):
    assert records.normalise_record(out, records.make_spec(0, 1, 3, 0)) == expected


@pytest.mark.parametrize("out", [42, ["a"], (1, "v"), ("k", 3.5), ("a", "b", "c")])
def test_normalise_record_rejects_other_types_naming_the_id(out):
    with pytest.raises(TypeError, match="id 1"):
        records.normalise_record(out, records.make_spec(0, 1, 3, 0))


def test_same_seed_same_output_whatever_the_batching_and_another_seed_differs():
    a = batch()[0]
    ids = np.arange(100, 110, dtype=np.int64)
    halves = [records.build_batch(invoice, 7, part, part % 3, 1_700_000_000_000 + part)[0]
              for part in (ids[:4], ids[4:])]
    assert a == halves[0] + halves[1]
    assert batch(seed=8)[0] != a


def test_poison_replaces_the_value_with_malformed_bytes_and_keeps_annotations():
    poison = np.zeros(10, bool)
    poison[[1, 5]] = True
    values, keys, ann = batch(poison=poison, annotate={"lines": lambda rec: rec["Lines"]})
    assert values[1] == records.encode_poison(101, 2, 1_700_000_000_101)
    assert values[5] == records.encode_poison(105, 0, 1_700_000_000_105)
    assert all(json.loads(v)["InvoiceNumber"] == str(100 + j) for j, v in enumerate(values) if not poison[j])
    assert keys[1] == b"k2"  # id 101
    clean = batch(annotate={"lines": lambda rec: rec["Lines"]})
    assert np.array_equal(ann["lines"], clean[2]["lines"])
    assert ann["lines"].min() >= 1


def test_late_shift_is_what_the_factory_sees():
    values, _, _ = batch(lambda rec: {"id": rec.id, "ts": rec.ts})
    assert [json.loads(v)["ts"] for v in values] == list(range(1_700_000_000_100, 1_700_000_000_110))


def test_generator_checks_factory_arguments():
    with pytest.raises(ValueError, match=r"record_factory must be a callable \(spec: RecordSpec\)"):
        Generator("x:1", "t", rate=10, record_factory=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="annotate= needs a record_factory"):
        Generator("x:1", "t", rate=10, annotate={"n": lambda rec: 1})
    g = Generator("x:1", "t", rate=10, record_factory=invoice, annotate={"n": lambda rec: 1})
    assert g.sent().annotations == {"n": pytest.approx(np.empty(0))}
