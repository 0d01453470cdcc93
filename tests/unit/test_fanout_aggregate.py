"""Jobs that do not emit one output per input: fan-out (IdentityOracle(copies=)) and id-less
aggregates (AggregateOracle), with planted drops / duplicates and known answers."""

import numpy as np
import pytest
from synthetic import aggregate_trace, fanout_trace, stateless_trace

from pytest_streamchaos.analysis.aggregate import AggregateOracle
from pytest_streamchaos.analysis.oracle import COPIES as COPIES_ANNOTATION
from pytest_streamchaos.analysis.oracle import IdentityOracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.validate import validate
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.records import OutputRecords
from pytest_streamchaos.workload import records

N = 20_000
COPIES = 1 + np.arange(N) % 4  # 1..4 outputs per input


def counts(r):
    return r.lost, r.duplicates, r.incorrect


# ---------------------------------------------------------------- fan-out
def test_fanout_correct_trace_is_silent():
    r = validate(fanout_trace(COPIES), IdentityOracle(copies="copies"))
    assert counts(r) == (0, 0, 0) and r.missing_copies == 0
    assert r.expected == N and r.reliability("exactly-once") == 1.0


def test_copies_callable_gets_each_record_as_the_factory_made_it_when_it_is_sent():
    """``copies=fn(record)``: the generator calls it on each record (the oracle hands it over as an
    annotation); the analysis reads the numbers, never calls it."""
    oracle = IdentityOracle(copies=lambda rec: len(rec["items"]))
    tr = fanout_trace(COPIES)
    ids = np.asarray(tr.sent.ids, dtype=np.int64)
    _, _, ann = records.build_batch(lambda spec: {"id": spec.id, "items": [0] * int(1 + spec.id % 4)}, 0, ids,
                                    ids % 7, np.zeros(ids.size, np.int64), annotate=oracle.record_callables())
    assert list(ann) == [COPIES_ANNOTATION]
    tr.sent.annotations.update(ann)
    r = validate(tr, oracle)
    assert counts(r) == (0, 0, 0) and r.missing_copies == 0 and r.expected == N
    with pytest.raises(ValueError, match="annotate=oracle.record_callables()"):
        validate(fanout_trace(COPIES), oracle)  # nobody computed it: says how


@pytest.mark.parametrize(("drop_every", "dup_every"), [(50, 70), (7, 13)])
def test_fanout_planted_drops_and_duplicates_are_counted_exactly(drop_every, dup_every):
    drop = np.arange(0, N, drop_every)
    dup = np.setdiff1d(np.arange(1, N, dup_every), drop)  # one copy fewer and one more would cancel
    r = validate(fanout_trace(COPIES, drop=drop, duplicate=dup), IdentityOracle(copies="copies"))
    assert counts(r) == (drop.size, dup.size, 0)
    assert r.missing_copies == drop.size
    assert set(r.lost_ids.tolist()) == set(drop.tolist())
    assert set(r.duplicate_ids.tolist()) == set(dup.tolist()) and (r.duplicate_extra == 1).all()
    assert r.reliability("exactly-once") == pytest.approx(1 - (drop.size + dup.size) / N)
    assert "expected copies missing" in r.describe()


def test_fanout_without_copies_sees_the_extra_outputs_as_duplicates():
    r = validate(fanout_trace(COPIES), IdentityOracle())
    assert r.lost == 0 and r.duplicates == int((COPIES - 1).sum())


def test_zero_copies_means_expected_nowhere_and_a_seen_one_is_incorrect():
    c = np.array([0, 2, 1])
    tr = fanout_trace(c)
    tr.outputs = OutputRecords.from_lists([1e10] * 4, [[0], [1], [1], [2]])
    r = validate(tr, IdentityOracle(copies="copies"))
    assert (r.expected, *counts(r)) == (2, 0, 0, 1)


def test_copies_complete_when_the_last_copy_arrives():
    tr = fanout_trace(np.array([3]), latency=0.2)
    r = validate(tr, IdentityOracle(copies="copies"))
    assert r.pair_first_ts[0] == pytest.approx(tr.sent.send_ts[0] + 0.2 + 0.002)


def test_copies_must_be_known_and_valid():
    tr = fanout_trace(COPIES[:10])
    with pytest.raises(ValueError, match="no annotation 'lines'"):
        validate(tr, IdentityOracle(copies="lines"))
    with pytest.raises(ValueError, match="non-negative integers"):
        tr.sent.annotations["half"] = np.full(10, 1.5)
        validate(tr, IdentityOracle(copies="half"))


def test_identity_default_is_unchanged_by_copies_one():
    tr = stateless_trace(rate=200, duration=10, drop=np.arange(0, 2000, 9), duplicate=np.arange(1, 2000, 11))
    a, b = validate(tr, IdentityOracle()), validate(tr, IdentityOracle(copies=1))
    assert counts(a) == counts(b) and a.processed_ok == b.processed_ok
    assert np.array_equal(a.pair_first_ts, b.pair_first_ts, equal_nan=True)
    assert a.reliability("exactly-once") == b.reliability("exactly-once")
    assert "missing_copies" not in a.counts() and "resolution" not in a.to_dict()


