"""Oracles on synthetic sent records with hand-computed expected outputs."""

import numpy as np
import pytest

from pytest_streamchaos.analysis.oracle import (
    IGNORE,
    SIDE,
    UNKNOWN,
    CustomOracle,
    IdentityOracle,
    TumblingWindowOracle,
)
from pytest_streamchaos.records import OutputRecords, SentRecords


def sent_of(event_ts, keys=None, send_ts=None, ids=None, poison=None):
    ev = np.asarray(event_ts, dtype=float)
    n = ev.size
    return SentRecords(
        np.arange(n, dtype=np.int64) + 100 if ids is None else np.asarray(ids, dtype=np.int64),
        np.zeros(n, dtype=np.int64) if keys is None else np.asarray(keys, dtype=np.int64),
        ev,
        ev.copy() if send_ts is None else np.asarray(send_ts, dtype=float),
        None if poison is None else np.asarray(poison, dtype=bool),
    )


def expected_sets(oracle, sent):
    exp = oracle.expected(sent)
    out = {}
    for r, g in zip(exp.rows.tolist(), exp.groups.tolist(), strict=True):
        out.setdefault(exp.label(g), set()).add(int(sent.ids[r]))
    return out


def test_identity_expects_every_kept_id_and_honours_filter_and_poison():
    sent = sent_of(np.arange(6.0), poison=[0, 0, 0, 0, 0, 1])
    oracle = IdentityOracle(filter=lambda s: s.ids % 2 == 0)
    assert expected_sets(oracle, sent) == {"main output": {101, 103}}
    # without dropping poison, 105 is expected too
    assert expected_sets(IdentityOracle(drop_poison=False), sent) == {"main output": set(range(100, 106))}


def test_identity_filter_shape_is_checked():
    sent = sent_of(np.arange(3.0))
    with pytest.raises(ValueError, match="vectorised"):
        IdentityOracle(filter=lambda s: True).expected(sent)


def test_identity_assign_topics():
    sent = sent_of(np.arange(3.0))
    outs = OutputRecords.from_lists([1, 2, 3], [[100], [101], [102]], topic=["out", "late", "other"])
    g = IdentityOracle(topic="out", side_topic="late").assign(outs, sent, None)
    assert g.tolist() == [0, SIDE, IGNORE]


def test_tumbling_windows_by_key_only_finalized():
    # windows of 10 s; max event time 31 -> with watermark 5, finalized windows end <= 26: [0,10), [10,20)
    ev = [1, 2, 11, 12, 15, 21, 25, 31]
    keys = [0, 1, 0, 0, 1, 0, 1, 0]
    sent = sent_of(ev, keys)
    oracle = TumblingWindowOracle(10.0, watermark_seconds=5.0)
    assert expected_sets(oracle, sent) == {
        "key 0 window [0.000, 10.000)": {100},
        "key 1 window [0.000, 10.000)": {101},
        "key 0 window [10.000, 20.000)": {102, 103},
        "key 1 window [10.000, 20.000)": {104},
    }
    # global windows
    g = expected_sets(TumblingWindowOracle(10.0, by_key=False, watermark_seconds=5.0), sent)
    assert g == {"window [0.000, 10.000)": {100, 101}, "window [10.000, 20.000)": {102, 103, 104}}


def test_tumbling_assign_finalized_unfinalized_unknown_side():
    sent = sent_of([1, 11, 21, 31], [0, 0, 0, 0])
    oracle = TumblingWindowOracle(10.0, watermark_seconds=5.0, late_topic="late")
    exp = oracle.expected(sent)
    outs = OutputRecords.from_lists(
        [40, 41, 42, 43, 44, 45],
        [[100], [101], [102], [103], [100], [100]],
        keys=[0, 0, 0, 7, np.nan, 0],
        window_start=[0.0, 10.0, 20.0, 0.0, np.nan, 3.0],
        topic=["o", "o", "o", "o", "late", "o"],
    )
    g = oracle.assign(outs, sent, exp)
    assert g[0] == exp.groups[exp.rows == 0][0]
    assert g[1] == exp.groups[exp.rows == 1][0]
    assert g[2] == IGNORE  # [20, 30) ends after 31 - 5 = 26: not finalized
    assert g[3] == UNKNOWN  # key 7 never sent
    assert g[4] == SIDE
    assert g[5] == UNKNOWN  # not aligned to a window start


def test_late_events_in_send_order():
    # event 3 is sent after event 25 -> watermark 25 - 5 = 20 already passed window [0, 10)
    sent = sent_of([1, 25, 3, 31], [0, 0, 0, 0], send_ts=[0, 1, 2, 3])
    exp = TumblingWindowOracle(10.0, watermark_seconds=5.0).expected(sent)
    late = {int(sent.ids[r]) for r, flag in zip(exp.rows, exp.late, strict=True) if flag}
    assert late == {102}


def test_window_latency_reference_is_first_closing_input_of_same_key():
    # key 0 events at 1, 12 (sent at 20), key 1 at 11 (sent at 15); window [0, 10) of key 0 closes at 12's send
    sent = sent_of([1, 11, 12], [0, 1, 0], send_ts=[2, 15, 20])
    outs = OutputRecords.from_lists([21.5, 22.0], [[100], [100]], keys=[0, 0], window_start=[0.0, 50.0],
                                    window_end=[10.0, 60.0])
    oracle = TumblingWindowOracle(10.0)
    ref = oracle.reference_send_ts(sent, outs, np.array([0, 0]))
    assert ref[0] == 20.0
    assert np.isnan(ref[1])  # no input past 60 -> no reference
    any_key = TumblingWindowOracle(10.0, closer="any").reference_send_ts(sent, outs, np.array([0, 0]))
    assert any_key[0] == 15.0


def test_custom_oracle_groups_and_unknown_ids():
    sent = sent_of(np.arange(6.0))
    oracle = CustomOracle(
        lambda s: {"even": s.ids[s.ids % 2 == 0], "all": s.ids},
        lambda o: ["even" if k == 0 else ("all" if k == 1 else None) for k in o.keys],
    )
    sets = expected_sets(oracle, sent)
    assert sets == {"'even'": {100, 102, 104}, "'all'": set(range(100, 106))}
    outs = OutputRecords.from_lists([1, 2, 3], [[100], [101], [102]], keys=[0, 1, 2])
    assert oracle.assign(outs, sent, None).tolist() == [0, 1, IGNORE]
    bad = CustomOracle(lambda s: {"x": [999]}, lambda o: [None] * len(o))
    with pytest.raises(ValueError, match="never sent"):
        bad.expected(sent)
