"""Guarantee validation: planted drops / duplicates / misplacements, and a property test against a
straightforward dict-based transcription of PGVal's Algorithms 1-3."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import stateless_trace, windowed_trace

from pytest_streamchaos.analysis.oracle import CustomOracle, IdentityOracle, TumblingWindowOracle
from pytest_streamchaos.analysis.validate import IdIndex, validate
from pytest_streamchaos.records import OutputRecords, SentRecords


def test_clean_stateless_run_is_exactly_once():
    r = validate(stateless_trace(rate=100, duration=10), IdentityOracle())
    assert (r.expected, r.processed_ok, r.lost, r.duplicates, r.incorrect) == (1000, 1000, 0, 0, 0)
    assert r.guarantee_delivered == "exactly-once"
    assert r.reliability("exactly-once") == 1.0


def test_drops_and_duplicates_are_counted_per_id_and_per_appearance():
    tr = stateless_trace(rate=100, duration=10, drop=np.array([3, 4, 500]), duplicate=np.array([7, 8]))
    # one id duplicated three more times: extra appearances count individually
    extra = OutputRecords.from_lists([99.0, 99.1], [[7], [7]])
    tr.outputs = OutputRecords(
        np.concatenate((tr.outputs.arrival_ts, extra.arrival_ts + tr.outputs.arrival_ts[-1])),
        np.concatenate((tr.outputs.offsets, tr.outputs.offsets[-1] + extra.offsets[1:])),
        np.concatenate((tr.outputs.ids, extra.ids)),
    )
    r = validate(tr, IdentityOracle())
    assert r.lost == 3 and sorted(r.lost_ids.tolist()) == [3, 4, 500]
    assert r.duplicates == 4
    assert dict(zip(r.duplicate_ids.tolist(), r.duplicate_extra.tolist(), strict=True)) == {7: 3, 8: 1}
    assert r.incorrect == 0
    assert r.guarantee_delivered == "none"
    assert r.reliability("at-least-once") == pytest.approx(997 / 1000)
    assert r.reliability("exactly-once") == pytest.approx(995 / 1000)
    assert r.reliability("at-most-once") == pytest.approx(995 / 1000)


def test_guarantee_classes():
    base = stateless_trace(rate=10, duration=10)
    dup = stateless_trace(rate=10, duration=10, duplicate=np.array([1]))
    drop = stateless_trace(rate=10, duration=10, drop=np.array([1]))
    assert validate(dup, IdentityOracle()).guarantee_delivered == "at-least-once"
    assert validate(drop, IdentityOracle()).guarantee_delivered == "at-most-once"
    assert validate(base, IdentityOracle()).delivers("at-least-once")


def test_filtered_ids_must_not_appear():
    tr = stateless_trace(rate=10, duration=2)  # ids 0..19, all output
    r = validate(tr, IdentityOracle(filter=lambda s: s.ids < 5))
    assert r.expected == 15 and r.lost == 0
    assert r.incorrect == 5 and r.incorrect_ids.tolist() == [0, 1, 2, 3, 4]
    assert r.misplaced[0][2] == "nowhere (dropped by the job)"
    assert r.guarantee_delivered == "none"


def test_unknown_ids_are_incorrect():
    sent = SentRecords(np.array([10, 20, 30]), np.zeros(3, np.int64), np.zeros(3), np.zeros(3))
    outs = OutputRecords.from_lists([1, 2, 3, 4], [[10], [20], [30], [40]])
    r = validate((sent, outs), IdentityOracle())
    assert r.incorrect == 1 and r.incorrect_ids.tolist() == [40]
    assert "never sent" in r.misplaced[0][2]


def test_windowed_misplaced_late_and_unfinalized():
    # key 0; windows of 10 s; watermark 0; event 5 is sent late (after event 25)
    ev = np.array([1.0, 2.0, 11.0, 25.0, 5.0, 31.0, 42.0])
    sent = SentRecords(np.arange(7), np.zeros(7, np.int64), ev, np.arange(7.0))
    oracle = TumblingWindowOracle(10.0, late_topic="late")
    outs = OutputRecords.from_lists(
        [10, 20, 30, 31, 50],
        [[0], [2, 1], [3], [4], [5, 6]],  # id 1 misplaced into [10,20); id 4 late -> side output
        keys=[0, 0, 0, np.nan, 0],
        window_start=[0.0, 10.0, 20.0, np.nan, 30.0],
        topic=["out", "out", "out", "late", "out"],
    )
    r = validate((sent, outs), oracle)
    # finalized: windows ending <= 42: [0,10) {0,1,4}, [10,20) {2}, [20,30) {3}, [30,40) {5}; 6 unfinalized
    assert r.expected == 6
    assert r.late == 1 and r.side_output == 1
    assert r.lost == 1 and r.lost_ids.tolist() == [1]
    assert r.incorrect == 2  # id 1 in [10,20), id 6 in [30,40)
    assert sorted(r.incorrect_ids.tolist()) == [1, 6]
    assert r.ignored == 0
    found = {m[0]: m for m in r.misplaced}
    assert "window [10.000, 20.000)" in found[1][1] and "window [0.000, 10.000)" in found[1][2]


def test_outputs_of_unfinalized_windows_are_ignored():
    ev = np.array([1.0, 11.0, 12.0])
    sent = SentRecords(np.arange(3), np.zeros(3, np.int64), ev, ev)
    outs = OutputRecords.from_lists([13, 14], [[0], [1, 2]], keys=[0, 0], window_start=[0.0, 10.0])
    r = validate((sent, outs), TumblingWindowOracle(10.0))
    assert (r.expected, r.lost, r.incorrect, r.ignored) == (1, 0, 0, 2)


def test_side_output_duplicate_of_window_member():
    ev = np.array([1.0, 25.0, 3.0])
    sent = SentRecords(np.arange(3), np.zeros(3, np.int64), ev, np.arange(3.0))
    outs = OutputRecords.from_lists([30, 31], [[0, 2], [2]], keys=[0, np.nan], window_start=[0.0, np.nan],
                                    topic=["o", "late"])
    r = validate((sent, outs), TumblingWindowOracle(10.0, late_topic="late"))
    assert r.duplicates == 1 and r.duplicate_ids.tolist() == [2]


def test_windowed_synthetic_clean():
    tr = windowed_trace(duration=30)
    r = validate(tr, TumblingWindowOracle(5.0))
    assert r.guarantee_delivered == "exactly-once" and r.expected == r.processed_ok > 0


def test_id_index_fast_and_general_paths():
    assert IdIndex(np.arange(5) + 7).rows(np.array([7, 11, 12, 6])).tolist() == [0, 4, -1, -1]
    idx = IdIndex(np.array([50, 10, 30]))
    assert idx.rows(np.array([10, 30, 50, 20, 99])).tolist() == [1, 2, 0, -1, -1]
    with pytest.raises(ValueError, match="duplicate ids"):
        IdIndex(np.array([1, 5, 1]))


def test_bad_input_type():
    with pytest.raises(TypeError, match="Trace"):
        validate(42, IdentityOracle())


# ------------------------------------------------------------------------------------------------
# property test against a naive transcription of PGVal


def naive_pgval(expected: dict, outputs: list[tuple[object, list[int]]]) -> tuple[int, int, int]:
    """Algorithms 1 and 3 with Python sets: returns (lost, duplicates, incorrect)."""
    processed: dict[object, set] = {k: set() for k in expected}
    dup = inc = 0
    for label, ids in outputs:
        exp = expected.get(label, set())
        for i in ids:
            if i in exp:
                if i in processed[label]:
                    dup += 1
                else:
                    processed[label].add(i)
            else:
                inc += 1
    lost = sum(len(exp - processed[k]) for k, exp in expected.items())
    return lost, dup, inc


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 300),
    p_drop=st.floats(0, 0.4),
    p_dup=st.floats(0, 0.4),
    p_move=st.floats(0, 0.3),
    n_unknown=st.integers(0, 3),
)
def test_property_window_validation_matches_naive(seed, n, p_drop, p_dup, p_move, n_unknown):
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**9, size=n, replace=False).astype(np.int64)  # not a contiguous range
    keys = rng.integers(0, 3, n)
    ev = rng.uniform(0, 50, n)
    sent = SentRecords(ids, keys, ev, rng.uniform(0, 50, n))
    size = 10.0
    final_wm = ev.max()
    win = np.floor(ev / size).astype(int)
    expected: dict = {}
    for i, k, w in zip(ids.tolist(), keys.tolist(), win.tolist(), strict=True):
        if (w + 1) * size <= final_wm:
            expected.setdefault((k, w), set()).add(i)
    labels = sorted(expected)
    outputs: list[tuple[object, list[int]]] = []
    for label in labels:
        out: list[int] = []
        for i in sorted(expected[label]):
            u = rng.random()
            if u < p_drop:
                continue
            if u < p_drop + p_move and len(labels) > 1:
                other = labels[rng.integers(len(labels))]
                outputs.append((other, [i]))
                continue
            out.append(i)
            if rng.random() < p_dup:
                out.append(i)  # double count inside one aggregate
        if rng.random() < 0.2 and out:
            outputs.append((label, out[:1]))  # the whole output re-emitted (partly)
        outputs.append((label, out))
    for _ in range(n_unknown if labels else 0):  # an id never sent, inside a finalized window
        outputs.append((labels[0], [int(10**9 + rng.integers(1000))]))
    rng.shuffle(outputs)
    recs = OutputRecords.from_lists(
        list(range(len(outputs))),
        [o[1] for o in outputs],
        keys=[o[0][0] for o in outputs],
        window_start=[o[0][1] * size for o in outputs],
    )
    r = validate((sent, recs), TumblingWindowOracle(size))
    lost, dup, inc = naive_pgval(expected, outputs)
    assert (r.lost, r.duplicates, r.incorrect) == (lost, dup, inc)
    assert r.expected == sum(len(v) for v in expected.values())
    assert r.processed_ok == r.expected - lost


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 200), p_drop=st.floats(0, 0.5), p_dup=st.floats(0, 0.5))
def test_property_custom_multi_membership_matches_naive(seed, n, p_drop, p_dup):
    """Overlapping expected outputs (sliding-window-like): each id belongs to two outputs."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64) * 3 + 5
    sent = SentRecords(ids, np.zeros(n, np.int64), np.zeros(n), np.zeros(n))
    expected = {g: set(ids[(ids // 10 == g) | (ids // 10 == g + 1)].tolist()) for g in range(int(ids.max()) // 10 + 1)}
    expected = {g: s for g, s in expected.items() if s}
    outputs = []
    for g, members in expected.items():
        out = [i for i in sorted(members) if rng.random() >= p_drop]
        out += [i for i in out if rng.random() < p_dup]
        outputs.append((g, out))
    recs = OutputRecords.from_lists(list(range(len(outputs))), [o[1] for o in outputs], keys=[o[0] for o in outputs])
    oracle = CustomOracle(lambda s: {g: sorted(m) for g, m in expected.items()}, lambda o: o.keys.tolist())
    r = validate((sent, recs), oracle)
    assert (r.lost, r.duplicates, r.incorrect) == naive_pgval(expected, outputs)
