"""Generator/collector argument checks and pure helpers (no broker needed)."""

import numpy as np
import pytest

from pytest_streamchaos.observe import collector as col
from pytest_streamchaos.observe import output_reader
from pytest_streamchaos.workload import generator as gen
from pytest_streamchaos.workload import poison, record_batches, send_log


@pytest.mark.parametrize("kwargs, match", [
    ({"rate": 0}, "rate must be > 0"),
    ({"key_space": 0}, "key_space"),
    ({"skew": -1}, "skew"),
    ({"late_fraction": 1.5}, "late_fraction"),
    ({"late_by_seconds": (5, 1)}, "late_by_seconds"),
    ({"poison": 3}, "fraction in \\(0, 1\\]"),
    ({"poison": object()}, "poison must be"),
    ({"partitions": 0}, "partitions"),
    ({"record_size": 10**6}, "record_size"),
    ({"topic": ""}, "topic is empty"),
])
def test_generator_rejects_bad_arguments(kwargs, match):
    args = {"bootstrap_servers": "127.0.0.1:1", "topic": "t", "rate": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        gen.Generator(**args)


def test_zipf_cdf_matches_definition():
    cdf = record_batches.zipf_cdf(4, 1.0)
    w = np.array([1, 1 / 2, 1 / 3, 1 / 4])
    np.testing.assert_allclose(cdf, np.cumsum(w) / w.sum())


def test_poison_fraction_is_per_id_and_reproducible():
    f = poison.poison_predicate(0.1, seed=3)
    ids = np.arange(200_000)
    whole = f(ids)
    split = np.concatenate([f(ids[:777]), f(ids[777:])])
    assert np.array_equal(whole, split)  # independent of batch boundaries
    assert 0.095 < whole.mean() < 0.105
    assert not np.array_equal(whole, poison.poison_predicate(0.1, seed=4)(ids))
    assert poison.poison_predicate(0, seed=0) is None
    assert poison.poison_predicate([2, 5], seed=0)(np.arange(6)).tolist() == [0, 0, 1, 0, 0, 1]


def test_buffers_grow_and_keep_content():
    b = send_log._Buffers(4)
    b.keys[:4] = [1, 2, 3, 4]
    b.ensure(9)
    assert b.capacity >= 9 and b.keys[:4].tolist() == [1, 2, 3, 4]
    assert np.isnan(b.send_ts[4:]).all() and (b.state[4:] == 0).all()


@pytest.mark.parametrize("value, seconds", [
    (1_700_000_000_000, 1.7e9),  # epoch ms
    (1_700_000_000, 1.7e9),  # epoch s
    ("2023-11-14T22:13:20Z", 1.7e9),
    ("2023-11-14T23:13:20.000+01:00", 1.7e9),
    ("2023-11-14 22:13:20", 1.7e9),  # naive = UTC
    ("1700000000000", 1.7e9),
])
def test_window_times_are_read_leniently(value, seconds):
    assert output_reader.time_s(value) == pytest.approx(seconds)


@pytest.mark.parametrize("key, n", [("k12", 12), (b"k3", 3), (7, 7), ("12", 12), ("user", -1), (None, -1),
                                    (True, -1), (b"\xff", -1)])
def test_key_numbers(key, n):
    assert output_reader.key_number(key) == n


def test_collector_rejects_bad_arguments():
    with pytest.raises(ValueError, match="topics"):
        col.Collector("127.0.0.1:1", [])
    with pytest.raises(ValueError, match="id_reader"):
        col.Collector("127.0.0.1:1", "t", id_reader=42)
