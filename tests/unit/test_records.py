"""The input record format: encode/decode round trip, padding, poison records."""

import json

import numpy as np
import pytest

from pytest_streamchaos.workload import records


def test_encode_record_roundtrip_and_padding():
    v = records.encode_record(17, 3, 1_700_000_000_123, size=100)
    assert len(v) == 100
    obj = json.loads(v)
    assert (obj["id"], obj["key"], obj["ts"]) == (17, "k3", 1_700_000_000_123)
    assert set(obj["pad"]) == {"x"}
    assert records.decode_record(v) == records.Record(17, 3, 1_700_000_000_123)


def test_record_smaller_than_its_fields_is_not_padded():
    v = records.encode_record(123456, 99, 1_700_000_000_000, size=10)
    assert json.loads(v) == {"id": 123456, "key": "k99", "ts": 1_700_000_000_000}


def test_encode_batch_matches_single_encoding_and_flags_poison():
    ids = np.arange(1000, 1012, dtype=np.int64)
    keys = np.arange(12, dtype=np.int64) % 5
    ts = np.full(12, 1_700_000_000_000, dtype=np.int64) + ids
    poison = np.zeros(12, dtype=bool)
    poison[[2, 7, 8]] = True
    out = records.encode_batch(ids, keys, ts, size=80, poison=poison)
    for j in range(12):
        if poison[j]:
            assert records.is_poison(out[j])
            assert b"%d" % ids[j] in out[j]  # still tells which input it was
        else:
            assert out[j] == records.encode_record(int(ids[j]), int(keys[j]), int(ts[j]), 80)
            assert len(out[j]) == 80
            assert not records.is_poison(out[j])


@pytest.mark.parametrize("kind", records.POISON_KINDS)
def test_every_poison_kind_is_rejected_by_decode(kind):
    v = records.encode_poison(5, 1, 1_700_000_000_000, kind)
    with pytest.raises(records.PoisonRecordError):
        records.decode_record(v)
    assert records.poison_kinds_of([v]) == [kind]


def test_poison_kinds_rotate_by_id():
    vals = [records.encode_poison(i, 0, 1_700_000_000_000) for i in range(6)]
    assert records.poison_kinds_of(vals) == list(records.POISON_KINDS) * 2


@pytest.mark.parametrize("value", [
    b'{"id":"1","key":"k1","ts":1}',  # id of the wrong type
    b'{"id":1,"key":"user1","ts":1}',  # key not k<n>
    b'[1,2,3]',
    b'\xff\xfe',
])
def test_decode_rejects_wrong_shapes(value):
    assert records.is_poison(value)


def test_unknown_poison_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown poison kind"):
        records.encode_poison(1, 1, 1, "nope")