# ---------------------------------------------------------------- aggregates
def group_truth(tr, drop, dup, size=5.0):
    """Exact expected (lost, duplicated) records: per finalized (key, window), the net change."""
    oracle = AggregateOracle(size)
    exp = oracle.expected(tr.sent)
    delta = np.zeros(len(tr.sent))
    delta[drop] -= 1
    delta[dup] += 1
    net = np.bincount(exp.groups, weights=delta[exp.rows])
    return int(-net[net < 0].sum()), int(net[net > 0].sum())


@pytest.mark.parametrize("mode", ["update", "append"])
def test_aggregate_correct_trace_is_silent(mode):
    tr = aggregate_trace(rate=500, duration=40, output_mode=mode)
    r = validate(tr, AggregateOracle(5.0, output_mode=mode))
    assert counts(r) == (0, 0, 0) and r.resolution == "aggregate"
    assert r.expected > 0.8 * len(tr.sent) and r.reliability("exactly-once") == 1.0


@pytest.mark.parametrize(("drop_every", "dup_every"), [(100, 250), (37, 53)])
def test_aggregate_planted_drops_and_duplicates_are_counted_exactly(drop_every, dup_every):
    tr0 = aggregate_trace(rate=500, duration=40)
    n = len(tr0.sent)
    drop, dup = np.arange(0, n, drop_every), np.arange(3, n, dup_every)
    tr = aggregate_trace(rate=500, duration=40, drop=drop, duplicate=dup)
    r = validate(tr, AggregateOracle(5.0))
    lost, dups = group_truth(tr, drop, dup)
    assert (r.lost, r.duplicates, r.incorrect) == (lost, dups, 0)
    assert lost > 0  # (drops and duplicates in one group cancel out: the resolution is per aggregate)
    assert r.lost_ids.size == 0 and r.wrong_groups
    assert r.wrong_groups[0]["group"].startswith("key ")


def test_aggregate_sum_with_constant_amounts_is_exact_and_with_varying_ones_close():
    tr0 = aggregate_trace(rate=500, duration=40)
    n = len(tr0.sent)
    drop = np.arange(0, n, 101)
    for amounts, rel in ((np.full(n, 2.5), 0.0), (1.0 + np.arange(n) % 5, 0.05)):
        tr = aggregate_trace(rate=500, duration=40, amounts=amounts, drop=drop)
        r = validate(tr, AggregateOracle(5.0, agg="sum", amount="amount"))
        lost, _ = group_truth(tr, drop, np.empty(0, np.int64))
        assert r.duplicates == 0 and r.incorrect == 0
        assert abs(r.lost - lost) <= rel * lost, (r.lost, lost)
        clean = aggregate_trace(rate=500, duration=40, amounts=amounts)
        assert counts(validate(clean, AggregateOracle(5.0, agg="sum", amount="amount"))) == (0, 0, 0)


def test_append_mode_second_emission_of_a_group_is_a_duplicate_update_mode_not():
    tr = aggregate_trace(rate=200, duration=30, output_mode="append")
    o = tr.outputs
    j = 3  # emit output j again later
    tr.outputs = OutputRecords(
        np.append(o.arrival_ts, o.arrival_ts[-1] + 1), np.zeros(len(o) + 2, np.int64), o.ids,
        keys=np.append(o.keys, o.keys[j]), window_start=np.append(o.window_start, o.window_start[j]),
        window_end=np.append(o.window_end, o.window_end[j]), values=np.append(o.values, o.values[j]))
    r = validate(tr, AggregateOracle(5.0, output_mode="append"))
    assert (r.lost, r.duplicates, r.incorrect) == (0, int(o.values[j]), 0)
    assert r.wrong_groups[0]["emissions"] == 2
    assert counts(validate(tr, AggregateOracle(5.0, output_mode="update"))) == (0, 0, 0)


def test_aggregate_output_for_a_group_without_inputs_is_incorrect():
    tr = aggregate_trace(rate=200, duration=30, keys=2)
    o = tr.outputs
    tr.outputs = OutputRecords(
        np.append(o.arrival_ts, o.arrival_ts[-1]), np.zeros(len(o) + 2, np.int64), o.ids,
        keys=np.append(o.keys, 1), window_start=np.append(o.window_start, o.window_start[0] + 1.0),
        window_end=np.append(o.window_end, o.window_end[0] + 1.0), values=np.append(o.values, 4.0))
    r = validate(tr, AggregateOracle(5.0))
    assert (r.lost, r.duplicates) == (0, 0) and r.incorrect >= 1  # unaligned window: unknown group


def test_late_inputs_make_a_range_acceptable():
    tr = aggregate_trace(rate=200, duration=30, keys=1, output_mode="append")
    late = np.arange(3000, 3010)  # event time moved back into the first, long finalized window
    tr.sent.event_ts[late] = tr.sent.event_ts[0] + 0.1
    oracle = AggregateOracle(5.0, output_mode="append")
    exp = oracle.expected(tr.sent)
    assert exp.late.sum() == late.size
    g = oracle.assign(tr.outputs, tr.sent, exp)
    assert (g >= 0).all()
    hi = np.bincount(exp.groups, minlength=g.max() + 1)
    lo = np.bincount(exp.groups[~exp.late], minlength=g.max() + 1)
    first = np.argmin(tr.outputs.window_start)
    assert hi[g[first]] - lo[g[first]] == late.size
    # the job may have dropped the late inputs (Spark's watermark) or counted them: both are right
    for expected in (lo, hi):
        tr.outputs.values[:] = expected[g]
        assert counts(validate(tr, oracle)) == (0, 0, 0)
    tr.outputs.values[first] = hi[g[first]] + 1
    assert counts(validate(tr, oracle)) == (0, 1, 0)
    tr.outputs.values[first] = lo[g[first]] - 2
    assert counts(validate(tr, oracle)) == (2, 0, 0)


def test_chaos_run_reports_aggregate_resolution():
    tr = aggregate_trace(rate=500, duration=40, drop=np.arange(0, 20_000, 100))
    run = ChaosRun.from_trace(tr, AggregateOracle(5.0))
    assert run.resolution == "aggregate" and run.lost > 0
    text = run.describe()
    assert "resolution: per aggregate, not per record" in text and "lost" in text
    d = run.to_dict()["validation"]
    assert d["resolution"] == "aggregate" and d["wrong_groups"]
    assert 0 < run.reliability < 1


def test_aggregate_needs_values_and_checks_arguments():
    tr = stateless_trace(rate=10, duration=5)
    with pytest.raises(ValueError, match="OutputRecords.values"):
        validate(tr, AggregateOracle(1.0))
    with pytest.raises(ValueError, match="needs amount"):
        AggregateOracle(1.0, agg="sum")
    with pytest.raises(ValueError, match="output_mode"):
        AggregateOracle(1.0, output_mode="merge")


# ---------------------------------------------------------------- collector reading aggregates
def test_collector_reads_key_window_and_amount_fields_without_ids():
    o = AggregateOracle(60.0, key_field="StoreID")
    c = Collector("127.0.0.1:1", "out", **o.collector_options())
    v = b'{"window": {"start": "2024-01-01T00:00:00", "end": "2024-01-01T00:01:00"}, "StoreID": "k3", "count": 17}'
    ids, key, w0, w1, amount = c._reader.read(v, None)
    assert (ids, key, w1 - w0, amount) == ([], 3, 60.0, 17.0)
    with pytest.raises(ValueError, match="no field 'count'"):
        c._reader.read(b'{"StoreID": "k3"}', None)
    nested = Collector("127.0.0.1:1", "out", window_field="w", amount_field=lambda obj: obj["agg"]["total"])
    ids, key, w0, w1, amount = nested._reader.read(b'{"id": 5, "key": "k1", "w": {"start": 0, "end": 10}, '
                                            b'"agg": {"total": 2.5}}', b"k9")
    assert (ids, key, w0, w1, amount) == ([5], 1, 0.0, 10.0, 2.5)
    plain = Collector("127.0.0.1:1", "out")
    assert np.isnan(plain._reader.read(b'{"id": 1}', None)[4])
    with pytest.raises(ValueError, match="no `id`"):
        plain._reader.read(b'{"count": 1}', None)


def test_update_mode_latency_is_measured_from_the_last_input_an_emission_reflects():
    """An update-mode emission reports a group's running count long before its window closes: its
    latency reference is the input at which the count reached the emitted value (never negative)."""
    from pytest_streamchaos.analysis.aggregate import AggregateOracle
    from pytest_streamchaos.records import OutputRecords, SentRecords

    sent = SentRecords(ids=np.arange(5), keys=np.array([0, 0, 0, 0, 1]),
                       event_ts=np.array([1.0, 2.0, 3.0, 4.0, 30.0]), send_ts=np.array([1.0, 2.0, 3.0, 4.0, 30.0]))
    outputs = OutputRecords(arrival_ts=np.array([2.5, 4.5]), offsets=np.zeros(3, np.int64), ids=np.empty(0, np.int64),
                            keys=np.array([0.0, 0.0]), window_start=np.array([0.0, 0.0]),
                            window_end=np.array([10.0, 10.0]), values=np.array([2.0, 4.0]))
    oracle = AggregateOracle(10, watermark_seconds=5)
    ref = oracle.reference_send_ts(sent, outputs, np.empty(0, np.int64))
    assert ref.tolist() == [2.0, 4.0]
    append = AggregateOracle(10, watermark_seconds=5, output_mode="append", closer="any")
    assert append.reference_send_ts(sent, outputs, np.empty(0, np.int64)).tolist() == [30.0, 30.0]
